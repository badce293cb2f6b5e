"""The gamma family: lgamma, digamma, polygamma, mvlgamma and the Hurwitz zeta function
(``special.zeta``), written in ember ops (:mod:`ember.ops._special_num` holds the numerics).

The values at the poles, infinities and NaN are PyTorch's: lgamma is +inf at 0, the negative
integers and +-inf; digamma is -inf at +0, +inf at -0 and NaN at the negative integers and -inf;
polygamma(1, x) uses the reflection formula with ``sin(pi * x)`` as PyTorch does (so it is large
and finite, not inf, at the negative integers), and polygamma(n >= 2) and zeta follow the Cephes
conventions that PyTorch keeps (zeta(s, q) is inf for s == 1 or q a non-positive integer, NaN for
s < 1 or a negative non-integer q with a non-integer s).
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import _special_num as N
from . import arithmetic as A
from . import comparison as CMP
from . import creation as CR
from . import pointwise as PW
from . import unary as UN
from ._binary import FLOATOP, binary_grads, operands, promote
from .declare import composite, defop

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma"]

where = PW.where
PI = math.pi


def _opmath(fn):
    """Run ``fn`` on a tensor in its compute dtype (float16/bfloat16 in float32)."""
    def run(x, *args):
        dt = x._dtype
        return U.from_opmath(fn(U.opmath(x), *args), dt)
    run.__name__ = fn.__name__
    return run


def _unary_defop(name, decomposition, backward, doc, **kw):
    return defop(name, UN.unary_meta(name, UN.FLOAT), decomposition=_opmath(decomposition), backward=backward,
                 result="elementwise", group="special", doc=doc, module=__name__, **kw)


# -- lgamma -------------------------------------------------------------------------------------

def _lgamma(x):
    neg = CMP.lt(x, 0.0)  # the reflection for x < 0 only (lgamma_ge_half is exact to 0)
    y = where(neg, 1.0 - x, x)
    lg = N.lgamma_ge_half(y)
    refl = (math.log(PI) - UN.log(UN.abs(N.sinpi(x)))) - lg  # (pi / sin overflows for subnormal x)
    r = where(neg, refl, lg)
    ax = UN.abs(x)
    r = where(CMP.logical_and(CMP.lt(ax, 1e-20), CMP.gt(ax, 0.0)), -UN.log(ax), r)  # -log|x| - gamma x
    r = where(CMP.isnan(x), x, r)
    return where(N.is_nonpos_int(x), math.inf, r)


lgamma = _unary_defop("lgamma", _lgamma, lambda ctx, g: (g * digamma(ctx.args[0]),),
                      "log |Gamma(input)| (+inf at the poles)", inplace=True)
lgamma_ = lgamma.inplace


# -- digamma ------------------------------------------------------------------------------------

def _digamma(x):
    neg = CMP.lt(x, 0.0)  # the reflection for x < 0 only (the recurrence is exact to 0)
    y = where(neg, 1.0 - x, x)
    psi = N.digamma_ge_half(y)
    refl = psi - PI * N.cospi(x) / N.sinpi(x)
    r = where(neg, refl, psi)
    r = where(N.is_nonpos_int(x), math.nan, r)
    zero = CMP.eq(x, 0.0)
    return where(zero, where(CMP.signbit(x), math.inf, -math.inf), r)


digamma = _unary_defop("digamma", _digamma, lambda ctx, g: (g * polygamma(1, ctx.args[0]),),
                       "the logarithmic derivative of Gamma (-inf at +0, +inf at -0, NaN at the negative integers)",
                       inplace=True)
digamma_ = digamma.inplace


# -- the Hurwitz zeta function ------------------------------------------------------------------

def zeta_values(s, q):
    """zeta(s, q) on two tensors of one dtype (broadcast), with PyTorch's conventions."""
    q_pos = where(CMP.gt(q, 0.0), q, 1.0)
    pos = N.hurwitz_zeta_pos(s, q_pos)
    # q < 0, not an integer, s an integer: the terms with q + n < 0 are (-1)^s (r + j)^-s
    m = UN.ceil(-q)
    qm = where(CMP.lt(q, 0.0), q + m, 0.5)
    r = where(CMP.lt(q, 0.0), -(q + (m - 1.0)), 0.5)  # exact: q + (m - 1) is in (-1, 0)
    far = where(CMP.lt(q, 0.0), 1.0 - q, 1.5)
    sign = 1.0 - 2.0 * A.remainder(s, 2.0)
    # (zeta(s, qm) + sign zeta(s, r)) first: the two cancel exactly when qm == r (half-integer q)
    neg = (N.hurwitz_zeta_pos(s, qm) + sign * N.hurwitz_zeta_pos(s, r)) - sign * N.hurwitz_zeta_pos(s, far)
    out = where(CMP.gt(q, 0.0), pos, neg)
    out = where(CMP.logical_and(CMP.lt(q, 0.0), CMP.ne(UN.floor(s), s)), math.nan, out)
    s_inf = CMP.eq(s, math.inf)
    out = where(s_inf, where(CMP.gt(q, 1.0), math.nan, where(CMP.eq(q, 1.0), 1.0, math.inf)), out)
    out = where(CMP.eq(q, math.inf), math.nan, out)
    out = where(CMP.logical_or(CMP.isnan(s), CMP.isnan(q)), math.nan, out)
    out = where(N.is_nonpos_int(q), math.inf, out)
    out = where(CMP.eq(s, 1.0), math.inf, out)
    return where(CMP.lt(s, 1.0), math.nan, out)


def _zeta_decomp(s, q):
    like = q if isinstance(q, Tensor) else s
    s = s if isinstance(s, Tensor) else CR.full_like(like, s)
    q = q if isinstance(q, Tensor) else CR.full_like(like, q)
    dt = s._dtype
    return U.from_opmath(zeta_values(U.opmath(s), U.opmath(q)), dt)


def _zeta_bw_s(g, s, q):
    raise RuntimeError("the derivative for 'zeta' is not implemented.")


def _zeta_bw_q(g, s, q):
    return -g * s * special_zeta(s + 1.0, q)


@defop("special_zeta", decomposition=_zeta_decomp, backward=lambda ctx, g: binary_grads(ctx, g, _zeta_bw_s, _zeta_bw_q),
       result="elementwise", method=False, group="special")
def special_zeta(input, other):
    """The Hurwitz zeta function zeta(input, other) = sum over n >= 0 of (other + n)^-input
    (torch.special.zeta; differentiable with respect to ``other`` only, as in PyTorch)."""
    a, b, dev, _ = promote("special_zeta", input, other, FLOATOP)
    return dev, (a, b), operands(a, b)


# -- polygamma ----------------------------------------------------------------------------------

def _trigamma(x):
    # PyTorch's reflection: pi^2 / sin(pi x)^2 - psi1(1 - x), with sin(pi * x) as it rounds
    neg = CMP.lt(x, 0.5)
    y = where(neg, 1.0 - x, x)
    two = CR.full_like(y, 2.0)
    psi1 = N.hurwitz_zeta_pos(two, where(CMP.eq(y, math.inf), 1.0, y))
    psi1 = where(CMP.eq(y, math.inf), 0.0, psi1)
    s = UN.sin(x * PI)
    return where(neg, (PI * PI) / (s * s) - psi1, psi1)


def _polygamma_decomp(x, n):
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    s = CR.full_like(x, float(n + 1))
    return zeta_values(s, x) * ((-1.0) ** (n + 1) * math.factorial(n))


def _polygamma_bw(ctx, g):
    x, n = ctx.args
    return (g * polygamma(n + 1, x),)


@defop("polygamma", decomposition=_opmath(_polygamma_decomp), backward=_polygamma_bw, saves=(0,), method=False,
       group="special")
def polygamma(n, input):
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, input)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = UN.unary_meta("polygamma", UN.FLOAT)(input)[1][0]
    return x._device, (x, n), (x,)


def tensor_polygamma(self, n):
    """``polygamma(n, self)``."""
    return polygamma(n, self)


def tensor_polygamma_(self, n):
    """``self`` overwritten with ``polygamma(n, self)``."""
    return self.copy_(polygamma(n, self))


# -- mvlgamma -----------------------------------------------------------------------------------

@composite("mvlgamma", inplace=True, group="special")
def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension ``p``: the sum of lgamma(input - i / 2)
    over i < p, plus p (p - 1) / 4 log(pi)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = U.tensor_arg(input, "mvlgamma")
    if x._dtype.category != D._FLOAT:
        x = x.to(D.get_default_dtype())
    total = lgamma(x + 0.0)  # x - 0 / 2 as PyTorch forms it: -0.0 becomes +0.0 (its gradient is digamma(+0))
    for i in range(1, p):
        total = total + lgamma(x - i / 2.0)
    return total + p * (p - 1) / 4.0 * math.log(PI)


mvlgamma_ = mvlgamma.inplace
