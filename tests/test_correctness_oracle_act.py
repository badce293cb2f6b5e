"""Activations, softmax-family and losses as PyTorch 2.13 gives them: the cases the PyTorch-oracle
tier found (issue 20). In-place forms refuse a view of a leaf that requires grad and accept an
empty expanded tensor; gradients at the kinks (prelu at 0, hardswish/hardsigmoid at +-3, logit at
0 and 1, margin hinges at 0); the losses' refusals. Expected values were read off PyTorch."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

INF, NAN = math.inf, math.nan

_INPLACE = {
    "threshold_": lambda x: F.threshold_(x, 0.0, 0.0), "selu_": F.selu_, "relu_": F.relu_,
    "leaky_relu_": F.leaky_relu_, "celu_": F.celu_, "hardtanh_": F.hardtanh_, "elu_": F.elu_,
    "add_": lambda x: x.add_(1), "copy_": lambda x: x.copy_(ember.ones(x.shape, dtype=x.dtype)),
    "fill_": lambda x: x.fill_(1), "relu(inplace)": lambda x: F.relu(x, inplace=True),
    "hardswish(inplace)": lambda x: F.hardswish(x, inplace=True),
}
_VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation"


def _grad(f, values, w=None):
    x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    y = f(x)
    y.backward(ember.ones(y.shape, dtype=y.dtype) if w is None else ember.tensor(w, dtype=ember.float64))
    return x.grad.tolist()


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def _close(a, b):  # PyTorch's hardsigmoid gradient is 1/6 in float32
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-7)


# -- in-place forms -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(_INPLACE))
@pytest.mark.parametrize("make", [
    lambda: ember.tensor([0.5], dtype=ember.float64).reshape(()).requires_grad_(),   # a leaf view
    lambda: ember.tensor([[0.5, 1.0]], dtype=ember.float64).reshape(2, 1).requires_grad_().t(),  # its view
    lambda: ember.tensor([], dtype=ember.float64).reshape(0, 2).requires_grad_().t(),
    lambda: ember.zeros(3, requires_grad=True).detach()[1:].requires_grad_(),
    lambda: ember.zeros(1, dtype=ember.float64).expand(3).requires_grad_(),
], ids=["reshape", "view-of-view", "empty", "detached-slice", "expanded"])
def test_inplace_on_a_view_of_a_leaf_raises(name, make):
    with pytest.raises(RuntimeError, match=_VIEW_OF_LEAF):
        _INPLACE[name](make())


@pytest.mark.parametrize("name", list(_INPLACE))
def test_inplace_on_an_empty_expanded_tensor_is_accepted(name):
    x = ember.zeros(1, 0, dtype=ember.float16).expand(2, 0)
    assert _INPLACE[name](x).shape == (2, 0)


@pytest.mark.parametrize("name", ["selu_", "relu_", "leaky_relu_", "celu_", "hardtanh_", "elu_", "add_", "copy_"])
def test_inplace_on_an_expanded_tensor_raises(name):
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        _INPLACE[name](ember.tensor([0.5]).expand(2))


def test_threshold_inplace_writes_an_expanded_tensor():
    # PyTorch's threshold_ accepts it: every alias of an element gets the same value
    x = ember.tensor([[0.5, 2.0]]).expand(3, 2)
    assert F.threshold_(x, 1.0, 7.0) is x
    _same(x.numpy(), [[7.0, 2.0]] * 3)


def test_inplace_on_a_leaf_and_on_views_of_non_leaves():
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        F.relu_(ember.zeros(3).detach().requires_grad_())
    y = ember.zeros(3, requires_grad=True) * 2
    F.relu_(y[1:])  # a view of a non-leaf: recorded
    assert y.grad_fn is not None
    buf = ember.zeros(3)
    buf[1:].add_(ember.ones(2, requires_grad=True))  # writing a tracked value into a plain buffer
    assert buf.requires_grad


# -- activations ----------------------------------------------------------------------------------

def test_prelu_value_and_gradients_at_zero_and_infinite_slopes():
    x = ember.tensor([-1.0, 0.0, -0.0, 2.0], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([INF], dtype=ember.float64, requires_grad=True)
    y = F.prelu(x, w)
    _same(y.tolist(), [-INF, NAN, NAN, 2.0])  # 0 * inf, as PyTorch's "x > 0 ? x : w * x"
    y.sum().backward()
    _same(x.grad.tolist(), [INF, INF, INF, 1.0])  # no 0 * inf from the unused branch
    x = ember.tensor(0.0, dtype=ember.float64, requires_grad=True)
    w = ember.tensor([0.25], dtype=ember.float64, requires_grad=True)
    F.prelu(x, w).backward()
    assert x.grad.item() == 0.25 and w.grad.tolist() == [0.0]
    assert math.isnan(F.prelu(ember.tensor(0.0, dtype=ember.float16), ember.tensor([INF], dtype=ember.float16)).item())


_KINKS = [-INF, -4.0, -3.0, -2.5, 0.0, 2.5, 3.0, 4.0, INF]


def test_hardswish_gradient_at_the_kinks():
    _close(_grad(F.hardswish, _KINKS), [0.0, 0.0, 0.0, -1 / 3, 0.5, 4 / 3, 1.0, 1.0, 1.0])
    _same(_grad(F.hardswish, [NAN]), [1.0])
    _same(F.hardswish(ember.tensor([-INF, -3.0, INF, NAN])).tolist(), [NAN, -0.0, INF, NAN])


def test_hardsigmoid_gradient_only_strictly_inside():
    _close(_grad(F.hardsigmoid, _KINKS + [NAN]), [0.0, 0.0, 0.0, 1 / 6, 1 / 6, 1 / 6, 0.0, 0.0, 0.0, 0.0])
    _same(F.hardsigmoid(ember.tensor([-INF, INF, NAN])).tolist(), [0.0, 1.0, NAN])


def test_logit_gradient():
    g = [-2.0, 3.0, -1.0, 1.0, 0.0, 1.0, 1.0]
    xs = [-0.0, 0.0, 1.0, 0.5, 1.0, -0.5, 2.0]
    _same(_grad(ember.logit, xs, g), [-INF, INF, -INF, 4.0, NAN, NAN, NAN])
    _same(_grad(lambda x: ember.logit(x, 0.0), xs, g), [-INF, INF, -INF, 4.0, NAN, 0.0, 0.0])
    np.testing.assert_allclose(_grad(lambda x: ember.logit(x, 0.1), [0.0, 0.1, 0.9, 1.0, 0.5]),
                               [0.0, 100 / 9, 100 / 9, 0.0, 4.0], rtol=1e-12)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.tensor([0, 1]).logit_()


# -- softmax, log_softmax, logsumexp ------------------------------------------------------------------

@pytest.mark.parametrize("fn", [ember.softmax, ember.log_softmax, F.softmax, F.log_softmax])
def test_softmax_of_an_empty_integer_tensor_is_its_copy(fn):
    for x in (ember.zeros(0, dtype=ember.uint8), ember.zeros(2, 0, dtype=ember.int32)):
        r = fn(x, 0)
        assert r.dtype == x.dtype and r.shape == x.shape
    with pytest.raises(NotImplementedError):
        fn(ember.tensor([1]), 0)
    with pytest.raises(IndexError):
        fn(ember.zeros(0, dtype=ember.int64), 3)


def test_logsumexp_of_no_dims_reduces_every_dim():
    # a deliberate difference: PyTorch raises "output with shape [] doesn't match the broadcast
    # shape [1]" for a non-empty input unless keepdim=True
    assert ember.logsumexp(ember.tensor([[0.0, 0.0]]), dim=()).item() == pytest.approx(math.log(2.0))
    assert ember.logsumexp(ember.tensor([[1.0, 2.0]]), dim=(), keepdim=True).shape == (1, 1)
    assert ember.logsumexp(ember.tensor(1.0), dim=()).item() == 1.0
    assert ember.logsumexp(ember.zeros(2, 0), dim=()).item() == -INF


# -- losses -------------------------------------------------------------------------------------

def _rg(values):
    return ember.tensor(values, dtype=ember.float64, requires_grad=True)


@pytest.mark.parametrize("call,fn,arg", [
    (lambda: F.soft_margin_loss(_rg([0.5]), _rg([1.0])), "soft_margin_loss", "target"),
    (lambda: F.nll_loss(_rg([[0.5, 0.2]]), ember.tensor([0]), weight=_rg([1.0, 2.0])), "nll_loss_forward", "weight"),
    (lambda: F.cross_entropy(_rg([[0.5, 0.2]]), ember.tensor([0]), weight=_rg([1.0, 2.0])), "nll_loss_forward",
     "weight"),
    (lambda: F.binary_cross_entropy(_rg([0.5]), ember.tensor([1.0], dtype=ember.float64), weight=_rg([2.0])),
     "binary_cross_entropy", "weight"),
    (lambda: F.multi_margin_loss(_rg([[0.5, 0.1]]), ember.tensor([0]), weight=_rg([1.0, 2.0])), "multi_margin_loss",
     "weight"),
])
def test_losses_refuse_a_non_differentiable_argument_that_requires_grad(call, fn, arg):
    with pytest.raises(RuntimeError, match=f"The function '{fn}' is not differentiable with respect to argument "
                                           f"'{arg}'"):
        call()
    with ember.no_grad():
        call()


def test_binary_cross_entropy_refuses_nan_and_targets_outside_0_1():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([NAN]), ember.tensor([0.0]))
    for t in (2.0, -0.5, NAN):
        with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
            F.binary_cross_entropy(ember.tensor([0.5]), ember.tensor([t]))
    assert F.binary_cross_entropy(_rg([0.5]), _rg([1.0])).requires_grad  # the target has a gradient


def test_cross_entropy_ignore_index_with_probability_targets():
    x, p = ember.tensor([[0.5, 0.2]]), ember.tensor([[0.3, 0.7]])
    for ii in (0, 3):
        with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
            F.cross_entropy(x, p, ignore_index=ii)
    a, b = F.cross_entropy(x, p, ignore_index=-5), F.cross_entropy(x, p)
    assert a.item() == b.item()


def test_nll_and_cross_entropy_skip_ignored_targets():
    # an ignored target's log-probability is NaN here (inf logits): it adds nothing
    x = ember.tensor([[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, INF]]],
                     dtype=ember.float16)
    t = ember.zeros(3, 2, dtype=ember.int64)
    assert F.cross_entropy(x, t, reduction="sum", ignore_index=0).item() == 0.0
    lp = ember.tensor([[-INF, 0.0], [NAN, 0.0], [-1.0, -2.0]])
    _same(F.nll_loss(lp, ember.tensor([0, 0, 1]), ignore_index=0, reduction="none").tolist(), [0.0, 0.0, 2.0])
    assert F.nll_loss(lp, ember.tensor([0, 0, 1]), ignore_index=0).item() == 2.0


def test_margin_losses_pass_no_gradient_at_a_zero_hinge():
    x = _rg([[1.0, 0.0]])
    F.multilabel_margin_loss(x, ember.tensor([[0, 0]])).backward()
    assert x.grad.tolist() == [[0.0, 0.0]]
    x = _rg([[1.0, 0.0, 0.5]])
    F.multi_margin_loss(x, ember.tensor([0])).backward()  # z = 1 - 1 + 0 = 0 for class 1
    _same(x.grad.tolist(), [[-1 / 3, 0.0, 1 / 3]])


def test_soft_margin_loss_output_has_the_input_shape():
    with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the broadcast shape \[1\]"):
        F.soft_margin_loss(ember.tensor(0.0), ember.tensor([-1.0]))
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 1\] doesn't match the broadcast shape \[2, 2\]"):
        F.soft_margin_loss(ember.zeros(2, 1), ember.ones(1, 2))
    assert F.soft_margin_loss(ember.zeros(2), ember.ones(1), reduction="none").shape == (2,)


def test_multilabel_soft_margin_loss_needs_a_class_dim():
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        F.multilabel_soft_margin_loss(ember.tensor(0.0), ember.tensor(0.0))
    assert F.multilabel_soft_margin_loss(ember.tensor([0.5, 0.2]), ember.tensor([1.0, 0.0])).item() == \
        pytest.approx(0.6361079267808493)


def test_multilabel_margin_loss_sums_the_hinge_in_pytorchs_order():
    # 1 - x_target + x_j: (1 - 1) + 7.7e-150 > 0 passes a gradient, 1 - (1 - 7.7e-150) == 0 would not
    x = _rg([[1.0, 0.0, 7.736832159408033e-150]])
    F.multilabel_margin_loss(x, ember.tensor([[0, 0, 0]])).backward()  # target 0 listed three times
    _same(x.grad.tolist(), [[-1.0, 0.0, 1.0]])


def test_nll_loss_mean_of_only_ignored_targets_has_a_zero_gradient():
    x = _rg([[0.0], [1.0]])
    loss = F.nll_loss(x, ember.tensor([0, 0]), ignore_index=0)
    assert math.isnan(loss.item())
    loss.backward()
    assert x.grad.tolist() == [[0.0], [0.0]]


def test_margin_losses_skip_the_target_classes_even_when_infinite():
    # the skipped terms (j == y, j a target) are inf - inf: they add nothing, as PyTorch's
    assert F.multi_margin_loss(ember.tensor([[INF]]), ember.tensor([0])).item() == 0.0
    assert F.multilabel_margin_loss(ember.tensor([[INF]]), ember.tensor([[0]])).item() == 0.0
    assert F.multi_margin_loss(ember.tensor([[INF, 0.0]]), ember.tensor([0]), weight=ember.tensor([INF, 1.0])).item() \
        == 0.0
