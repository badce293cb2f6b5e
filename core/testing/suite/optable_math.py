"""Op table, elementwise math: every elementwise op of the PyTorch common set against a numpy
float64 reference, for the dtypes it supports, on contiguous and non-contiguous inputs (the
layouts of :func:`ember.testing.helpers.layouts`), gradchecked in float64 where differentiable.

Cases already in :mod:`ember.testing.suite.optable` (the primitives and the first composites)
are not repeated; this table adds dtypes, scalar forms, keyword arguments and special values.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C
from ember.testing.suite.optable import _erfinv_ref

F = (ember.float32, ember.float64)
F16 = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
I = (ember.int32, ember.int64)
INTS = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)
SINTS = (ember.int8, ember.int16, ember.int32, ember.int64)
B = (ember.bool,)
S = (3, 4)
POS = {"low": 0.1, "high": 4.0}
UNIT = {"low": -0.9, "high": 0.9}
NZ = {"exclude_zero": True}
SPECIAL = {"special": True}

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _f(x):
    return np.asarray(x, dtype=np.float64)


def _trunc_div(a, b):
    return np.trunc(_f(a) / _f(b))


def _np_sign_bit(x):
    return np.signbit(x)


def _copysign(a, b):
    return np.copysign(_f(a), _f(b))


def _xlogy(a, b):
    a, b = _f(a), _f(b)
    with np.errstate(all="ignore"):
        r = a * np.log(b)
    return np.where((a == 0) & ~np.isnan(b), 0.0, r)


def _logaddexp2(a, b):
    return np.logaddexp2(_f(a), _f(b))


def _heaviside(x, v):
    return np.heaviside(x, v)


def _erfinv(y):
    return _erfinv_ref(y)


def _int_pow(a, b):
    """PyTorch's integer power: ``x ** -n`` is ``1 / x ** n`` truncated."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    pos = np.power(a, np.where(b < 0, 0, b))
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 1, -1, 1), 0))
    return np.where(b < 0, neg, pos)


def _shift_left(a, n):
    return np.left_shift(a, n)


def _shift_right(a, n):
    return np.right_shift(a, n)


def _nan_to_num(x):
    return np.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0)


def _lerp(a, b, w):
    return a + w * (b - a)


def _logit_eps(x):
    x = np.clip(x, 0.1, 0.9)
    return np.log(x / (1 - x))


def _isclose(a, b):
    return np.isclose(a, b, rtol=0.1, atol=0.05)


MATH_CASES = [
    # arithmetic with alpha, scalars on either side, rounding modes
    C("add_alpha", lambda a, b: ember.add(a, b, alpha=2.5), lambda a, b: a + 2.5 * b, [S, S], dtypes=F16, grad=True),
    C("add_alpha_int", lambda a, b: ember.add(a, b, alpha=3), lambda a, b: a + 3 * b, [S, S], dtypes=INTS),
    C("sub_alpha", lambda a, b: ember.sub(a, b, alpha=-2), lambda a, b: a + 2 * b, [S, S], dtypes=F + SINTS, grad=True),
    C("add_bool", ember.add, np.logical_or, [S, S], dtypes=B),
    C("radd_scalar", lambda x: 2 + x, lambda x: 2 + x, [S], dtypes=F16 + INTS),
    C("rmul_float_scalar_on_int", lambda x: 1.5 * x, lambda x: 1.5 * x, [S], dtypes=INTS),
    C("rtruediv_scalar", lambda x: 2.0 / x, lambda x: 2.0 / x, [dict(shape=S, **NZ)], dtypes=F16, grad=True),
    C("true_divide", ember.true_divide, np.true_divide, [S, dict(shape=S, **NZ)], dtypes=F + I, grad=False),
    C("div_floor_scalar", lambda x: ember.div(x, -2, rounding_mode="floor"), lambda x: np.floor_divide(x, -2),
      [S], dtypes=F + SINTS),
    C("div_trunc_float", lambda a, b: ember.div(a, b, rounding_mode="trunc"), _trunc_div,
      [S, dict(shape=S, **NZ)], dtypes=F),
    C("floordiv_operator", lambda a, b: a // b, np.floor_divide, [S, dict(shape=S, **NZ)], dtypes=F + SINTS),
    C("rfloordiv_scalar", lambda x: 7 // x, lambda x: np.floor_divide(7, x), [dict(shape=S, **NZ)], dtypes=F + SINTS),
    C("mod_operator", lambda a, b: a % b, np.remainder, [S, dict(shape=S, **NZ)], dtypes=F + SINTS),
    C("rmod_scalar", lambda x: 7 % x, lambda x: np.remainder(7, x), [dict(shape=S, **NZ)], dtypes=F + SINTS),
    C("remainder_grad", ember.remainder, np.remainder, [S, dict(shape=S, low=1, high=2)], dtypes=(ember.float64,),
      grad=True),
    C("fmod_scalar", lambda x: ember.fmod(x, 2.5), lambda x: np.fmod(x, 2.5), [S], dtypes=F, grad=True),
    C("fmod_int_scalar", lambda x: ember.fmod(x, -4), lambda x: np.fmod(x, -4), [S], dtypes=SINTS),
    C("pow_tensor_int", ember.pow, np.power, [dict(shape=S, low=-3, high=4), dict(shape=S, low=0, high=4)],
      dtypes=SINTS),
    C("pow_int_negative_exponents", ember.pow, _int_pow, [dict(shape=S, low=-2, high=3), dict(shape=S, low=-3, high=3)],
      dtypes=(ember.int64,)),
    C("rpow_scalar", lambda x: 2.0 ** x, lambda x: 2.0 ** x, [S], dtypes=F16, grad=True),
    C("pow_float_exponent_on_int", lambda x: x ** 0.5, lambda x: _f(x) ** 0.5, [dict(shape=S, low=0, high=9)],
      dtypes=INTS),
    C("pow_f16", ember.pow, np.power, [dict(shape=S, **POS), dict(shape=S, low=-1, high=2)], dtypes=F16),
    C("float_power", ember.float_power, lambda a, b: np.power(_f(a), _f(b)), [dict(shape=S, **POS), S],
      dtypes=F + I),
    C("neg_f16", ember.neg, np.negative, [S], dtypes=F16 + INTS[1:]),
    C("abs_ints", ember.abs, np.abs, [S], dtypes=INTS),
    C("reciprocal_int", ember.reciprocal, lambda x: 1.0 / _f(x), [dict(shape=S, **NZ)], dtypes=I),
    C("reciprocal_f16", ember.reciprocal, np.reciprocal, [dict(shape=S, **POS)], dtypes=F16),
    # exponentials, logarithms, roots
    C("exp_int", ember.exp, lambda x: np.exp(_f(x)), [S], dtypes=I + B),
    C("exp2_f16", ember.exp2, np.exp2, [S], dtypes=F16),
    C("expm1_f16", ember.expm1, np.expm1, [S], dtypes=F16),
    C("log_int", ember.log, lambda x: np.log(_f(x)), [dict(shape=S, low=1, high=9)], dtypes=I),
    C("log2_f16", ember.log2, np.log2, [dict(shape=S, **POS)], dtypes=F16),
    C("log10_f16", ember.log10, np.log10, [dict(shape=S, **POS)], dtypes=F16),
    C("log1p_f16", ember.log1p, np.log1p, [dict(shape=S, **POS)], dtypes=F16),
    C("log_special", ember.log, np.log, [dict(shape=S, **SPECIAL)], dtypes=F),
    C("sqrt_int", ember.sqrt, lambda x: np.sqrt(_f(x)), [dict(shape=S, low=0, high=9)], dtypes=INTS),
    C("sqrt_special", ember.sqrt, np.sqrt, [dict(shape=S, **SPECIAL)], dtypes=F),
    C("rsqrt_f16", ember.rsqrt, lambda x: 1 / np.sqrt(x), [dict(shape=S, **POS)], dtypes=F16),
    C("square_f16_int", ember.square, np.square, [S], dtypes=F16 + INTS[1:]),
    C("square_bool", ember.square, lambda x: _f(x).astype(np.int64), [S], dtypes=B),
    # trigonometric and hyperbolic
    C("sin_int", ember.sin, lambda x: np.sin(_f(x)), [S], dtypes=I),
    C("tan_f16", ember.tan, np.tan, [dict(shape=S, low=-1.0, high=1.0)], dtypes=F16),
    C("asin_f16", ember.asin, np.arcsin, [dict(shape=S, **UNIT)], dtypes=F16),
    C("acos_f16", ember.acos, np.arccos, [dict(shape=S, **UNIT)], dtypes=F16),
    C("atan_f16", ember.atan, np.arctan, [S], dtypes=F16),
    C("atan2_scalar", lambda x: ember.atan2(x, -1.5), lambda x: np.arctan2(x, -1.5), [S], dtypes=F, grad=True),
    C("atan2_f16", ember.atan2, np.arctan2, [S, S], dtypes=F16),
    C("sinh_f16", ember.sinh, np.sinh, [S], dtypes=F16),
    C("cosh_f16", ember.cosh, np.cosh, [S], dtypes=F16),
    C("tanh_int", ember.tanh, lambda x: np.tanh(_f(x)), [S], dtypes=I),
    C("asinh_f16", ember.asinh, np.arcsinh, [S], dtypes=F16),
    C("acosh_f16", ember.acosh, np.arccosh, [dict(shape=S, low=1.1, high=4)], dtypes=F16),
    C("atanh_f16", ember.atanh, np.arctanh, [dict(shape=S, **UNIT)], dtypes=F16),
    C("arc_aliases", lambda x: ember.arcsin(x) + ember.arccos(x) + ember.arctan(x) + ember.arctanh(x),
      lambda x: np.arcsin(x) + np.arccos(x) + np.arctan(x) + np.arctanh(x), [dict(shape=S, **UNIT)], dtypes=F,
      grad=True),
    C("deg2rad", ember.deg2rad, np.deg2rad, [dict(shape=S, low=-360, high=360)], dtypes=F + I, grad=True),
    C("rad2deg", ember.rad2deg, np.rad2deg, [S], dtypes=F, grad=True),
    C("sinc", ember.sinc, np.sinc, [S], dtypes=F, grad=True),
    # sigmoid, logit, error functions
    C("sigmoid_f16", ember.sigmoid, lambda x: 1 / (1 + np.exp(-x)), [S], dtypes=F16),
    C("sigmoid_extreme", ember.sigmoid, lambda x: 1 / (1 + np.exp(-x)), [dict(shape=S, low=-80, high=80)], dtypes=F),
    C("logit_eps", lambda x: ember.logit(x, eps=0.1), _logit_eps, [dict(shape=S, low=0.0, high=1.0)], dtypes=F),
    C("erf_f16", ember.erf, _erf, [S], dtypes=F16),
    C("erfc_tail", ember.erfc, _erfc, [dict(shape=S, low=2.0, high=6.0)], dtypes=(ember.float64,), rtol=1e-6),
    C("erfinv_f16", ember.erfinv, lambda y: _erfinv(y), [dict(shape=S, low=-0.9, high=0.9)], dtypes=(ember.float16,)),
    # rounding
    C("floor_f16_int", ember.floor, np.floor, [S], dtypes=F16 + INTS),
    C("ceil_f16_int", ember.ceil, np.ceil, [S], dtypes=F16 + INTS),
    C("round_half_even", ember.round, np.round, [dict(shape=S, low=-4, high=4)], dtypes=F16),
    C("round_halves", lambda x: ember.round(x + 0.5), lambda x: np.round(x + 0.5), [dict(shape=S, low=-5, high=5)],
      dtypes=(ember.float64,) + I),
    C("round_negative_decimals", lambda x: ember.round(x * 1000, decimals=-2), lambda x: np.round(x * 1000, -2), [S],
      dtypes=(ember.float64,)),
    C("trunc_f16_int", ember.trunc, np.trunc, [S], dtypes=F16 + INTS),
    C("fix", ember.fix, np.trunc, [S], dtypes=F),
    C("frac_f16", ember.frac, lambda x: x - np.trunc(x), [S], dtypes=F16),
    # signs
    C("sign_f16_ints", ember.sign, np.sign, [S], dtypes=F16 + SINTS),
    C("sign_special", ember.sign, np.sign, [dict(shape=S, **SPECIAL)], dtypes=F),
    C("sgn", ember.sgn, np.sign, [S], dtypes=F + I),
    C("signbit", ember.signbit, _np_sign_bit, [dict(shape=S, **SPECIAL)], dtypes=F16 + SINTS),
    C("copysign", ember.copysign, _copysign, [S, dict(shape=S, **SPECIAL)], dtypes=F, grad=False),
    C("copysign_grad", ember.copysign, _copysign, [S, dict(shape=S, **NZ)], dtypes=F, grad=True),
    C("copysign_int", ember.copysign, _copysign, [S, S], dtypes=I),
    C("positive", ember.positive, lambda x: x, [S], dtypes=F + I),
    # clamp and friends
    C("clamp_f16", lambda x: ember.clamp(x, -1.0, 0.5), lambda x: np.clip(x, -1.0, 0.5), [S], dtypes=F16),
    C("clamp_tensors", lambda x, lo, hi: ember.clamp(x, lo, lo + hi.abs()),
      lambda x, lo, hi: np.minimum(np.maximum(x, lo), lo + np.abs(hi)), [S, S, (4,)], dtypes=F + I, grad=True),
    C("clamp_max_only_int", lambda x: ember.clamp(x, max=3), lambda x: np.minimum(x, 3), [S], dtypes=INTS),
    C("clamp_float_bounds_on_int", lambda x: ember.clamp(x, -1.5, 2.5), lambda x: np.clip(_f(x), -1.5, 2.5), [S],
      dtypes=SINTS),
    C("clamp_min_max_fns", lambda x: ember.clamp_min(x, -1) + ember.clamp_max(x, 1),
      lambda x: np.maximum(x, -1) + np.minimum(x, 1), [S], dtypes=F + I, grad=True),
    C("clip", lambda x: ember.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), [S], dtypes=F, grad=True),
    C("clamp_nan", lambda x: ember.clamp(x, -1.0, 1.0), lambda x: np.clip(x, -1.0, 1.0), [dict(shape=S, **SPECIAL)],
      dtypes=F),
    # maximum / minimum family
    C("maximum_f16", ember.maximum, np.maximum, [S, S], dtypes=F16 + INTS),
    C("minimum_bool", ember.minimum, np.minimum, [S, S], dtypes=B),
    C("maximum_special", ember.maximum, np.maximum, [dict(shape=S, **SPECIAL), S], dtypes=F),
    C("fmax_special", ember.fmax, np.fmax, [dict(shape=S, **SPECIAL), S], dtypes=F),
    C("fmin_special", ember.fmin, np.fmin, [S, dict(shape=S, **SPECIAL)], dtypes=F),
    C("fmax_int", ember.fmax, np.fmax, [S, S], dtypes=I),
    C("max_binary", ember.max, np.maximum, [S, S], dtypes=F + I, grad=True),
    C("min_binary", ember.min, np.minimum, [S, (4,)], dtypes=F + I, grad=True),
    C("lerp_tensor_weight", ember.lerp, _lerp, [S, S, dict(shape=S, low=0, high=1)], dtypes=F16, grad=True),
    C("hypot_f16", ember.hypot, np.hypot, [S, S], dtypes=F16),
    C("logaddexp", ember.logaddexp, np.logaddexp, [S, S], dtypes=F, grad=True),
    C("logaddexp_large", ember.logaddexp, np.logaddexp, [dict(shape=S, low=500, high=900), S],
      dtypes=(ember.float64,)),
    C("logaddexp2", ember.logaddexp2, _logaddexp2, [S, S], dtypes=F, grad=True),
    C("xlogy", ember.xlogy, _xlogy, [dict(shape=S, low=-1, high=3), dict(shape=S, **POS)], dtypes=F, grad=True),
    C("xlogy_zeros", lambda x, y: ember.xlogy(x * 0, y), lambda x, y: _xlogy(x * 0, y), [S, dict(shape=S, **SPECIAL)],
      dtypes=F),
    C("heaviside", ember.heaviside, _heaviside, [dict(shape=S, low=-1, high=2), (4,)], dtypes=F),
    C("addcmul", lambda i, a, b: ember.addcmul(i, a, b, value=0.5), lambda i, a, b: i + 0.5 * a * b, [S, S, S],
      dtypes=F16, grad=True),
    C("addcdiv", lambda i, a, b: ember.addcdiv(i, a, b, value=-2), lambda i, a, b: i - 2 * a / b,
      [S, S, dict(shape=S, **POS)], dtypes=F, grad=True),
    # comparisons, with scalars on either side and special values
    C("eq_special", ember.eq, np.equal, [dict(shape=S, **SPECIAL), dict(shape=S, **SPECIAL)], dtypes=F),
    C("ne_special", ember.ne, np.not_equal, [dict(shape=S, **SPECIAL), dict(shape=S, **SPECIAL)], dtypes=F),
    C("lt_special", ember.lt, np.less, [dict(shape=S, **SPECIAL), S], dtypes=F),
    C("cmp_f16_ints", lambda a, b: ember.stack([a < b, a <= b, a > b, a >= b, a == b, a != b]),
      lambda a, b: np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b]), [S, S], dtypes=F16 + INTS),
    C("cmp_scalar_right", lambda x: ember.stack([x == 1, x != 1, x < 1, x <= 1, x > 1, x >= 1]),
      lambda x: np.stack([x == 1, x != 1, x < 1, x <= 1, x > 1, x >= 1]), [dict(shape=S, low=0, high=3)],
      dtypes=F + INTS),
    C("cmp_scalar_left", lambda x: ember.stack([1 == x, 1 != x, 1 < x, 1 <= x, 1 > x, 1 >= x]),
      lambda x: np.stack([1 == x, 1 != x, 1 < x, 1 <= x, 1 > x, 1 >= x]), [dict(shape=S, low=0, high=3)],
      dtypes=F + INTS),
    C("cmp_mixed_dtypes", lambda a, b: ember.lt(a, b.to(ember.float32)), lambda a, b: a < b, [S, S], dtypes=I),
    C("cmp_aliases", lambda a, b: ember.stack([ember.greater(a, b), ember.greater_equal(a, b), ember.less(a, b),
                                               ember.less_equal(a, b), ember.not_equal(a, b)]),
      lambda a, b: np.stack([a > b, a >= b, a < b, a <= b, a != b]), [S, S], dtypes=F),
    C("isclose_tol", lambda a, b: ember.isclose(a, a + b * 0.1, rtol=0.1, atol=0.05),
      lambda a, b: _isclose(a, a + b * 0.1), [S, S], dtypes=(ember.float64,)),
    C("isclose_special", ember.isclose, lambda a, b: np.isclose(a, b),
      [dict(shape=S, **SPECIAL), dict(shape=S, **SPECIAL)], dtypes=F),
    C("isclose_equal_nan", lambda a: ember.isclose(a, a, equal_nan=True), lambda a: np.isclose(a, a, equal_nan=True),
      [dict(shape=S, **SPECIAL)], dtypes=F),
    C("isclose_int", lambda a, b: ember.isclose(a, b, rtol=0, atol=2), lambda a, b: np.abs(a - b) <= 2, [S, S],
      dtypes=I),
    C("allclose_equal", lambda a, b: ember.tensor([ember.allclose(a, a + b * 1e-9), ember.allclose(a, a + 1),
                                                   ember.allclose(a.expand(2, 3, 4), a), ember.equal(a, a.clone()),
                                                   ember.equal(a, a + 1), ember.equal(a, a[0])], device=a.device),
      lambda a, b: np.array([True, False, True, True, False, False]), [S, S], dtypes=F),
    C("aliases", lambda a, b: ember.stack([ember.negative(a), ember.absolute(a), ember.subtract(a, b, alpha=2),
                                           ember.multiply(a, b), ember.divide(a, b), ember.arcsinh(a),
                                           ember.arccosh(ember.absolute(a) + 1)]),
      lambda a, b: np.stack([-a, np.abs(a), a - 2 * b, a * b, a / b, np.arcsinh(a), np.arccosh(np.abs(a) + 1)]),
      [S, dict(shape=S, **NZ)], dtypes=F, grad=True),
    C("isnan", ember.isnan, np.isnan, [dict(shape=S, **SPECIAL)], dtypes=F16),
    C("isinf", ember.isinf, np.isinf, [dict(shape=S, **SPECIAL)], dtypes=F16),
    C("isposinf", ember.isposinf, np.isposinf, [dict(shape=S, **SPECIAL)], dtypes=F),
    C("isneginf", ember.isneginf, np.isneginf, [dict(shape=S, **SPECIAL)], dtypes=F),
    C("isfinite", ember.isfinite, np.isfinite, [dict(shape=S, **SPECIAL)], dtypes=F16),
    C("isnan_int", lambda x: ember.stack([ember.isnan(x), ember.isinf(x), ember.isfinite(x)]),
      lambda x: np.stack([np.isnan(x), np.isinf(x), np.isfinite(x)]), [S], dtypes=INTS + B),
    C("nan_to_num", lambda x: ember.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0), _nan_to_num,
      [dict(shape=S, **SPECIAL)], dtypes=F16),
    C("nan_to_num_default", ember.nan_to_num, lambda x: np.nan_to_num(x), [dict(shape=S, **SPECIAL)],
      dtypes=(ember.float64,)),
    # logical and bitwise
    C("logical_ops_float", lambda a, b: ember.stack([ember.logical_and(a, b), ember.logical_or(a, b),
                                                     ember.logical_xor(a, b), ember.logical_not(a)]),
      lambda a, b: np.stack([np.logical_and(a, b), np.logical_or(a, b), np.logical_xor(a, b), np.logical_not(a)]),
      [dict(shape=S, low=-1, high=2), dict(shape=S, low=-1, high=2)], dtypes=F16 + INTS + B),
    C("bitwise_ints", lambda a, b: ember.stack([a & b, a | b, a ^ b]),
      lambda a, b: np.stack([a & b, a | b, a ^ b]), [S, S], dtypes=INTS + B),
    C("bitwise_scalar", lambda a: ember.stack([a & 6, 6 | a, a ^ -1]),
      lambda a: np.stack([a & 6, 6 | a, ~a]), [S], dtypes=SINTS),
    C("bitwise_not", ember.bitwise_not, np.invert, [S], dtypes=INTS + B),
    C("invert_operator", lambda x: ~x, np.invert, [S], dtypes=INTS + B),
    C("left_shift", lambda a, b: a << b, _shift_left, [S, dict(shape=S, low=0, high=5)], dtypes=SINTS),
    C("right_shift", lambda a, b: a >> b, _shift_right,
      [dict(shape=S, low=-100, high=100), dict(shape=S, low=0, high=5)],
      dtypes=(ember.int16, ember.int32, ember.int64)),
    C("shift_scalar", lambda a: ember.stack([ember.bitwise_left_shift(a, 2), ember.bitwise_right_shift(a, 1)]),
      lambda a: np.stack([a << 2, a >> 1]), [S], dtypes=SINTS),
    C("shift_uint8", lambda a: ember.stack([a << 3, a >> 2]), lambda a: np.stack([a << 3, a >> 2]),
      [dict(shape=S, low=0, high=200)], dtypes=(ember.uint8,)),
    # where with scalars and promotion
    C("where_scalar_branch", lambda c, a: ember.where(c > 0, a, 0.5), lambda c, a: np.where(c > 0, a, 0.5), [S, S],
      dtypes=F16, grad=True),
    C("where_scalar_both", lambda c: ember.where(c > 0, 1.0, -1.0), lambda c: np.where(c > 0, 1.0, -1.0), [S],
      dtypes=F),
    C("where_broadcast", lambda c, a, b: ember.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
      [(3, 1), (4,), S], dtypes=F + I + B, grad=True),
    C("where_promote", lambda c, a: ember.where(c > 0, a, a.to(ember.float64)), lambda c, a: np.where(c > 0, a, a),
      [S, S], dtypes=I),
    C("tensor_where", lambda x: x.where(x > 0, -x), lambda x: np.where(x > 0, x, -x), [S], dtypes=F, grad=True),
    # in-place operators keep the left operand's dtype
    C("iadd_operator", lambda a, b: _iop(a, b, "__iadd__"), lambda a, b: a + b, [S, S], dtypes=F16 + INTS),
    C("imul_scalar", lambda a: _iop(a, 3, "__imul__"), lambda a: a * 3, [S], dtypes=F + INTS),
    C("isub_broadcast", lambda a, b: _iop(a, b, "__isub__"), lambda a, b: a - b, [S, (4,)], dtypes=F + SINTS),
    C("itruediv", lambda a, b: _iop(a, b, "__itruediv__"), lambda a, b: a / b, [S, dict(shape=S, **NZ)], dtypes=F16),
    C("ipow", lambda a: _iop(a, 2, "__ipow__"), lambda a: a ** 2, [S], dtypes=F + I),
    C("ibitwise", lambda a, b: _iop(_iop(_iop(a, b, "__iand__"), b, "__ior__"), b, "__ixor__"),
      lambda a, b: ((a & b) | b) ^ b, [S, S], dtypes=INTS + B),
    C("ishift", lambda a: _iop(_iop(a, 2, "__ilshift__"), 1, "__irshift__"), lambda a: (a << 2) >> 1, [S],
      dtypes=(ember.int32, ember.int64)),
    C("ifloordiv_imod", lambda a, b: _iop(a.clone(), b, "__ifloordiv__") + _iop(a.clone(), b, "__imod__"),
      lambda a, b: np.floor_divide(a, b) + np.remainder(a, b), [S, dict(shape=S, **NZ)], dtypes=F + SINTS),
    C("matmul_operators", lambda a, b: (a @ b) + ember.matmul(b.mT, a.mT).mT, lambda a, b: 2 * (a @ b),
      [(3, 4), (4, 2)], dtypes=F, grad=True),
]


def _iop(a, b, name):
    """``a op= b`` through the operator, on a copy (the suite's inputs are shared views)."""
    x = a.clone()
    r = getattr(x, name)(b)
    assert r is x, f"{name} must return self"
    assert r.dtype is a.dtype, f"{name} must keep the left operand's dtype"
    return r
