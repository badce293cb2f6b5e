"""Elementwise ops and reductions against PyTorch 2.13's results, found by the PyTorch oracle
(tests/torch_oracle): integer division of empty tensors, the gradients of div with a rounding
mode, floor_divide and clamp with tensor bounds, and the exceptions of clamp_min/clamp_max."""
import math

import numpy as np
import pytest

import ember

nan, inf = math.nan, math.inf


def _leaf(v):
    return ember.tensor(v, dtype=ember.float64, requires_grad=True)


def _same(got, want):
    np.testing.assert_array_equal(np.array(got, dtype=float), np.array(want, dtype=float))


# -- integer division by zero -------------------------------------------------------------------

@pytest.mark.parametrize("f", [
    lambda a, b: ember.div(a, b, rounding_mode="trunc"),
    lambda a, b: ember.div(a, b, rounding_mode="floor"),
    ember.floor_divide, ember.remainder, ember.fmod,
])
def test_integer_division_by_zero_raises_only_where_something_is_divided(f):
    empty = ember.tensor([], dtype=ember.uint8)
    assert f(empty, ember.tensor(0, dtype=ember.uint8)).shape == (0,)
    assert f(empty, 0).dtype is ember.uint8
    assert f(ember.zeros((0, 3), dtype=ember.int64), ember.zeros(3, dtype=ember.int64)).shape == (0, 3)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(ember.tensor([1, 0], dtype=ember.uint8), 0)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_of_bools_with_a_rounding_mode_is_not_implemented(mode):
    with pytest.raises(NotImplementedError, match=f"div_{mode}_cpu"):
        ember.div(ember.tensor([True]), ember.tensor(False), rounding_mode=mode)


# -- gradients of rounded division --------------------------------------------------------------

@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_with_a_rounding_mode_has_zero_gradients(mode):
    a, b = _leaf([1.5, -2.0, 3.0]), _leaf(0.0)
    out = ember.div(a, b, rounding_mode=mode)
    assert out.requires_grad
    out.sum().backward()
    _same(a.grad.tolist(), [0.0, 0.0, 0.0])
    _same(b.grad.tolist(), 0.0)          # PyTorch: grad * 0, not the NaN of -g * a / b**2
    assert math.copysign(1.0, ember.div(ember.tensor(-0.5), 1.0, rounding_mode="trunc").item()) == -1.0


def test_floor_divide_records_a_backward_that_raises():
    x = _leaf([1.5, 2.0])
    out = ember.floor_divide(x, 2)
    assert out.requires_grad
    _same(out.tolist(), [0.0, 1.0])
    with pytest.raises(RuntimeError, match="floor_divide"):
        out.sum().backward()


# -- clamp --------------------------------------------------------------------------------------

@pytest.mark.parametrize("f, x, bound, gx, gb", [
    (ember.clamp_max, 0.0, 0.0, 1.0, 0.0),      # a tie: the gradient goes to input
    (ember.clamp_min, 0.0, 0.0, 1.0, 0.0),
    (ember.clamp_max, 1.0, 0.5, 0.0, 1.0),
    (ember.clamp_min, 0.0, 0.5, 0.0, 1.0),
    (ember.clamp_max, 0.0, 0.5, 1.0, 0.0),
])
def test_clamp_with_a_tensor_bound_splits_the_gradient_as_pytorch(f, x, bound, gx, gb):
    xt, bt = _leaf(x), _leaf(bound)
    f(xt, bt).backward()
    assert (xt.grad.item(), bt.grad.item()) == (gx, gb)


def test_clamp_of_an_integer_tensor_by_a_float_tensor_bound():
    b = _leaf(0.0)
    out = ember.clamp_max(ember.tensor(0, dtype=ember.uint8), b)
    assert out.dtype is ember.float64
    out.backward()
    assert b.grad.item() == 0.0


def test_clamp_with_both_tensor_bounds():
    x, lo, hi = _leaf([-1.0, 0.5, 2.0, 1.0]), _leaf([0.0, 0.0, 0.0, 2.0]), _leaf([1.0, 1.0, 1.0, 0.0])
    out = ember.clamp(x, lo, hi)
    _same(out.tolist(), [0.0, 0.5, 1.0, 0.0])
    out.sum().backward()
    _same(x.grad.tolist(), [0.0, 1.0, 0.0, 0.0])
    _same(lo.grad.tolist(), [1.0, 0.0, 0.0, 0.0])   # min > max: the result is max, its gradient max's
    _same(hi.grad.tolist(), [0.0, 0.0, 1.0, 1.0])


@pytest.mark.parametrize("f", [ember.clamp_min, ember.clamp_max, ember.Tensor.clamp_min_, ember.Tensor.clamp_max_])
def test_clamp_min_max_need_their_bound(f):
    with pytest.raises(TypeError, match="must be Tensor or Number, not NoneType"):
        f(ember.tensor([1.0]), None)


# -- reductions over empty dims, bool inputs ------------------------------------------------------

@pytest.mark.parametrize("f", [ember.argmax, ember.argmin])
def test_argmax_argmin_refuse_bool(f):
    for x in (ember.tensor(False), ember.tensor([], dtype=ember.bool), ember.tensor([True, False])):
        with pytest.raises(RuntimeError, match="does not support bool input"):
            f(x)
    assert ember.max(ember.tensor([False, True]), 0).indices.item() == 1   # max/min along a dim still take bool


@pytest.mark.parametrize("f", [
    lambda x: ember.aminmax(x, dim=0), lambda x: ember.kthvalue(x, 1, dim=0), lambda x: ember.kthvalue(x, 0, dim=0),
    lambda x: ember.nanmedian(x, dim=0), lambda x: ember.median(x, dim=0),
    lambda x: ember.amax(x.reshape(0, 1, 1), dim=(0, 1, -2)),   # the empty dim is reported before the repeated one
])
def test_reducing_an_empty_dim_is_an_index_error(f):
    with pytest.raises(IndexError, match="non-zero size"):
        f(ember.tensor([], dtype=ember.uint8))


def test_reductions_of_empty_tensors_that_pytorch_allows():
    assert ember.aminmax(ember.zeros(3, 0), dim=0).min.shape == (0,)
    assert ember.kthvalue(ember.zeros(2, 0), 1, dim=0).values.shape == (0,)
    assert ember.nanmedian(ember.zeros(0, 3), dim=1).values.shape == (0,)
    with pytest.raises(RuntimeError, match="no identity"):
        ember.aminmax(ember.tensor([]))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.amax(ember.zeros(0, 2), dim=(1, -1))


@pytest.mark.parametrize("f", [ember.median, ember.nanmedian])
def test_median_of_an_empty_tensor_is_a_differentiable_nan(f):
    x = _leaf([])
    out = f(x)
    assert math.isnan(out.item()) and out.requires_grad
    out.backward()
    assert x.grad.shape == (0,)


@pytest.mark.parametrize("f", [ember.unique, ember.unique_consecutive])
def test_unique_of_a_tensor_that_requires_grad(f):
    x = _leaf([1.0, 1.0, 2.0])
    out = f(x)
    assert out.requires_grad and out.tolist() == [1.0, 2.0]
    with pytest.raises(NotImplementedError, match="derivative"):
        out.sum().backward()
    vals, counts = f(x, return_counts=True)
    assert vals.requires_grad and not counts.requires_grad and counts.tolist() == [2, 1]


@pytest.mark.parametrize("f", [ember.unique, ember.unique_consecutive])
@pytest.mark.parametrize("shape, dim, msg", [
    ((0, 0), 0, "more than one"), ((0, 2), 1, "aren't selected"), ((2, 0), 0, "aren't selected"),
    ((0, 0, 1), 2, "aren't selected"),
])
def test_unique_along_a_dim_with_zero_sized_dims(f, shape, dim, msg):
    with pytest.raises(RuntimeError, match=msg):
        f(ember.zeros(shape), dim=dim)
    assert f(ember.zeros(0, 2), dim=0).shape == (0, 2)
