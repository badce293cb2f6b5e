"""Regression tests for the nn.functional mismatches the PyTorch oracle found (issue 20): each
asserts PyTorch 2.13's value or exception directly."""
import math
import warnings

import pytest

import ember
import ember.nn.functional as F

nan, inf = math.nan, math.inf


def _same(a, b):
    """Lists equal, NaN equal to NaN."""
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        assert (math.isnan(x) and math.isnan(y)) or x == y, (a, b)


# -- pooling ------------------------------------------------------------------------------------

def test_lp_pool_checks_the_output_and_3d_input_size():
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.lp_pool1d(ember.zeros(0, 1, 1), 1.0, 2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.lp_pool2d(ember.zeros(0, 1, 1, 1), 1.0, 2)
    with pytest.raises(RuntimeError):
        F.lp_pool3d(ember.zeros(1, 1, 1, 4, 5), 1.0, 3, stride=1)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):  # whatever the padding
        F.avg_pool3d(ember.zeros(1, 1, 1, 3, 3), 2, padding=1)


def test_lp_pool_gradient_at_zero_is_zero():
    x = ember.zeros(1, 1, 3, dtype=ember.float64, requires_grad=True)
    F.lp_pool1d(x, 2.0, 1).sum().backward()
    assert x.grad.tolist() == [[[0.0, 0.0, 0.0]]]


def test_sign_and_relu_gradients_keep_inf_out():
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    (ember.sign(x) * ember.relu(x)).pow(0.5).sum().backward()  # pow's gradient at 0 is inf
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_max_pool_indices_follow_pytorchs_loop():
    # a window all of padding: -inf at the window's first position at or past the start
    v, i = F.max_pool1d(ember.zeros(1, 1, 1), 2, padding=1, dilation=2, return_indices=True)
    assert v.tolist() == [[[-inf]]] and i.tolist() == [[[1]]]
    v, i = F.max_pool3d(ember.zeros(1, 1, 1, 1, 1), 2, padding=1, dilation=2, return_indices=True)
    assert i.flatten().tolist() == [3]
    # NaN: the last one wins; ties: the first in the image (not the padding)
    _, i = F.max_pool1d(ember.tensor([[[nan, nan, 1.0, nan]]]), 4, return_indices=True)
    assert i.tolist() == [[[3]]]
    v, i = F.max_pool1d(ember.tensor([[[-inf, -inf, 1.0]]]), 3, stride=1, padding=1, return_indices=True)
    assert v.tolist() == [[[-inf, 1.0, 1.0]]] and i.tolist() == [[[0, 2, 2]]]
    with pytest.raises(RuntimeError, match="pad should be at most half"):  # of the kernel, not the dilated one
        F.max_pool1d(ember.zeros(1, 1, 4), 3, 1, 2, 2)


def test_adaptive_max_pool_takes_the_last_nan():
    v, i = F.adaptive_max_pool1d(ember.tensor([[[0.0, 0.0], [nan, nan]]]), 1, return_indices=True)
    assert i.tolist() == [[[0], [1]]]


# -- linear layers, attention, convolutions -----------------------------------------------------

def test_linear_and_bilinear_zero_sizes():
    x = ember.zeros(2, 1, 0, dtype=ember.float64, requires_grad=True)
    w = ember.zeros(0, 0, dtype=ember.float64, requires_grad=True)
    F.linear(x, w).sum().backward()
    assert tuple(x.grad.shape) == (2, 1, 0) and tuple(w.grad.shape) == (0, 0)
    assert tuple(F.bilinear(ember.zeros(1), ember.zeros(1), ember.zeros(0, 1, 1)).shape) == (0,)
    with pytest.raises(RuntimeError):
        F.bilinear(ember.zeros(2, 1), ember.zeros(2, 0), ember.zeros(3, 1, 0))


def test_linear_with_a_1d_weight_and_a_bias_needs_a_matrix():
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        F.linear(ember.zeros(2, 1), ember.zeros(1), ember.tensor(0.0))
    assert tuple(F.linear(ember.zeros(3, 2, 1), ember.zeros(1), ember.tensor(0.0)).shape) == (3, 2)


def test_sdpa_empty_and_zero_head_dim():
    q = ember.zeros(0, 0, 1)
    assert tuple(F.scaled_dot_product_attention(q, q, q, is_causal=True).shape) == (0, 0, 1)
    q = ember.zeros(2, 1, 0)
    assert tuple(F.scaled_dot_product_attention(q, q, q).shape) == (2, 1, 0)


def test_conv_transpose_empty_batch_skips_the_output_size_check():
    out = F.conv_transpose2d(ember.zeros(0, 1, 2, 2), ember.zeros(1, 1, 1, 1), padding=1)
    assert tuple(out.shape) == (0, 1, 0, 0)


def test_fold_refuses_empty_non_batch_dims():
    with pytest.raises(RuntimeError, match="non-zero dimensions"):
        F.fold(ember.zeros(0, 4, 0), (1, 1), kernel_size=2)


# -- normalisation ------------------------------------------------------------------------------

def test_norms_refuse_running_stats_that_require_grad():
    x = ember.zeros(2, 1, dtype=ember.float64, requires_grad=True)
    rm = ember.zeros(1, dtype=ember.float64, requires_grad=True)
    rv = ember.ones(1, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'running_mean'"):
        F.batch_norm(x, rm, rv, training=False)
    with pytest.raises(RuntimeError, match="not differentiable"):
        F.instance_norm(x.reshape(1, 1, 2), rm, rv)
    with ember.no_grad():
        F.batch_norm(x, rm, rv, training=False)
    F.batch_norm(ember.zeros(0, 1, dtype=ember.float64, requires_grad=True), rm, rv)  # empty input: no check


def test_instance_norm_and_group_norm_sizes():
    out = F.instance_norm(ember.tensor([[0.0]]), ember.zeros(1), ember.ones(1), use_input_stats=False)
    assert out.tolist() == [[0.0]]
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(ember.zeros(2, 3), use_input_stats=True)
    rm = ember.zeros(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuple(F.instance_norm(ember.zeros(1, 1, 0), rm, ember.ones(1)).shape) == (1, 1, 0)
        assert rm.tolist() == [0.0]
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.group_norm(ember.zeros(1, 2), 2)
    assert tuple(F.group_norm(ember.zeros(1, 2), 1).shape) == (1, 2)


def test_mean_of_nothing_is_a_quiet_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(ember.zeros(0, 2).mean().item())
        assert tuple(ember.zeros(0, 2).mean(1).shape) == (0,)


# -- lookups, distances, dropout ----------------------------------------------------------------

def test_embedding_zero_width_and_empty_lookups():
    w = ember.zeros(1, 0, dtype=ember.float64, requires_grad=True)
    F.embedding(ember.zeros(0, dtype=ember.int64), w, max_norm=1.0).sum().backward()
    assert tuple(w.grad.shape) == (1, 0)
    F.embedding(ember.zeros(0, dtype=ember.int64), ember.zeros(1, 0).expand(2, 0), max_norm=1.0)
    with pytest.raises(RuntimeError):
        F.embedding(ember.tensor([1]), ember.zeros(1, 0))


def test_embedding_bag_max_as_pytorchs_loop():
    W = ember.tensor([[nan, 1.0, -inf], [2.0, nan, -inf], [2.0, 0.0, -inf]], dtype=ember.float64,
                     requires_grad=True)
    out = F.embedding_bag(ember.tensor([1, 0, 2]), W, ember.tensor([0]), mode="max")
    _same(out.flatten().tolist(), [2.0, nan, -inf])  # a NaN counts only in first place; ties: the first
    out.sum().backward()
    assert W.grad.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    empty = F.embedding_bag(ember.zeros(0, dtype=ember.int64), W, ember.tensor([0]), mode="max")
    assert empty.tolist() == [[0.0, 0.0, 0.0]]


def test_pdist_edge_cases():
    x = ember.zeros(1, 0, dtype=ember.float64, requires_grad=True)
    assert F.pdist(x, p=1.0).requires_grad
    _same(F.pdist(ember.tensor([[0.0, 0.0], [0.0, nan]]), p=0).tolist(), [nan])
    x = ember.tensor([[0.0, 1.0, 2.0], [0.0, 3.0, 1.0]], dtype=ember.float64, requires_grad=True)
    F.pdist(x, p=0.5).sum().backward()  # no NaN from the equal first column
    assert not any(math.isnan(v) for v in x.grad.flatten().tolist())
    x = ember.tensor([[0.0, 2.0], [2.0, 0.0]], dtype=ember.float64, requires_grad=True)
    F.pdist(x, p=inf).sum().backward()  # both elements reach the max: each gets the whole gradient
    assert x.grad.tolist() == [[-1.0, 1.0], [1.0, -1.0]]


def test_feature_dropout_sizes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the rank warning)
        assert tuple(F.dropout2d(ember.zeros(0), p=0.5, training=True).shape) == (0,)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(ember.zeros(3), p=0.5, training=True)


# -- vision -------------------------------------------------------------------------------------

def test_interpolate_linear_weights_as_pytorchs_float32_kernel():
    x = ember.tensor([[[inf]]])
    _same(F.interpolate(x, scale_factor=1.5, mode="linear").flatten().tolist(), [nan])
    _same(F.interpolate(x, scale_factor=3.0, mode="linear").flatten().tolist(), [nan, inf, inf])
    _same(F.interpolate(ember.tensor([[[1.0, inf, 2.0]]]), size=3, mode="linear").flatten().tolist(),
          [1.0, nan, 2.0])
    _same(F.upsample_bilinear(ember.tensor([[[[inf]]]]), scale_factor=1.5).flatten().tolist(), [nan])


def test_grid_sample_leaves_taps_outside_the_image_out():
    x = ember.zeros(1, 1, 3, 4)
    x[0, 0, 2, 3] = inf
    assert F.grid_sample(x, ember.tensor([[[[1.0, 1.0]]]]), align_corners=False).item() == inf


def test_pad_refuses_too_few_dims_as_not_implemented():
    with pytest.raises(NotImplementedError):
        F.pad(ember.zeros(2), (1, 1), mode="reflect")
