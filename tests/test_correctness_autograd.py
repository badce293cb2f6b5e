"""Autograd correctness against PyTorch's documented behaviour (issue 20): only what a backward
reads is version-checked, in-place activations backprop, the leaf rule of ``requires_grad``,
dropout ranks, and gradients at the kinks (0 and 1) of the losses and activations. Expected
values were taken from PyTorch 2.13."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

VERSION_ERROR = "modified by an inplace operation"


def f64(*vals, rg=True):
    return ember.tensor(list(vals), dtype=ember.float64, requires_grad=rg)


def close(t, expected, atol=1e-6):
    np.testing.assert_allclose(np.asarray(t.detach().tolist(), dtype=float), expected, rtol=1e-6, atol=atol)


X = [-2., -0.3, 0., 0.05, 0.3, 2., 4.]
W = list(range(7))


# -- an in-place op on an output the backward does not read ---------------------------------

def test_batchnorm_then_inplace_relu_trains():
    m = nn.Sequential(nn.BatchNorm2d(3), nn.ReLU(inplace=True))
    x = ember.randn(2, 3, 4, 4, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.shape == (2, 3, 4, 4)


def test_layernorm_then_residual_add_inplace():
    m = nn.LayerNorm(4)
    x = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    y = m(x)
    y += x
    y.sum().backward()  # LayerNorm's input gradient of a sum is 0: only the identity's 1 is left
    close(x.grad, np.ones((2, 4)), atol=1e-9)


def test_batchnorm_training_residual_block():
    bn = nn.BatchNorm1d(3)
    x = ember.randn(4, 3, requires_grad=True)
    out = bn(x)
    out += x
    out.relu_()
    out.sum().backward()
    assert x.grad is not None


@pytest.mark.parametrize("make", [
    lambda x: x.sort(1)[0], lambda x: x.max(1)[0], lambda x: x.cummax(1)[0], lambda x: x.median(1)[0],
    lambda x: x.mode(1)[0], lambda x: F.max_pool1d(x.unsqueeze(0), 2), lambda x: F.dropout(x, 0.5),
])
def test_inplace_on_value_output_of_index_ops(make):
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = make(a * 1)
    y.add_(1)
    y.sum().backward()
    assert a.grad is not None


def test_sort_values_inplace_gradient_is_right():
    a = f64(3., 1., 2.)
    v, _ = a.sort()
    v.mul_(1)
    (v * f64(1., 10., 100., rg=False)).sum().backward()
    close(a.grad, [100., 1., 10.])


@pytest.mark.parametrize("make", [lambda x: x * 2, lambda x: x / 2, lambda x: 2 * x,
                                  lambda x: x * ember.ones(4, dtype=ember.float64),
                                  lambda x: F.linear(x, ember.eye(4, dtype=ember.float64)),
                                  lambda x: x @ ember.eye(4, dtype=ember.float64)])
def test_input_modified_after_op_that_does_not_read_it(make):
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    x = a * 1
    y = make(x)
    x.add_(1)
    y.sum().backward()
    assert a.grad is not None


@pytest.mark.parametrize("make", [lambda x, w: x * w, lambda x, w: F.linear(x, w), lambda x, w: x @ w,
                                  lambda x, w: w / x])
def test_input_read_by_backward_still_checked(make):
    a = ember.rand(4, 4, dtype=ember.float64, requires_grad=True)
    w = ember.rand(4, 4, dtype=ember.float64, requires_grad=True)
    x = a + 1
    y = make(x, w)
    x.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


@pytest.mark.parametrize("make", [lambda x: x.sigmoid(), lambda x: x.exp(), lambda x: F.softmax(x, 1)])
def test_output_read_by_backward_still_checked(make):
    y = make(ember.rand(4, 4, dtype=ember.float64, requires_grad=True) + 1)
    y.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


def test_logsumexp_output_inplace_is_checked_not_dropped():
    # the output used to be a view of an untracked tensor: the in-place op rebased it and the
    # gradient silently vanished; PyTorch raises (logsumexp's backward reads its result)
    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = (a * 1).logsumexp(1)
    y.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


def test_clone_setitem_then_scaled_column():
    a = ember.arange(12., dtype=ember.float64).reshape(3, 4).requires_grad_()
    b = ember.arange(4., dtype=ember.float64).requires_grad_()
    c = a.clone()
    c[1] = b
    c[:, 2] = c[:, 2] * 3
    c.sum().backward()
    close(a.grad, [[1, 1, 3, 1], [0, 0, 0, 0], [1, 1, 3, 1]])
    close(b.grad, [1, 1, 3, 1])


def test_clone_setitem_reciprocal_column():
    a = (ember.arange(12., dtype=ember.float64).reshape(3, 4) + 1).requires_grad_()
    c = a.clone()
    c[:, 2] = 1 / c[:, 2]
    c.sum().backward()
    close(a.grad[:, 2], [-1 / 9, -1 / 49, -1 / 121])


def test_column_scaled_by_tensor_that_needs_grad_raises():
    a = ember.ones(3, 4, requires_grad=True)
    w = ember.ones(3, requires_grad=True)
    c = a.clone()
    c[:, 2] = c[:, 2] * w  # mul saved the column for w's gradient, then it was overwritten
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        c.sum().backward()


# -- in-place activations ---------------------------------------------------------------------

INPLACE = {  # name: (fn, x.grad for sum(fn(x) * arange) from PyTorch 2.13)
    "leaky_relu": (lambda y: F.leaky_relu(y, 0.1, inplace=True), [0., .1, .2, 3., 4., 5., 6.]),
    "leaky_relu_": (lambda y: F.leaky_relu_(y, 0.1), [0., .1, .2, 3., 4., 5., 6.]),
    "LeakyReLU": (lambda y: nn.LeakyReLU(inplace=True)(y), [0., .01, .02, 3., 4., 5., 6.]),
    "elu": (lambda y: F.elu(y, 1.3, inplace=True), [0., 0.963064, 2.6, 3., 4., 5., 6.]),
    "elu_": (lambda y: F.elu_(y), [0., 0.740818, 2., 3., 4., 5., 6.]),
    "selu": (lambda y: F.selu(y, inplace=True), [0., 1.302432, 3.516199, 3.152103, 4.202804, 5.253505, 6.304206]),
    "celu": (lambda y: F.celu(y, 0.7, inplace=True), [0., 0.651439, 2., 3., 4., 5., 6.]),
    "rrelu_eval": (lambda y: F.rrelu(y, inplace=True), [0., 0.229167, 0.458333, 3., 4., 5., 6.]),
    "relu": (lambda y: F.relu(y, inplace=True), [0., 0., 0., 3., 4., 5., 6.]),
    "threshold": (lambda y: F.threshold(y, 0.1, 2.0, inplace=True), [0., 0., 0., 0., 4., 5., 6.]),
    "hardsigmoid": (lambda y: F.hardsigmoid(y, inplace=True), [0., .166667, .333333, .5, .666667, .833333, 0.]),
    "hardswish": (lambda y: F.hardswish(y, inplace=True), [0., 0.4, 1., 1.55, 2.4, 5.833333, 6.]),
    "silu": (lambda y: F.silu(y, inplace=True), [0., 0.35222, 1., 1.574969, 2.59112, 5.453921, 6.315988]),
    "mish": (lambda y: F.mish(y, inplace=True), [0., 0.408511, 1.2, 1.895571, 3.131309, 5.34659, 6.026597]),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_activation_backward(name):
    fn, expected = INPLACE[name]
    x = f64(*X)
    y = x * 1
    z = fn(y)
    assert z is y
    (z * ember.tensor(W, dtype=ember.float64)).sum().backward()
    close(x.grad, expected, atol=1e-5)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_activation_after_op_saving_its_output_raises(name):
    # PyTorch raises too: sigmoid's backward reads the output the activation overwrote
    fn, _ = INPLACE[name]
    y = f64(*X).sigmoid()
    fn(y)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        y.sum().backward()


def test_inplace_activation_on_leaf_refused():
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.silu(f64(1., 2.), inplace=True)


def test_inplace_activation_without_grad_writes_input():
    x = ember.tensor([-1., 0., 2.])
    F.leaky_relu(x, 0.5, inplace=True)
    close(x, [-0.5, 0., 2.])
    x = ember.tensor([-1., 0., 2.])
    F.silu(x, inplace=True)
    close(x, [-1 / (1 + math.e), 0., 2 / (1 + math.exp(-2))])


def test_leaky_relu_gradient_at_zero_is_the_slope():
    x = f64(0., -1., 2.)
    F.leaky_relu(x, 0.1).sum().backward()
    close(x.grad, [0.1, 0.1, 1.])


# -- requires_grad on non-leaves --------------------------------------------------------------

def test_requires_grad_true_on_non_leaf_raises():
    b = f64(1., 2.) + 1
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf variables\.$"):
        b.requires_grad = True


def test_requires_grad_false_on_non_leaf_raises():
    b = f64(1., 2.) + 1
    with pytest.raises(RuntimeError, match="If you want to use a computed variable"):
        b.requires_grad = False
    with pytest.raises(RuntimeError, match="If you want to use a computed variable"):
        b.requires_grad_(False)


def test_requires_grad_method_true_on_non_leaf_is_a_no_op():
    b = f64(1., 2.) + 1
    assert b.requires_grad_() is b
    assert b.requires_grad and not b.is_leaf


def test_requires_grad_on_leaf_without_history():
    c = ember.randn(3) * 2
    c.requires_grad = True
    assert c.is_leaf and c.requires_grad


# -- dropout ranks ----------------------------------------------------------------------------

def test_dropout2d_on_2d_input_warns_and_applies():
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = nn.Dropout2d()(ember.ones(3, 4))
    assert y.shape == (3, 4)
    assert set(np.unique(y.numpy()).tolist()) <= {0.0, 2.0}


def test_dropout2d_3d_input_is_read_as_n_c_l():
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout"):
        y = F.dropout2d(ember.ones(4, 5, 6), 0.5)
    v = y.numpy()
    assert (v == v[:, :, :1]).all()  # one draw per (dim 0, dim 1)


def test_dropout3d_unbatched_draws_per_channel():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.dropout3d(ember.ones(4, 2, 3, 3), 0.5)
    v = y.numpy().reshape(4, -1)
    assert (v == v[:, :1]).all()
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(ember.ones(3, 4), 0.5)


def test_dropout1d_rank_error_and_feature_dropout_minimum():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ember.ones(2, 2, 2, 2))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dim"):
        F.dropout2d(ember.ones(3), 0.5)
    with pytest.warns(UserWarning):
        close(F.dropout2d(ember.ones(3), 0.5, training=False), [1., 1., 1.])


# -- gradients at 0 and 1 ---------------------------------------------------------------------

def test_bce_with_logits_gradient_at_zero():
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    F.binary_cross_entropy_with_logits(x, ember.tensor([0., 1., .5], dtype=ember.float64)).backward()
    close(x.grad, [1 / 6, -1 / 6, 0.])


def test_bce_with_logits_module_pos_weight_at_zero():
    x = ember.tensor([0., 0., 3., -3.], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0., 1., .5, .2], dtype=ember.float64)
    loss = nn.BCEWithLogitsLoss(pos_weight=ember.tensor([2., 3., 1.5, .5], dtype=ember.float64),
                                weight=ember.tensor([1., 2., 3., 4.], dtype=ember.float64))(x, t)
    loss.backward()
    lw = np.array([1., 3., 1.25, 0.9])
    sig = 1 / (1 + np.exp(-np.array([0., 0., 3., -3.])))
    tt = np.array([0., 1., .5, .2])
    expected = np.array([1., 2., 3., 4.]) * ((lw * sig - lw) + (1 - tt)) / 4  # d/dx [(1-t)x + lw softplus(-x)]
    close(x.grad, expected)


def test_logsigmoid_gradient_at_zero():
    x = ember.tensor([0., -0., -5., 5., -800., 800.], dtype=ember.float64, requires_grad=True)
    y = F.logsigmoid(x)
    y.sum().backward()
    close(y, [-math.log(2), -math.log(2), -5.006715348489118, -0.006715348489118, -800., 0.])
    close(x.grad, [0.5, 0.5, 0.9933071490757153, 0.0066928509242848554, 1., 0.])


def test_soft_margin_loss_gradient_at_zero():
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    F.soft_margin_loss(x, ember.tensor([1., -1., 1.], dtype=ember.float64)).backward()
    close(x.grad, [-1 / 6, 1 / 6, -1 / 6])


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_bce_at_zero_and_one_is_finite(dtype):
    x = ember.tensor([0., 1., 0.5], dtype=dtype, requires_grad=True)
    loss = F.binary_cross_entropy(x, ember.tensor([1., 0., 1.], dtype=dtype))
    loss.backward()
    close(loss.reshape(1), [(100 + 100 + math.log(2)) / 3], atol=1e-4)
    np.testing.assert_allclose(x.grad.tolist(), [-1e12 / 3, 1e12 / 3, -2 / 3], rtol=1e-5)
    x = ember.tensor([0., 1.], dtype=dtype, requires_grad=True)
    nn.BCELoss()(x, ember.tensor([0., 1.], dtype=dtype)).backward()
    close(x.grad, [0., 0.])


def test_bce_weight_and_target_gradient():
    x = ember.tensor([0.5, 1e-8, 0.25], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0.3, 0.2, 1.], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([3., 4., 6.], dtype=ember.float64)
    F.binary_cross_entropy(x, t, w, reduction="sum").backward()
    close(x.grad, [2.4, -8e7, -24.], atol=1e-3)
    close(t.grad, [0., 73.68272297580946, 6.591673732008658], atol=1e-6)


def test_bce_double_backward():
    x = ember.tensor([0.3, 0.9], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([1., 0.], dtype=ember.float64)
    g, = ember.autograd.grad(F.binary_cross_entropy(x, t, reduction="sum"), x, create_graph=True)
    close(g, [-1 / 0.3, 10.])
    close(ember.autograd.grad(g.sum(), x)[0], [1 / 0.09, 100.], atol=1e-6)


# -- conv_transpose backward ------------------------------------------------------------------

@pytest.mark.parametrize("nd,stride,dilation,output_padding,groups", [
    (1, 1, 2, 1, 1), (1, 1, 3, 2, 2), (2, 1, (2, 3), (1, 2), 1), (2, 2, 3, 2, 2), (3, 1, 2, 1, 1),
])
def test_conv_transpose_backward_with_output_padding_and_dilation(nd, stride, dilation, output_padding, groups):
    fn = getattr(F, f"conv_transpose{nd}d")
    x = ember.randn(*(1, 2 * groups) + (3,) * nd, dtype=ember.float64, requires_grad=True)
    w = ember.randn(*(2 * groups, 2) + (2,) * nd, dtype=ember.float64, requires_grad=True)
    f = lambda x, w: fn(x, w, None, stride, 0, output_padding, groups, dilation)  # noqa: E731
    assert ember.autograd.gradcheck(f, (x, w))


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 6.0)])
def test_hardtanh_passes_gradient_only_strictly_inside_its_bounds(bounds, inplace):
    lo, hi = bounds
    x = ember.tensor([-2.0, lo, (lo + hi) / 2, hi, 7.0, float("nan")], dtype=ember.float64, requires_grad=True)
    y = F.hardtanh(x * 1, lo, hi, inplace)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert y[:5].tolist() == [lo, lo, (lo + hi) / 2, hi, hi] and math.isnan(y[5].item())
