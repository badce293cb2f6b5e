"""The normal distribution and error-function family (``special.ndtr``, ``ndtri``, ``log_ndtr``,
``erfcx``), ``entr`` and ``xlog1py``, and the Bessel functions (``i0`` and ``special.i0e``,
``i1``, ``i1e``, ``modified_bessel_i0/i1``, ``spherical_bessel_j0``), written in ember ops
(:mod:`ember.ops._special_num` holds the numerics).

The ops of ``torch.special`` only are declared with PyTorch's names (``special_ndtr``...) and
reached as ``ember.special.ndtr``; ``i0`` is also ``ember.i0`` and a Tensor method, as in PyTorch.
The Bessel functions that PyTorch does not differentiate (``modified_bessel_*``,
``spherical_bessel_j0``) are not differentiable here either.
"""
from __future__ import annotations

import math

from .._tensor import Tensor
from . import _args as U
from . import _special_num as N
from . import comparison as CMP
from . import creation as CR
from . import pointwise as PW
from . import unary as UN
from ._binary import FLOATOP, binary_grads, operands, promote
from .declare import defop

__all__ = ["i0", "i0_"]

where = PW.where
PI = math.pi
SQRT1_2 = math.sqrt(0.5)
SQRT_2PI = math.sqrt(2.0 * PI)


def _opmath(fn):
    def run(x, *args):
        dt = x._dtype
        return U.from_opmath(fn(U.opmath(x), *args), dt)
    run.__name__ = fn.__name__
    return run


def _unary(name, decomposition, backward, doc, **kw):
    decomposition = _opmath(decomposition) if backward is not None else N.detached(_opmath(decomposition))
    return defop(name, UN.unary_meta(name, UN.FLOAT), decomposition=decomposition, backward=backward,
                 differentiable=backward is not None, result="elementwise", group="special", doc=doc,
                 module=__name__, **kw)


def _x(ctx):
    return ctx.args[0]


# -- the normal distribution --------------------------------------------------------------------

def _ndtr(x):
    return N.erfc_accurate(-x * SQRT1_2) * 0.5


def _log_ndtr(x):
    left = UN.log(N.erfcx(-x * SQRT1_2) * 0.5) - x * x * 0.5
    right = N.log1p_accurate(N.erfc_accurate(x * SQRT1_2) * -0.5)
    mid = UN.log(_ndtr(x))
    r = where(CMP.lt(x, -1.0), left, where(CMP.lt(x, 0.0), mid, right))
    return where(CMP.eq(x, -math.inf), -math.inf, r)


# A&S 26.2.23: a start within 4.5e-4 of ndtri(p) for p <= 1/2
_AS_NUM = (2.515517, 0.802853, 0.010328)
_AS_DEN = (1.0, 1.432788, 0.189269, 0.001308)


def _ndtri_low(q):
    """ndtri(q) for 0 < q < 1/4: three Newton steps on log_ndtr(x) = log(q)."""
    q = where(CMP.gt(q, 0.0), q, 0.25)
    lq = UN.log(q)
    t = UN.sqrt(lq * -2.0)
    x = -(t - N.horner(t, _AS_NUM) / N.horner(t, _AS_DEN))
    for _ in range(4):
        x = x - (_log_ndtr(x) - lq) * N.erfcx(-x * SQRT1_2) * math.sqrt(PI / 2.0)
    return x


def _ndtri(p):
    tail_q = where(CMP.gt(p, 0.5), 1.0 - p, p)
    low = _ndtri_low(tail_q)
    tail = where(CMP.gt(p, 0.5), -low, low)
    mid = UN.erfinv(PW.clamp(p * 2.0 - 1.0, -0.5, 0.5)) * math.sqrt(2.0)
    r = where(CMP.le(UN.abs(p - 0.5), 0.25), mid, tail)
    r = where(CMP.eq(p, 0.0), -math.inf, where(CMP.eq(p, 1.0), math.inf, r))
    bad = CMP.logical_or(CMP.logical_or(CMP.lt(p, 0.0), CMP.gt(p, 1.0)), CMP.isnan(p))
    return where(bad, math.nan, r)


special_ndtr = _unary("special_ndtr", _ndtr, lambda ctx, g: (g * UN.exp(_x(ctx) * _x(ctx) * -0.5) / SQRT_2PI,),
                      "The standard normal cumulative distribution function.", method=False)
special_log_ndtr = _unary(
    "special_log_ndtr", _log_ndtr,
    lambda ctx, g: (g * UN.exp(-(ctx.out + _x(ctx) * _x(ctx) * 0.5)) / SQRT_2PI,), "log(ndtr(input)), accurate "
    "in both tails.", method=False, save_output=True)
special_ndtri = _unary("special_ndtri", _ndtri, lambda ctx, g: (g * SQRT_2PI * UN.exp(ctx.out * ctx.out * 0.5),),
                       "The inverse of ndtr: the standard normal quantile of ``input`` in [0, 1].", method=False,
                       saves=(), save_output=True)
special_erfcx = _unary("special_erfcx", N.erfcx,
                       lambda ctx, g: (g * (2.0 * _x(ctx) * ctx.out - 2.0 / math.sqrt(PI)),),
                       "The scaled complementary error function exp(input^2) erfc(input).", method=False,
                       save_output=True)


# -- entr, xlog1py -----------------------------------------------------------------------------

def _entr(x):
    r = where(CMP.gt(x, 0.0), -x * UN.log(where(CMP.gt(x, 0.0), x, 1.0)), x * 0.0)
    return where(CMP.lt(x, 0.0), -math.inf, r)


special_entr = _unary("special_entr", _entr, lambda ctx, g: (-g * (UN.log(_x(ctx)) + 1.0),),
                      "-input log(input) for input > 0, 0 at 0, -inf below.", method=False)


def _xlog1py_decomp(a, b):
    like = b if isinstance(b, Tensor) else a
    a = a if isinstance(a, Tensor) else CR.full_like(like, a)
    b = b if isinstance(b, Tensor) else CR.full_like(like, b)
    dt = a._dtype
    a, b = U.opmath(a), U.opmath(b)
    r = a * N.log1p_accurate(b)
    zero = CMP.logical_and(CMP.eq(a, 0.0), CMP.logical_not(CMP.isnan(b)))
    return U.from_opmath(where(zero, 0.0, r), dt)


def _xlog1py_bw_a(g, a, b):
    lb = UN.log1p(b) if isinstance(b, Tensor) else math.log1p(b) if b > -1 else (-math.inf if b == -1 else math.nan)
    d = g * lb
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return where(CMP.logical_and(CMP.eq(a, 0.0), CMP.le(b, -1.0)), 0.0, d)
    return d


def _xlog1py_bw_b(g, a, b):
    return g * a / (b + 1.0)


@defop("special_xlog1py", decomposition=_xlog1py_decomp,
       backward=lambda ctx, g: binary_grads(ctx, g, _xlog1py_bw_a, _xlog1py_bw_b), result="elementwise",
       method=False, group="special")
def special_xlog1py(input, other):
    """``input * log1p(other)``, and 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    a, b, dev, _ = promote("special_xlog1py", input, other, FLOATOP)
    return dev, (a, b), operands(a, b)


# -- Bessel functions ---------------------------------------------------------------------------

def _i0(x):
    return N.bessel_i_scaled(x, 0)[1]


def _i0e(x):
    return N.bessel_i_scaled(x, 0)[0]


def _i1(x):
    return N.bessel_i_scaled(x, 1)[1]


def _i1e(x):
    return N.bessel_i_scaled(x, 1)[0]


def _at_zero_half(x, d):
    return where(CMP.eq(x, 0.0), 0.5, d)


i0 = _unary("i0", _i0, lambda ctx, g: (g * special_i1(_x(ctx)),),
            "The modified Bessel function of the first kind of order 0.", inplace=True)
i0_ = i0.inplace
special_i0e = _unary("special_i0e", _i0e,
                     lambda ctx, g: (g * (special_i1e(_x(ctx)) - UN.sign(_x(ctx)) * ctx.out),),
                     "exp(-|input|) i0(input).", method=False, save_output=True)
special_i1 = _unary("special_i1", _i1,
                    lambda ctx, g: (g * _at_zero_half(_x(ctx), i0(_x(ctx)) - ctx.out / _x(ctx)),),
                    "The modified Bessel function of the first kind of order 1.", method=False, save_output=True)
special_i1e = _unary(
    "special_i1e", _i1e,
    lambda ctx, g: (g * _at_zero_half(_x(ctx), special_i0e(_x(ctx)) - ctx.out * (UN.sign(_x(ctx))
                                                                                 + 1.0 / _x(ctx))),),
    "exp(-|input|) i1(input).", method=False, save_output=True)
special_modified_bessel_i0 = _unary("special_modified_bessel_i0", _i0, None,
                                    "I0, as ``i0`` (not differentiable, as in PyTorch).", method=False)
special_modified_bessel_i1 = _unary("special_modified_bessel_i1", _i1, None,
                                    "I1, as ``special.i1`` (not differentiable, as in PyTorch).", method=False)


def _spherical_j0(x):
    safe = where(CMP.eq(x, 0.0), 1.0, x)
    r = where(CMP.eq(x, 0.0), 1.0, UN.sin(safe) / safe)
    return where(CMP.isinf(x), 0.0, r)


special_spherical_bessel_j0 = _unary("special_spherical_bessel_j0", _spherical_j0, None,
                                     "sin(input) / input, 1 at 0 (not differentiable, as in PyTorch).",
                                     method=False)
