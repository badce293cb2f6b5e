"""The Airy function ``special.airy_ai``, written in ember ops.

On [-12, 10) Taylor polynomials about the centres of half-unit pieces (``_igamma_airy_tables``,
generated with mpmath from Ai'' = x Ai); above 10 the asymptotic series of exp(zeta) x^(1/4) Ai(x)
in 1 / zeta, zeta = 2/3 x^(3/2) (its error is below exp(-2 zeta), 1e-18 there); below -12 the
two asymptotic series of the oscillating form, with the sine and cosine of zeta itself (the phase
is as accurate as zeta's rounding: |x| = 1000 gives an absolute error near 1e-12).

As in PyTorch: NaN at +-inf, results below the dtype's smallest normal number are 0, integer
inputs compute in the default float dtype, float16 and bfloat16 are refused, and the function is
not differentiable (its result does not require grad).
"""
from __future__ import annotations

import math

from .. import _dtype as D
from . import _args as U
from . import _igamma_airy_tables as TT
from . import _special_num as N
from . import comparison as CMP
from . import copy as CP
from . import pointwise as PW
from . import unary as UN
from .declare import defop

__all__: list = []

where = PW.where


def _u_coefficients(n):
    """u_k of the asymptotic expansions (DLMF 9.7.2): u_k = (6k-5)(6k-3)(6k-1) / (216 k (2k-1)) u_(k-1)."""
    u = [1.0]
    for k in range(1, n):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216.0 * k * (2 * k - 1)))
    return u


# enough terms for 1e-18 at zeta = 21 (x = 10) and beyond, few enough that u_k fits in float32
_U = _u_coefficients(24)


def _ai_right(x):
    """Ai(x) for x >= 10."""
    zeta = x * UN.sqrt(x) * (2.0 / 3.0)
    series = N.horner(-1.0 / zeta, _U)
    return UN.exp(-zeta) * series / (UN.sqrt(UN.sqrt(x)) * (2.0 * math.sqrt(math.pi)))


def _ai_left(x):
    """Ai(x) for x <= -12: (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) z^(1/4)), z = -x."""
    z = -x
    zeta = z * UN.sqrt(z) * (2.0 / 3.0)
    w = -1.0 / (zeta * zeta)
    p = N.horner(w, _U[0:22:2])
    q = N.horner(w, _U[1:22:2]) / zeta
    s, c = UN.sin(zeta), UN.cos(zeta)
    # cos(zeta - pi/4) = (c + s) / sqrt 2, sin(zeta - pi/4) = (s - c) / sqrt 2
    return ((c + s) * p + (s - c) * q) / (UN.sqrt(UN.sqrt(z)) * math.sqrt(2.0 * math.pi))


def _airy_ai(x):
    lo, hi = TT.AIRY_LO, TT.AIRY_HI
    mid = N.piecewise_taylor(x, TT.AIRY_TAYLOR, lo, TT.AIRY_H)
    right = _ai_right(where(CMP.ge(x, hi), x, hi))
    left = _ai_left(where(CMP.lt(x, lo), x, lo))
    r = where(CMP.ge(x, hi), right, where(CMP.lt(x, lo), left, mid))
    r = where(CMP.logical_and(CMP.gt(x, 0.0), CMP.lt(r, D.finfo(x.dtype).tiny)), 0.0, r)
    return where(CMP.logical_or(CMP.isinf(x), CMP.isnan(x)), math.nan, r)


def _meta(x):
    t = U.tensor_arg(x, "special_airy_ai", "x")
    dt = t._dtype
    if dt.category == D._COMPLEX or (dt.category == D._FLOAT and dt.itemsize == 2):
        raise U.dtype_not_implemented("airy_ai_cpu", dt)
    if dt.category != D._FLOAT:
        t = CP.cast(t, D.get_default_dtype())
    return t._device, (t,), (t,)


special_airy_ai = defop("special_airy_ai", _meta, decomposition=N.detached(_airy_ai), differentiable=False,
                        result="elementwise", method=False, group="special", module=__name__,
                        doc="The Airy function Ai(x) (not differentiable, as in PyTorch).")
