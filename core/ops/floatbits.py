"""Ops on the representation of numbers: frexp, ldexp, nextafter, and the integer ops gcd and lcm.

``nextafter``, ``gcd`` and ``lcm`` are kernel ops (a backend may implement them natively, as
cpu_numpy does with numpy's ufuncs): ``nextafter`` decomposes into integer steps of the float's
bits, ``gcd`` into Euclid's algorithm. ``frexp`` and ``ldexp`` are written in other ops.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .. import return_types as RT
from .._tensor import Tensor
from . import _args as U
from . import arithmetic as A
from . import comparison as CMP
from . import copy as CP
from . import creation as CR
from . import pointwise as PW
from . import reduction as R
from . import unary as UN
from ._binary import ARITH, FLOATOP, operands, promote
from .declare import composite, defop

__all__ = ["frexp", "ldexp", "ldexp_", "nextafter", "nextafter_", "gcd", "gcd_", "lcm", "lcm_"]

_FLOAT = D._FLOAT
_BITS = {D.float16: D.int16, D.bfloat16: D.int16, D.float32: D.int32, D.float64: D.int64}


def _tensor_operand(op, x, what, position):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' (position {position}) must be Tensor, not {type(x).__name__}")
    return x


def _scale2(x, e):
    """``x * 2**e`` for integral float ``e``, exact while the result is representable: the power
    is applied in two halves, so that neither overflows where the result does not."""
    fin = CMP.isfinite(e)
    h = PW.where(fin, UN.floor(e * 0.5), e)
    return x * UN.exp2(h) * UN.exp2(PW.where(fin, e - h, 0.0))


# -- frexp ------------------------------------------------------------------------------------------

def _frexp_decomp(x):
    dt = x._dtype
    wide = CP.cast(x, D.float32) if dt.itemsize == 2 else x
    fin = CMP.logical_and(CMP.isfinite(wide), CMP.ne(wide, 0))
    a = PW.where(fin, UN.abs(wide), 1.0)
    e = UN.floor(UN.log2(a)) + 1
    m = UN.abs(_scale2(a, -e))  # log2 may round across a power of two: one step of correction
    e = e + CMP.ge(m, 1.0).to(e._dtype) - CMP.lt(m, 0.5).to(e._dtype)
    e = PW.where(fin, e, 0.0)
    mant = PW.where(fin, _scale2(wide, -e), wide)
    return (CP.cast(mant, dt) if dt.itemsize == 2 else mant, CP.cast(e, D.int32))


def _frexp_bw(ctx, g):
    """PyTorch's: ``grad / exponent.exp2()``, the power taken in float32 (the default dtype)."""
    gm = g[0]
    if gm is None:
        return (None,)
    return (gm / UN.exp2(CP.cast(ctx.out[1], D.float32)),)


@defop("frexp", decomposition=_frexp_decomp, backward=_frexp_bw, saves=(), save_output=(1,), returns=RT.frexp,
       group="unary")
def frexp(input):
    """``(mantissa, exponent)`` with ``input == mantissa * 2**exponent`` and ``0.5 <= |mantissa| < 1``
    (mantissa 0, inf or NaN with exponent 0 for those values); exponent is int32."""
    x = U.tensor_arg(input, "frexp")
    if x._dtype.category != _FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return x._device, (x,), (x,)


# -- ldexp ------------------------------------------------------------------------------------------

@composite("ldexp", inplace=True)
def ldexp(input, other):
    """``input * 2**other``, in the floating dtype of both (integers give the default dtype),
    exact while the result is representable."""
    x = _tensor_operand("ldexp", input, "input", 1)
    o = _tensor_operand("ldexp", other, "other", 2)
    a, b, _, ct = promote("ldexp", x, o, FLOATOP)
    if o._dtype is D.bool and x._dtype.category == _FLOAT:
        raise U.dtype_not_implemented("ldexp_cpu_exp", D.bool)
    return _scale2(a, b)


# -- nextafter --------------------------------------------------------------------------------------

def _nextafter_decomp(a, b):
    it = _BITS[a._dtype]
    bits = a.view(it)
    up = CMP.eq(CMP.lt(a, b), CMP.gt(a, 0))  # away from zero when moving outward
    step = PW.where(up, 1, -1).to(it)
    r = (bits + step).view(a._dtype)
    tiny = CR.ones(a._shape, dtype=it, device=a._device).view(a._dtype)  # the bits 1: the smallest subnormal
    r = PW.where(CMP.eq(a, 0), PW.copysign(tiny, b), r)
    r = PW.where(CMP.eq(a, b), b, r)
    return PW.where(CMP.logical_or(CMP.isnan(a), CMP.isnan(b)), math.nan, r)


def _nextafter_bw(ctx, g):
    a, b = ctx.args
    # PyTorch's: the gradient flows to ``input`` where it differs from ``other``, never to ``other``
    ga = PW.where(CMP.eq(a, b), 0.0, g) if ctx.needs_input_grad[0] else None
    return (ga, A.mul(g, 0) if len(ctx.needs_input_grad) > 1 and ctx.needs_input_grad[1] else None)


@defop("nextafter", decomposition=_nextafter_decomp, backward=_nextafter_bw, result="elementwise",
       inplace=True, group="binary")
def nextafter(input, other):
    """The next floating-point value after ``input`` towards ``other``."""
    x = _tensor_operand("nextafter", input, "input", 1)
    o = _tensor_operand("nextafter", other, "other", 2)
    a, b, dev, ct = promote("nextafter", x, o, ARITH)
    if ct.category != _FLOAT:
        raise U.dtype_not_implemented("nextafter_cpu", ct)
    return dev, (a, b), operands(a, b)


# -- gcd, lcm ---------------------------------------------------------------------------------------

def _gcd_decomp(a, b):
    shape = U.broadcast_all((a._shape, b._shape))
    a, b = UN.abs(a), UN.abs(b)
    while bool(R.any(CMP.ne(b, 0))):
        nz = CMP.ne(b, 0)
        safe = PW.where(nz, b, 1).to(b._dtype)
        a, b = PW.where(nz, b, a).to(a._dtype), PW.where(nz, A.remainder(a, safe), 0).to(b._dtype)
    return a.expand(shape).contiguous()


def _int_meta(name):
    def meta(input, other):
        x = _tensor_operand(name, input, "input", 1)
        o = _tensor_operand(name, other, "other", 2)
        a, b, dev, ct = promote(name, x, o, ARITH)
        if ct.category != D._INT:
            raise U.dtype_not_implemented(f"{name}_cpu", ct)
        return dev, (a, b), operands(a, b)
    meta.__name__ = meta.__qualname__ = name
    meta.__doc__ = ("The greatest common divisor of ``input`` and ``other`` (non-negative; 0 for two zeros)."
                    if name == "gcd" else "The least common multiple of ``input`` and ``other`` (non-negative).")
    return meta


def _lcm_decomp(a, b):
    g = _gcd_decomp(a, b)
    zero = CMP.eq(g, 0)
    return PW.where(zero, 0, UN.abs(A.mul(A.floor_divide(a, PW.where(zero, 1, g).to(g._dtype)), b))).to(g._dtype)


gcd = defop("gcd", _int_meta("gcd"), decomposition=_gcd_decomp, differentiable=False, inplace=True, group="binary")
gcd_ = gcd.inplace
lcm = defop("lcm", _int_meta("lcm"), decomposition=_lcm_decomp, differentiable=False, inplace=True, group="binary")
lcm_ = lcm.inplace
ldexp_ = ldexp.inplace
nextafter_ = nextafter.inplace
