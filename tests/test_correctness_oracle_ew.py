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
