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


# -- gradients PyTorch defines ------------------------------------------------------------------

@pytest.mark.parametrize("f", [ember.logaddexp, ember.logaddexp2])
def test_logaddexp_of_equal_operands_splits_the_gradient(f):
    a, b = _leaf([0.0, 3.0]), _leaf([0.0, 3.0])
    f(a, b).sum().backward()
    _same(a.grad.tolist(), [0.5, 0.5])
    _same(b.grad.tolist(), [0.5, 0.5])
    c = _leaf(0.0)
    f(ember.tensor(0, dtype=ember.uint8), c).backward()
    assert c.grad.item() == 0.5


def test_copysign_records_a_zero_gradient_for_other():
    b = _leaf(-1.0)
    out = ember.copysign(ember.tensor(2), b)
    assert out.requires_grad and out.item() == -2.0
    out.backward()
    assert b.grad.item() == 0.0


def test_norm_gradients_at_zero():
    x = _leaf([0.0, 1.0, 2.0])
    out = ember.norm(x, p=0)
    assert out.requires_grad and out.item() == 2.0
    out.backward()
    _same(x.grad.tolist(), [0.0, 0.0, 0.0])
    z = _leaf([0.0, 0.0])
    ember.norm(z, p=3).backward()
    _same(z.grad.tolist(), [0.0, 0.0])


@pytest.mark.parametrize("p", [inf, -inf])
def test_inf_norm_of_an_empty_dim_has_no_identity(p):
    with pytest.raises(RuntimeError, match="norm on an empty tensor"):
        ember.norm(ember.zeros(0), p=p)
    assert ember.norm(ember.zeros(0, 3), p=p, dim=1).shape == (0,)


def test_fro_norm_over_more_than_two_dims_is_refused():
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        ember.norm(ember.zeros(2, 2, 2), p="fro", dim=(0, 1, 2))


def test_prod_of_an_empty_dim_backpropagates():
    x = ember.zeros(0, 3, dtype=ember.float64, requires_grad=True)
    ember.prod(x, 0).sum().backward()
    assert x.grad.shape == (0, 3)


@pytest.mark.parametrize("vals, corr, want_var, want_std", [
    (0.0, 2, nan, nan),                       # no degrees of freedom, x == mean: NaN
    ([1.0, 2.0], 2, [inf, inf], [nan, nan]),  # elsewhere inf (unsigned), std's NaN
    ([1.0, 2.0], 3, [inf, inf], [nan, nan]),
    ([1.0], 1, [nan], [nan]),
])
def test_var_std_over_everything_without_degrees_of_freedom(vals, corr, want_var, want_std):
    for f, want in ((ember.var, want_var), (ember.std, want_std)):
        x = _leaf(vals)
        f(x, correction=corr).sum().backward()
        _same(x.grad.tolist(), want)


def test_var_along_a_dim_without_degrees_of_freedom_keeps_the_formula():
    x = _leaf([[1.0, 2.0]])
    ember.var(x, dim=1, correction=2).sum().backward()
    _same(x.grad.tolist(), [[-inf, inf]])


# -- dtypes and exceptions ------------------------------------------------------------------------

def test_sum_to_size():
    assert ember.tensor(False).sum_to_size(()).dtype is ember.int64     # a full sum, even of a 0-d tensor
    assert ember.tensor(1, dtype=ember.uint8).sum_to_size(()).dtype is ember.int64
    assert ember.tensor([True, True]).sum_to_size((2,)).dtype is ember.bool
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        ember.tensor([False]).sum_to_size((5,))
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        ember.tensor([[1.0, 2.0]]).sum_to_size((3, 1, 2))


@pytest.mark.parametrize("f", [
    lambda x: ember.sum(x, dtype=ember.int64), lambda x: ember.nansum(x, 0, dtype=ember.int64),
    lambda x: ember.prod(x, dtype=ember.int64), lambda x: ember.cumsum(x, 0, dtype=ember.int64),
    lambda x: ember.sum(x, dtype=ember.bool),
])
def test_an_integer_dtype_for_a_reduction_of_a_tensor_requiring_grad(f):
    with pytest.raises(RuntimeError, match="Autograd not support dtype"):
        f(_leaf([1.0, 2.0]))
    with ember.no_grad():
        f(_leaf([1.0, 2.0]))


def test_nanmean_checks_the_input_dtype_before_dtype():
    for x in (ember.tensor(False), ember.tensor(1)):
        with pytest.raises(RuntimeError, match="expected input to have floating point"):
            ember.nanmean(x, dtype=ember.float64)


@pytest.mark.parametrize("x, lo, hi", [([inf], 0, 0), ([1.0, nan], 0, 0), ([1.0, 2.0], 0, inf), ([1.0], -inf, 0)])
def test_histc_refuses_a_range_that_is_not_finite(x, lo, hi):
    with pytest.raises(RuntimeError, match="is not finite"):
        ember.histc(ember.tensor(x), bins=2, min=lo, max=hi)


@pytest.mark.parametrize("op", ["addcdiv", "addcmul"])
def test_addc_gradients_of_an_empty_result_are_zero(op):
    # t1 / t2 is 0/0 (and t1 * inf is NaN) at the operands' 0-d shape, but nothing is computed:
    # the gradients are sums over the empty result, 0 as in PyTorch
    t1 = ember.tensor(0.0, dtype=ember.float64, requires_grad=True)
    t2 = ember.tensor(0.0 if op == "addcdiv" else math.inf, dtype=ember.float64, requires_grad=True)
    out = getattr(ember, op)(ember.zeros(0, dtype=ember.float64), t1, t2)
    out.sum().backward()
    assert out.shape == (0,) and t1.grad.item() == 0.0 and t2.grad.item() == 0.0
