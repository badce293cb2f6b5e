"""Unary math: neg, abs, sign, exponentials and logarithms, trigonometric and hyperbolic
functions and their inverses, erf/erfc/erfinv, sigmoid, relu, rounding (floor, ceil, round,
trunc, frac), reciprocal, square, logit, deg2rad/rad2deg.

neg, abs, sign, exp, log, sin, cos, tanh, sqrt, erf, floor, ceil, round and trunc are primitives;
the others decompose into them (a backend may implement any of them natively).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import arithmetic as A
from . import comparison as CMP
from . import complexops as CX
from . import copy as CP
from . import nn as NN
from . import pointwise as PW
from .declare import composite, defop
from .registry import ALL

__all__ = ["neg", "neg_", "negative", "negative_", "abs", "abs_", "absolute", "absolute_", "sign", "sign_", "exp",
           "exp_", "log", "log_", "sin", "sin_", "cos", "cos_", "tanh", "tanh_", "sqrt", "sqrt_",
           "erf", "erf_", "floor", "floor_", "ceil", "ceil_", "round", "round_", "trunc", "trunc_", "fix", "fix_",
           "exp2", "exp2_", "expm1", "expm1_", "log2", "log2_", "log10", "log10_", "log1p", "log1p_", "rsqrt",
           "rsqrt_", "tan", "tan_", "asin", "asin_", "acos", "acos_", "atan", "atan_", "sinh", "sinh_", "cosh",
           "cosh_", "asinh", "asinh_", "acosh", "acosh_", "atanh", "atanh_", "arcsin", "arcsin_", "arccos",
           "arccos_", "arctan", "arctan_", "arcsinh", "arcsinh_", "arccosh", "arccosh_", "arctanh", "arctanh_",
           "sigmoid", "sigmoid_", "erfc", "erfc_", "erfinv", "erfinv_", "frac", "frac_", "reciprocal",
           "reciprocal_", "square", "square_", "relu", "relu_", "logit", "logit_", "deg2rad", "deg2rad_", "rad2deg",
           "rad2deg_", "positive"]

_FLOAT = D._FLOAT
_COMPLEX = D._COMPLEX
LN2, LN10 = math.log(2.0), math.log(10.0)

# kinds of unary ops: the result keeps the dtype / floats only (ints compute in the default
# float dtype) / rounding (ints are returned as they are)
SAME, FLOAT, ROUNDING = range(3)

_NO_BOOL = frozenset({D.bool})
_REAL_ONLY = frozenset({"erf", "erfc", "erfinv", "logit"})  # refused for complex inputs, as PyTorch
_NO_INT = frozenset({D.bool, D.uint8, D.int8, D.int16, D.int32, D.int64})


def unary_meta(name: str, kind: int, refuse=frozenset()):
    """The meta of a unary op: ``input -> (device, (x,), (x,))``; dtypes in ``refuse`` raise
    NotImplementedError (as PyTorch)."""
    def meta(input):
        x = input if isinstance(input, Tensor) else U.tensor_arg(input, name)
        dt = x._dtype
        if refuse and dt in refuse:
            raise U.dtype_not_implemented(f"{name}_cpu", dt)
        if dt.category != _FLOAT:
            if dt.category == _COMPLEX:
                if kind == ROUNDING or name in _REAL_ONLY:
                    raise U.dtype_not_implemented(f"{name}_cpu", dt)
                return x._device, (x,), (x,)
            if kind == FLOAT:
                x = CP.cast(x, D.get_default_dtype())
            elif kind == ROUNDING:
                return None, CP.clone(x), None
        t = (x,)
        return x._device, t, t
    meta.__name__ = meta.__qualname__ = name
    meta.float_plain = refuse  # (a floating tensor outside ``refuse`` passes as it is: see declare._fast_unary)
    return meta


def unary(name: str, kind: int, backward=None, *, saves=ALL, save_output=False, decomposition=None, doc: str = "",
          refuse=frozenset(), meta=None):
    """Declare a unary op ``f(input, *, out=None)`` and its in-place form ``f_(self)``."""
    if backward is not None:
        backward = U.holomorphic(backward)
    return defop(name, meta or unary_meta(name, kind, refuse), backward=backward, saves=saves,
                 save_output=save_output, decomposition=decomposition, differentiable=backward is not None,
                 result="elementwise", inplace=True, group="unary", doc=doc)


def _x(ctx):
    return ctx.args[0]


def _zero_grad(ctx, g):
    return (g.new_zeros(g.shape),)  # (PyTorch's zeros_like: an inf or NaN gradient does not leak through)


# -- the primitives ---------------------------------------------------------------------------

def _neg_meta(input):
    x = U.tensor_arg(input, "neg")
    if x._dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return x._device, (x,), (x,)


neg = unary("neg", SAME, lambda ctx, g: (-g,), saves=(), meta=_neg_meta,
            doc="``-input`` (refused for bool: use ``~`` or ``logical_not``)")


def _abs_meta(input):
    x = U.tensor_arg(input, "abs")
    if x._dtype is D.bool:
        raise U.dtype_not_implemented("abs_cpu", x._dtype)
    return x._device, (x,), (x,)


def _abs_bw(ctx, g):
    x = _x(ctx)
    return (g * (CX.sgn(x) if x._dtype.category == _COMPLEX else sign(x)),)


abs = unary("abs", SAME, _abs_bw, doc="absolute value (of a complex tensor: its modulus, a real tensor)",
            meta=_abs_meta)


def _sign_meta(input):
    x = U.tensor_arg(input, "sign")
    if x._dtype is D.bool:
        return None, CP.clone(x), None
    if x._dtype.category == _COMPLEX:
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                  "torch.sgn instead.")
    return x._device, (x,), (x,)


sign = unary("sign", SAME, _zero_grad, saves=(), meta=_sign_meta,
             doc="-1, 0 or 1 by the sign (bool stays bool). NaN gives NaN: PyTorch returns 0 for NaN, which hides "
                 "it; ember keeps it visible.")
exp = unary("exp", FLOAT, lambda ctx, g: (g * ctx.out,), saves=(), save_output=True, doc="e^x")
log = unary("log", FLOAT, lambda ctx, g: (g / _x(ctx),), doc="natural logarithm")
sin = unary("sin", FLOAT, lambda ctx, g: (g * cos(_x(ctx)),), doc="sine")
cos = unary("cos", FLOAT, lambda ctx, g: (-g * sin(_x(ctx)),), doc="cosine")
tanh = unary("tanh", FLOAT, lambda ctx, g: (g * (1 - ctx.out * ctx.out),), saves=(), save_output=True,
             doc="hyperbolic tangent")
sqrt = unary("sqrt", FLOAT, lambda ctx, g: (g / (2 * ctx.out),), saves=(), save_output=True, doc="square root")
erf = unary("erf", FLOAT, lambda ctx, g: (g * (2 / math.sqrt(math.pi)) * exp(-_x(ctx) * _x(ctx)),),
            doc="error function")
floor = unary("floor", ROUNDING, _zero_grad, saves=(), doc="round down", refuse=_NO_BOOL)
ceil = unary("ceil", ROUNDING, _zero_grad, saves=(), doc="round up", refuse=_NO_BOOL)
trunc = unary("trunc", ROUNDING, _zero_grad, saves=(), doc="round toward zero", refuse=_NO_BOOL)
_round_meta = unary_meta("round", ROUNDING, _NO_BOOL)


@defop("round", backward=_zero_grad, saves=(), result="elementwise", inplace=True, group="unary")
def round(input, *, decimals: int = 0):
    """Round half to even, to ``decimals`` places."""
    if decimals == 0:
        return _round_meta(input)
    x = U.tensor_arg(input, "round")
    if x._dtype.category != _FLOAT:
        raise U.dtype_not_implemented("round_cpu", x._dtype, "round(decimals=...) needs a floating tensor")
    dt, x = x._dtype, U.opmath(x)  # float16 in float32: 60000 * 10 must not overflow
    s = 10.0 ** decimals
    if decimals > 0:
        return None, U.from_opmath(A.div(round(A.mul(x, s)), s), dt), None
    return None, U.from_opmath(A.mul(round(A.div(x, 10.0 ** -decimals)), 10.0 ** -decimals), dt), None


neg_, abs_, sign_, exp_, log_ = neg.inplace, abs.inplace, sign.inplace, exp.inplace, log.inplace
sin_, cos_, tanh_, sqrt_, erf_ = sin.inplace, cos.inplace, tanh.inplace, sqrt.inplace, erf.inplace
floor_, ceil_, round_, trunc_ = floor.inplace, ceil.inplace, round.inplace, trunc.inplace
negative, negative_ = neg, neg_
absolute, absolute_ = abs, abs_
fix, fix_ = trunc, trunc_

# -- decomposed -------------------------------------------------------------------------------


def _float_unary(name, decomposition, backward, **kw):
    return unary(name, FLOAT, backward, decomposition=decomposition, **kw)


exp2 = _float_unary("exp2", lambda x: A.pow(2.0, x), lambda ctx, g: (g * ctx.out * LN2,), saves=(), save_output=True,
                    doc="2^x")
expm1 = _float_unary("expm1", lambda x: A.sub(exp(x), 1.0), lambda ctx, g: (g * (ctx.out + 1),), saves=(),
                     save_output=True, doc="e^x - 1")
log2 = _float_unary("log2", lambda x: A.div(log(x), LN2), lambda ctx, g: (g / (_x(ctx) * LN2),), doc="base-2 log")
log10 = _float_unary("log10", lambda x: A.div(log(x), LN10), lambda ctx, g: (g / (_x(ctx) * LN10),),
                     doc="base-10 log")
log1p = _float_unary("log1p", lambda x: log(A.add(x, 1.0)), lambda ctx, g: (g / (_x(ctx) + 1),), doc="log(1 + x)")
rsqrt = _float_unary("rsqrt", lambda x: A.div(1.0, sqrt(x)), lambda ctx, g: (-0.5 * g * ctx.out * ctx.out * ctx.out,),
                     saves=(), save_output=True, doc="1 / sqrt(x)")
tan = _float_unary("tan", lambda x: A.div(sin(x), cos(x)), lambda ctx, g: (g * (1 + ctx.out * ctx.out),), saves=(),
                   save_output=True, doc="tangent")


def _acosh_bw(ctx, g):
    x = _x(ctx)
    if x._dtype.category == _COMPLEX:  # the principal branch's derivative (z * z - 1 loses the sign for Re z < 0)
        return (g / (sqrt(x - 1) * sqrt(x + 1)),)
    return (g / sqrt(x * x - 1),)


def _asin(x):
    return PW.atan2(x, sqrt(A.sub(1.0, A.mul(x, x))))


def _acos(x):
    return PW.atan2(sqrt(A.sub(1.0, A.mul(x, x))), x)


asin = _float_unary("asin", _asin, lambda ctx, g: (g / sqrt(1 - _x(ctx) * _x(ctx)),), doc="arcsine")
acos = _float_unary("acos", _acos, lambda ctx, g: (-g / sqrt(1 - _x(ctx) * _x(ctx)),), doc="arccosine")
atan = _float_unary("atan", lambda x: PW.atan2(x, 1.0), lambda ctx, g: (g / (1 + _x(ctx) * _x(ctx)),),
                    doc="arctangent")
sinh = _float_unary("sinh", lambda x: A.mul(A.sub(exp(x), exp(neg(x))), 0.5), lambda ctx, g: (g * cosh(_x(ctx)),),
                    doc="hyperbolic sine")
cosh = _float_unary("cosh", lambda x: A.mul(A.add(exp(x), exp(neg(x))), 0.5), lambda ctx, g: (g * sinh(_x(ctx)),),
                    doc="hyperbolic cosine")
asinh = _float_unary("asinh", lambda x: A.mul(sign(x), log(A.add(abs(x), sqrt(A.add(A.mul(x, x), 1.0))))),
                     lambda ctx, g: (g / sqrt(_x(ctx) * _x(ctx) + 1),), doc="inverse hyperbolic sine")
acosh = _float_unary("acosh", lambda x: log(A.add(x, sqrt(A.sub(A.mul(x, x), 1.0)))),
                     _acosh_bw, doc="inverse hyperbolic cosine")
atanh = _float_unary("atanh", lambda x: A.mul(log(A.div(A.add(x, 1.0), A.sub(1.0, x))), 0.5),
                     lambda ctx, g: (g / (1 - _x(ctx) * _x(ctx)),), doc="inverse hyperbolic tangent")
sigmoid = _float_unary("sigmoid", lambda x: A.div(1.0, A.add(exp(neg(x)), 1.0)),
                       lambda ctx, g: (g * ctx.out * (1 - ctx.out),), saves=(), save_output=True, doc="1 / (1 + e^-x)")
erfc = _float_unary("erfc", lambda x: A.sub(1.0, erf(x)),
                    lambda ctx, g: (-g * (2 / math.sqrt(math.pi)) * exp(-_x(ctx) * _x(ctx)),), doc="1 - erf(x)")


def _erfinv_decomp(y):
    # Giles' single-precision approximation, refined by two Newton steps on erf
    w = neg(log(A.mul(A.sub(1.0, y), A.add(1.0, y))))
    small = CMP.lt(w, 5.0)
    ws = A.sub(w, 2.5)
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p1 = A.add(A.mul(p1, ws), c)
    wl = A.sub(sqrt(w), 3.0)
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p2 = A.add(A.mul(p2, wl), c)
    x = A.mul(PW.where(small, p1, p2), y)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    for _ in range(2):
        err = A.sub(erf(x), y)
        x = A.sub(x, A.div(err, A.mul(exp(neg(A.mul(x, x))), two_over_sqrt_pi)))
    x = PW.where(CMP.eq(y, 1.0), math.inf, x)
    x = PW.where(CMP.eq(y, -1.0), -math.inf, x)
    return PW.where(CMP.gt(abs(y), 1.0), math.nan, x)


erfinv = _float_unary("erfinv", _erfinv_decomp, lambda ctx, g: (g * (math.sqrt(math.pi) / 2) * exp(ctx.out * ctx.out),),
                      saves=(), save_output=True, doc="inverse error function")
frac = unary("frac", ROUNDING, lambda ctx, g: (g,), saves=(), decomposition=lambda x: A.sub(x, trunc(x)),
             doc="fractional part, x - trunc(x)", refuse=_NO_INT)
reciprocal = _float_unary("reciprocal", lambda x: A.div(1.0, x), lambda ctx, g: (-g * ctx.out * ctx.out,), saves=(),
                          save_output=True, doc="1 / x")


def _square_meta(input):
    x = U.tensor_arg(input, "square")
    if x._dtype is D.bool:  # bool squares as int64, as pow(x, 2) does
        x = CP.cast(x, D.int64)
    return x._device, (x,), (x,)


square = unary("square", SAME, lambda ctx, g: (g * 2 * _x(ctx),), decomposition=lambda x: A.mul(x, x),
               meta=_square_meta, doc="``x * x`` (bool squares as int64, as ``pow(x, 2)`` does)")


def _relu_meta(input):
    x = input if isinstance(input, Tensor) else U.tensor_arg(input, "relu")
    dt = x._dtype
    if dt.category != _FLOAT:
        if dt is D.bool:
            raise RuntimeError(f"relu: Boolean inputs not supported for relu ({U.desc(x)})")
        if dt.category == _COMPLEX:
            raise NotImplementedError(f"relu: clamp is not supported for complex types ({U.desc(x)})")
    t = (x,)
    return x._device, t, t


def _relu_decomp(x):
    return A.maximum(x, 0 if x._dtype.category != _FLOAT else 0.0)


relu = unary("relu", SAME, lambda ctx, g: (NN.threshold_backward(g, ctx.out, 0),), saves=(), save_output=True,
             decomposition=_relu_decomp, meta=_relu_meta, doc="max(x, 0)")

exp2_, expm1_, log2_, log10_, log1p_ = exp2.inplace, expm1.inplace, log2.inplace, log10.inplace, log1p.inplace
rsqrt_, tan_, asin_, acos_, atan_ = rsqrt.inplace, tan.inplace, asin.inplace, acos.inplace, atan.inplace
sinh_, cosh_, asinh_, acosh_, atanh_ = sinh.inplace, cosh.inplace, asinh.inplace, acosh.inplace, atanh.inplace
sigmoid_, erfc_, erfinv_, frac_ = sigmoid.inplace, erfc.inplace, erfinv.inplace, frac.inplace
reciprocal_, square_, relu_ = reciprocal.inplace, square.inplace, relu.inplace
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_ = asin_, acos_, atan_, asinh_, acosh_, atanh_


# -- composites -------------------------------------------------------------------------------

def _float(x, op: str):
    x = U.tensor_arg(x, op)
    if x._dtype.category == _COMPLEX:
        raise RuntimeError(f"{op} is not supported for complex tensors.")
    return x if x._dtype.category == _FLOAT else CP.cast(x, D.get_default_dtype())


def _logit_decomp(x, lo, hi):
    if lo is not None:
        x = PW.clamp(x, lo, hi)
    return log(A.div(x, A.sub(1.0, x)))  # each step rounded to the dtype, as PyTorch's kernel


def _logit_bw(ctx, g):
    # PyTorch's formula, g / (x (1 - x)), with g * inf at 0 (-0.0 too) and 1 (not 0/0); NaN
    # outside [0, 1], or 0 outside [eps, 1 - eps] (the clamp's flat parts)
    x, lo, hi = ctx.args
    d = PW.where(CMP.eq(x, 0.0) | CMP.eq(x, 1.0), g * math.inf, g / (x * (1 - x)))
    if lo is None:
        return (PW.where(CMP.lt(x, 0.0) | CMP.gt(x, 1.0), math.nan, d),)
    return (PW.where(CMP.lt(x, lo) | CMP.gt(x, hi), 0.0, d),)


@defop("logit", decomposition=_logit_decomp, backward=_logit_bw, result="elementwise", inplace=True, group="unary")
def logit(input, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _float(input, "logit")
    if eps is None:
        return x._device, (x, None, None), (x,)
    dt = x._dtype  # the bounds in the input's dtype (bfloat16: 1 - 1e-6 is 1), as PyTorch
    lo = _rounded(eps, dt)
    return x._device, (x, lo, _rounded(1.0 - lo, dt)), (x,)


def _rounded(v: float, dt) -> float:
    return float(np.array(v, dtype=dt.np))


@composite("deg2rad", inplace=True)
def deg2rad(input):
    """Degrees to radians."""
    return A.mul(_float(input, "deg2rad"), math.pi / 180.0)


@composite("rad2deg", inplace=True)
def rad2deg(input):
    """Radians to degrees."""
    return A.mul(_float(input, "rad2deg"), 180.0 / math.pi)


logit_, deg2rad_, rad2deg_ = logit.inplace, deg2rad.inplace, rad2deg.inplace


@composite("positive", out=False)
def positive(input):
    """``+input``: returns ``input`` itself (refused for bool)."""
    if input._dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input
