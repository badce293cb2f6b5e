"""Pointwise ops, statistics and operators against PyTorch's documented results (values checked
with torch 2.13): gradients at singular points (std of a constant slice, sinc at 0, atan2 at the
origin, 0 ** 0, xlogy at 0, median with ties), dtype promotion of add/sub/addcmul/addcdiv with a
scale, float16/bfloat16 computed in float32, mode with NaN, and numpy arrays next to tensors."""
import math
import operator

import numpy as np
import pytest

import ember

nan, inf = math.nan, math.inf


def _grads(f, *vals):
    ts = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in vals]
    out = f(*ts)
    out = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
    out.backward()
    return [t.grad.tolist() for t in ts]


def _same(got, want):
    np.testing.assert_array_equal(np.array(got, dtype=float), np.array(want, dtype=float))


# -- gradients ----------------------------------------------------------------------------------

@pytest.mark.parametrize("f, want", [
    (lambda x: ember.std(x), [0.0, 0.0, 0.0]),
    (lambda x: ember.std(x, correction=0), [0.0, 0.0, 0.0]),
    (lambda x: ember.std(x, dim=0, keepdim=True), [0.0, 0.0, 0.0]),
    (lambda x: ember.std_mean(x, dim=0), [1 / 3, 1 / 3, 1 / 3]),
    (lambda x: ember.var(x), [0.0, 0.0, 0.0]),
])
def test_std_of_a_constant_slice_has_zero_gradient(f, want):
    _same(_grads(f, [2.0, 2.0, 2.0])[0], want)


def test_std_gradient_per_row_and_without_degrees_of_freedom():
    _same(_grads(lambda x: ember.std(x, dim=1), [[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]])[0],
          [[0.0, 0.0, 0.0], [-0.5, 0.0, 0.5]])
    _same(_grads(lambda x: ember.std(x, correction=0), [1.0])[0], [0.0])
    _same(_grads(lambda x: ember.std(x), [1.0])[0], [nan])
    _same(_grads(lambda x: ember.var(x), [1.0])[0], [nan])  # no degrees of freedom: NaN, not ZeroDivisionError


def test_singular_point_gradients():
    _same(_grads(ember.sinc, [0.0, 1.0])[0], [0.0, -1.0])
    ga, gb = _grads(ember.atan2, [0.0, 1.0, 0.0], [0.0, 0.0, 1.0])
    _same(ga, [0.0, 0.0, 1.0])
    _same(gb, [0.0, -1.0, 0.0])


def test_pow_gradients_at_zero_and_negative_bases():
    ga, gb = _grads(lambda a, b: a ** b, [0.0, 0.0, 0.0, -2.0, -2.0], [0.0, 2.0, -1.0, 2.0, 3.0])
    _same(ga, [0.0, 0.0, -inf, -4.0, 12.0])
    _same(gb, [0.0, 0.0, -inf, nan, nan])
    _same(_grads(lambda y: 0.0 ** y, [0.0, 2.0, -1.0])[0], [0.0, 0.0, -inf])
    _same(_grads(lambda y: (-2) ** y, [0.0, 2.0])[0], [nan, nan])
    _same(_grads(lambda x: x ** 0, [0.0, 2.0])[0], [0.0, 0.0])


def test_xlogy_values_and_gradients():
    x, y = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 1.0, nan, 0.0, -1.0, inf]
    _same(ember.xlogy(ember.tensor(x, dtype=ember.float64), ember.tensor(y, dtype=ember.float64)).tolist(),
          [0.0, 0.0, nan, -inf, 0.0, 0.0])
    gx, gy = _grads(ember.xlogy, x[:5], y[:5])
    _same(gx, [0.0, 0.0, nan, -inf, 0.0])
    _same(gy, [nan, 0.0, nan, inf, -0.0])
    _same(_grads(lambda a: ember.xlogy(a, 0.0), [0.0, 1.0])[0], [0.0, -inf])


def test_median_of_all_elements_shares_the_gradient_between_ties():
    _same(_grads(ember.median, [1.0, 2.0, 2.0, 2.0, 3.0])[0], [0.0, 1 / 3, 1 / 3, 1 / 3, 0.0])
    _same(_grads(ember.median, [2.0, 1.0, 2.0, 3.0])[0], [0.5, 0.0, 0.5, 0.0])
    _same(_grads(ember.median, [2.0, nan, 2.0, 3.0, 1.0])[0], [0.0, 1.0, 0.0, 0.0, 0.0])
    _same(_grads(ember.nanmedian, [2.0, nan, 2.0, 3.0, 1.0])[0], [0.5, 0.0, 0.5, 0.0, 0.0])
    # along a dim the gradient goes to the index returned
    x = ember.tensor([[2.0, 1.0, 2.0, 3.0]], dtype=ember.float64, requires_grad=True)
    r = ember.median(x, dim=1)
    r.values.sum().backward()
    assert x.grad[0, r.indices[0]].item() == 1.0 and x.grad.sum().item() == 1.0


# -- add/sub/addcmul/addcdiv with a scale -------------------------------------------------------

@pytest.mark.parametrize("op, a, adt, b, bdt, alpha, want, wdt", [
    ("add", [200, 3], "uint8", [100, -3], "int8", 2, [400, -3], "int16"),
    ("sub", [200, 3], "uint8", [100, -3], "int8", 2, [0, 9], "int16"),
    ("add", [100, -3], "int8", [True, False], "bool", 2, [102, -3], "int8"),
    ("add", [True, False], "bool", [True, False], "bool", 2, [True, False], "bool"),
    ("add", [1e308, -3.0], "float64", [60000.0, -3.0], "float16", 2, [1e308, -9.0], "float64"),
    ("add", [60000.0, -3.0], "float16", [200, 3], "uint8", 2.5, [60512.0, 4.5], "float16"),
    ("add", [3e38, -3.0], "bfloat16", [100, -3], "int8", 2.5, [3.00405527047391e+38, -10.5], "bfloat16"),
])
def test_add_sub_alpha_promote_before_scaling(op, a, adt, b, bdt, alpha, want, wdt):
    x = ember.tensor(a, dtype=getattr(ember, adt))
    y = ember.tensor(b, dtype=getattr(ember, bdt))
    r = getattr(ember, op)(x, y, alpha=alpha)
    assert r.dtype is getattr(ember, wdt)
    _same(r.tolist(), want)


def test_add_alpha_with_python_scalars_and_in_place():
    r = ember.add(ember.tensor([True, False]), True, alpha=2)
    assert r.dtype is ember.bool and r.tolist() == [True, True]
    x = ember.tensor([True, False])
    x.add_(True, alpha=2)
    assert x.tolist() == [True, True]
    with pytest.raises(RuntimeError, match="alpha"):
        ember.add(ember.tensor([1, 2]), 1, alpha=0.5)


def test_float16_add_alpha_rounds_once():
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(4096) * 100).astype(np.float16)
    b = rng.standard_normal(4096).astype(np.float16)
    got = ember.add(ember.tensor(a), ember.tensor(b), alpha=0.1).numpy()
    alpha = np.float32(np.float16(0.1))  # PyTorch: alpha in the dtype, the arithmetic in float32
    np.testing.assert_array_equal(got, (a.astype(np.float32) + b.astype(np.float32) * alpha).astype(np.float16))


@pytest.mark.parametrize("f, want, wdt", [
    (lambda T: ember.addcmul(T([200, 3], "uint8"), T([100, -3], "int8"), T([100, -3], "int8")), [10200, 12],
     "int16"),
    (lambda T: ember.addcmul(T([200, 3], "uint8"), T([100, -3], "int8"), T([100, -3], "int8"), value=0.5),
     [200, 3], "int16"),
    (lambda T: ember.addcmul(T([1, 0], "bool"), T([1, 2], "uint8"), T([1, 2], "uint8"), value=2), [3, 8], "uint8"),
    (lambda T: ember.addcmul(T([60000.0, -3.0], "float16"), T([200, 3], "uint8"), T([200, 3], "uint8")),
     [inf, 6.0], "float16"),
    (lambda T: ember.addcdiv(T([1, 0], "bool"), T([60000.0, 3.0], "float16"), T([60000.0, 3.0], "float16"),
                             value=2), [3.0, 2.0], "float16"),
])
def test_addcmul_addcdiv_promote_all_three(f, want, wdt):
    r = f(lambda v, dt: ember.tensor(v, dtype=getattr(ember, dt)))
    assert r.dtype is getattr(ember, wdt)
    _same(r.tolist(), want)


def test_addcmul_refuses_bool_and_lerp_checks_dtypes():
    b = ember.tensor([True, False])
    with pytest.raises(NotImplementedError):
        ember.addcmul(b, b, b)
    with pytest.raises(NotImplementedError):
        ember.lerp(ember.tensor([1, 2]), ember.tensor([1, 2]), 0.5)
    f = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="end"):
        ember.lerp(f, f.double(), 0.5)
    assert ember.lerp(f, f, ember.tensor(0.5, dtype=ember.float64)).tolist() == [1.0, 2.0]


def test_lerp_is_exact_at_weight_one_and_keeps_infinities():
    x = ember.tensor([0.1, -1e-3, 0.0, 1.0])
    e = ember.tensor([60000.0, 3.0, inf, -inf])
    _same(ember.lerp(x, e, 1.0).tolist(), [60000.0, 3.0, nan, nan])
    _same(ember.lerp(x, e, 0.3).tolist()[2:], [inf, -inf])
    _same(ember.lerp(x.half(), e.half(), 1.0).tolist(), [60000.0, 3.0, nan, nan])


# -- float16 / bfloat16 --------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_clamp_keeps_reduced_float_dtypes(dt):
    x = ember.tensor([100.0, 1.0], dtype=getattr(ember, dt))
    for r in (ember.clamp(x, 2, 100), ember.clip(x, 2.5, 50.0), ember.clamp_min(x, 2.5), ember.clamp_max(x, 2.5)):
        assert r.dtype is x.dtype


def test_clamp_bool_with_python_bounds_is_refused():
    b = ember.tensor([True, False])
    with pytest.raises(NotImplementedError):
        ember.clamp(b, True)
    with pytest.raises(NotImplementedError):
        ember.clamp(b, max=True)
    assert ember.clamp(b, b).tolist() == [True, False]
    assert ember.clamp(b, 0).dtype is ember.int64


def test_logit_eps_bounds_in_the_input_dtype():
    x = ember.tensor([1e-4, 0.5, 0.0, 1.0, 0.999], dtype=ember.bfloat16)
    r = ember.logit(x, eps=1e-6)
    assert r.dtype is ember.bfloat16
    _same(r.tolist(), [-9.1875, 0.0, -13.8125, inf, inf])
    _same(ember.logit(x, eps=0.01).tolist(), [-4.59375, 0.0, -4.59375, 4.4375, 4.4375])


def test_float16_ops_do_not_overflow_in_intermediates():
    x = ember.tensor([30000.0, 60000.0, -60000.0, 0.5], dtype=ember.float16)
    _same(ember.round(x, decimals=1).tolist(), [30000.0, 60000.0, -60000.0, 0.5])
    _same(ember.round(x, decimals=3).tolist(), [30000.0, 60000.0, -60000.0, 0.5])
    s = ember.sinc(ember.tensor([0.0, 100.0, 60000.0], dtype=ember.float16))
    assert s.dtype is ember.float16 and s[0].item() == 1.0 and not s.isnan().any().item()
    _same(ember.sinc(ember.tensor([0.0, 100.0, 60000.0], dtype=ember.bfloat16)).tolist(),
          [1.0, 1.8742866814136505e-08, 1.2922100722789764e-08])


def test_reduced_float_python_scalars():
    for dt in (ember.float16, ember.bfloat16):
        x = ember.tensor([0.1, 1.0], dtype=dt)
        assert (x == 0.1).tolist() == [True, False] and (0.1 == x).tolist() == [True, False]
        assert (x - 0.1)[0].item() == 0.0  # the number rounded to the dtype first, as PyTorch
        assert (x // 0.1).tolist()[0] == (0.0 if dt is ember.float16 else 1.0)  # the number kept exact
    # float16 times a python float: the float is not rounded to float16 first (computed in float32)
    assert ember.tensor([-13.2109375], dtype=ember.float16).mul(0.1).item() == -1.3212890625


# -- mode with NaN -----------------------------------------------------------------------------------

def test_mode_counts_each_nan_once():
    cases = [([nan, nan, 1.0, 2.0], 1.0), ([1.0, nan, 2.0, nan, 2.0], 2.0), ([nan, nan, nan, 1.0, 1.0], 1.0)]
    for v, want in cases:
        assert ember.mode(ember.tensor(v)).values.item() == want
    assert math.isnan(ember.mode(ember.tensor([nan])).values.item())


# -- numpy arrays next to tensors ----------------------------------------------------------------

@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                                operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
                                operator.lshift, operator.rshift, operator.eq])
def test_tensor_op_ndarray_is_a_tensor(op):
    r = op(ember.tensor([1, 2]), np.array([3, 4]))
    assert isinstance(r, ember.Tensor)
    assert np.array_equal(r.numpy(), op(np.array([1, 2]), np.array([3, 4])))


def test_ndarray_and_tensor_operators():
    t = ember.tensor([1.0, 2.0])
    r = t + np.array(3.0)  # numpy's promotion, as PyTorch: the 0-d float64 array counts
    assert isinstance(r, ember.Tensor) and r.dtype is ember.float64 and r.tolist() == [4.0, 5.0]
    r = ember.tensor([1, 2]) @ np.array([3, 4])
    assert isinstance(r, ember.Tensor) and r.shape == () and r.item() == 11
    assert (np.array([1, 3]) == ember.tensor([1, 2])).tolist() == [True, False]
    assert (ember.tensor([1, 2]) != np.array([1, 3])).tolist() == [False, True]
    with pytest.raises(TypeError):
        np.array([3, 4]) + ember.tensor([1, 2])  # PyTorch refuses it too
    assert isinstance(np.sin(t), ember.Tensor)
