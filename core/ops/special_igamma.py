"""The regularised incomplete gamma functions ``igamma(a, x) = P(a, x)`` and ``igammac(a, x) =
Q(a, x) = 1 - P(a, x)`` (``torch.special.gammainc`` and ``gammaincc``), written in ember ops.

Four formulas, each computed for the whole tensor and selected per element with ``where``:

* a >= 20 and 0.3 <= x / a <= 2.5: Temme's uniform expansion in eta (the coefficients c_k(eta)
  are stored as power series in ``_igamma_airy_tables``), with erfc written as exp(-z^2) erfcx(z)
  so that the smaller of P and Q keeps its relative accuracy;
* otherwise a < 1 and x < 2: a series of Q itself (1 - P would lose Q's relative accuracy as a
  goes to 0), and below x = a + 1 the power series of P;
* otherwise x < a + 1: the power series of P;
* otherwise: Legendre's continued fraction for Q, evaluated backwards from a fixed depth.

The prefactor x^a e^-x / Gamma(a + 1) is formed as exp(-a (lam - 1 - log lam)) / (sqrt(2 pi a)
Gamma*(a)) for a >= 10, which keeps the cancellation of a log x against lgamma(a + 1) out of it.
PyTorch's edge values: NaN for a negative argument, for a = x = 0 and for a = x = inf; P = 1 for
a = 0 < x or x = inf; P = 0 for x = 0 < a or a = inf. Only ``x`` (the second argument) is
differentiable, as in PyTorch: dP/dx = exp((a - 1) log x - x - lgamma(a)).
"""
from __future__ import annotations

import math

from .. import _dtype as D
from . import _args as U
from . import _igamma_airy_tables as TT
from . import _special_num as N
from . import _special_tables as TB
from . import comparison as CMP
from . import copy as CP
from . import pointwise as PW
from . import special_gamma as G
from . import unary as UN
from ._binary import binary_grads, operands
from .declare import defop

__all__ = ["igamma", "igamma_", "igammac", "igammac_"]

where = PW.where
_TEMME_A, _TEMME_LO, _TEMME_HI = 20.0, 0.3, 2.5
_SERIES_TERMS, _Q_SMALL_TERMS, _CF_DEPTH = 48, 30, 64
_STIRLING_A = 10.0


def _lam_minus_1_minus_log(t, lam):
    """lam - 1 - log(lam) for lam = 1 + t: through u = t / (2 + t) (log lam = 2 atanh u) where
    |t| is small, without the cancellation of the two terms."""
    near = CMP.logical_and(CMP.gt(t, -0.7), CMP.lt(t, 1.6))
    u = where(near, t / (t + 2.0), 0.0)
    u2 = u * u
    # t - 2 atanh(u) = 2 u^2 / (1 - u) - 2 (u^3 / 3 + u^5 / 5 + ...)
    odd = N.horner(u2, [1.0 / (2 * k + 3) for k in range(30)]) * u2 * u
    series = 2.0 * u2 / (1.0 - u) - 2.0 * odd
    return where(near, series, t - UN.log(lam))


def _log_gamma_star(a):
    """log Gamma*(a) = lgamma(a) - (a - 1/2) log a + a - log(2 pi) / 2 for a >= 10 (Stirling)."""
    inv = 1.0 / a
    return N.horner(inv * inv, [TB.BERNOULLI[k] / (2 * k * (2 * k - 1)) for k in range(1, 10)]) * inv


def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a + 1)) for a > 0, x > 0."""
    direct = a * UN.log(x) - x - G.lgamma(a + 1.0)
    big = CMP.ge(a, _STIRLING_A)
    ab = where(big, a, _STIRLING_A)
    lam = x / ab
    stir = -ab * _lam_minus_1_minus_log(lam - 1.0, lam) - 0.5 * UN.log(ab * (2.0 * math.pi)) - _log_gamma_star(ab)
    return where(big, stir, direct)


def _p_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum x^n / ((a + 1) ... (a + n)), for x < a + 1."""
    term = x / (a + 1.0)
    total = 1.0 + term
    for n in range(2, _SERIES_TERMS):
        term = term * x / (a + float(n))
        total = total + term
    return UN.exp(_log_prefactor(a, x)) * total


def _lgamma1p(a):
    """lgamma(1 + a) for 0 <= a < 1, with a's relative accuracy kept near 0."""
    small = CMP.lt(a, 0.25)
    return where(small, N.lgamma1p_small(where(small, a, 0.0)), G.lgamma(a + 1.0))


def _q_small_a(a, x):
    """Q(a, x) for a < 1, x < 2: 1 - x^a / Gamma(a + 1) - x^a / Gamma(a) sum_(n >= 1) (-x)^n / (n! (a + n))."""
    log_xa_g = a * UN.log(x) - _lgamma1p(a)
    head = -UN.expm1(log_xa_g)
    term = -x
    total = term / (a + 1.0)
    for n in range(2, _Q_SMALL_TERMS):
        term = term * x * (-1.0 / n)
        total = total + term / (a + float(n))
    return head - a * UN.exp(log_xa_g) * total


def _q_fraction(a, x):
    """Q(a, x) = x^a e^-x / Gamma(a) / (b_0 - a_1 / (b_1 - a_2 / (b_2 - ...))), b_n = x + 2n + 1 - a,
    a_n = n (n - a): Legendre's continued fraction, evaluated backwards from a fixed depth (x >= a + 1)."""
    base = x + 1.0 - a
    f = base + 2.0 * _CF_DEPTH
    for n in range(_CF_DEPTH, 0, -1):
        f = (base + 2.0 * (n - 1)) - (float(n) - a) * float(n) / f
    return UN.exp(_log_prefactor(a, x)) * a / f


def _temme(a, x):
    """(P, Q) by Temme's uniform expansion, for a >= 20 and x / a near 1."""
    lam = x / a
    t = lam - 1.0
    d = _lam_minus_1_minus_log(t, lam)
    eta = UN.sqrt(2.0 * d)
    eta = where(CMP.lt(t, 0.0), -eta, eta)
    inv_a = 1.0 / a
    total = N.horner(eta, list(TT.TEMME[-1]))
    for row in reversed(TT.TEMME[:-1]):
        total = total * inv_a + N.horner(eta, list(row))
    e = UN.exp(-a * d)
    r = e * total / UN.sqrt(a * (2.0 * math.pi))
    z = UN.abs(eta) * UN.sqrt(a * 0.5)
    half_erfc = e * N.erfcx(z) * 0.5  # erfc(|eta| sqrt(a / 2)) / 2
    upper = CMP.ge(eta, 0.0)
    small = where(upper, half_erfc + r, half_erfc - r)  # Q above the transition, P below it
    return where(upper, 1.0 - small, small), where(upper, small, 1.0 - small)


def incomplete_gamma(a, x):
    """(P(a, x), Q(a, x)) on two float tensors of one dtype (broadcast), with PyTorch's edge values."""
    shape = tuple(U.broadcast_all([tuple(a._shape), tuple(x._shape)], "igamma"))
    a, x = a.expand(shape), x.expand(shape)
    finite_pos = CMP.logical_and(CMP.logical_and(CMP.gt(a, 0.0), CMP.gt(x, 0.0)),
                                 CMP.logical_and(CMP.isfinite(a), CMP.isfinite(x)))
    a1 = where(finite_pos, a, 1.0)
    x1 = where(finite_pos, x, 1.0)
    lam = x1 / a1
    temme = CMP.logical_and(CMP.ge(a1, _TEMME_A), CMP.logical_and(CMP.ge(lam, _TEMME_LO), CMP.le(lam, _TEMME_HI)))
    series = CMP.logical_and(CMP.logical_not(temme), CMP.lt(x1, a1 + 1.0))
    fraction = CMP.logical_not(CMP.logical_or(temme, series))
    q_small = CMP.logical_and(CMP.logical_not(temme), CMP.logical_and(CMP.lt(a1, 1.0), CMP.lt(x1, 2.0)))

    # each formula on arguments inside its range (1 elsewhere), so that no element overflows
    p_ser = _p_series(where(series, a1, 1.0), where(series, x1, 0.5))
    q_sa = _q_small_a(where(q_small, a1, 0.5), where(q_small, x1, 0.5))
    q_cf = _q_fraction(where(fraction, a1, 1.0), where(fraction, x1, 3.0))
    p_tm, q_tm = _temme(where(temme, a1, _TEMME_A), where(temme, x1, _TEMME_A))

    p = where(temme, p_tm, where(series, p_ser, where(q_small, 1.0 - q_sa, 1.0 - q_cf)))
    q = where(temme, q_tm, where(q_small, q_sa, where(series, 1.0 - p_ser, q_cf)))

    # the edge values
    zero_a = CMP.logical_and(CMP.eq(a, 0.0), CMP.gt(x, 0.0))          # P = 1 (x = inf included)
    inf_x = CMP.logical_and(CMP.eq(x, math.inf), CMP.gt(a, 0.0))      # P = 1
    zero_x = CMP.logical_and(CMP.eq(x, 0.0), CMP.gt(a, 0.0))          # P = 0 (a = inf included)
    inf_a = CMP.logical_and(CMP.eq(a, math.inf), CMP.gt(x, 0.0))      # P = 0
    one = CMP.logical_or(zero_a, inf_x)
    nil = CMP.logical_or(zero_x, inf_a)
    p = where(one, 1.0, where(nil, 0.0, p))
    q = where(one, 0.0, where(nil, 1.0, q))
    bad = CMP.logical_or(CMP.logical_or(CMP.lt(a, 0.0), CMP.lt(x, 0.0)),
                         CMP.logical_or(CMP.logical_and(one, nil), CMP.logical_or(CMP.isnan(a), CMP.isnan(x))))
    bad = CMP.logical_or(bad, CMP.logical_and(CMP.eq(a, 0.0), CMP.eq(x, 0.0)))
    return where(bad, math.nan, p), where(bad, math.nan, q)


# -- the ops ------------------------------------------------------------------------------------

def _meta(name):
    def meta(input, other):
        a = U.tensor_arg(input, name, "input", 1)
        b = U.tensor_arg(other, name, "other", 2)
        ct = a._dtype if a._dtype is b._dtype else D.result_type(a, b)
        if ct.category != D._FLOAT:
            raise U.dtype_not_implemented(f"{name}_cpu", ct)
        dev = a._device if b._device is a._device else U.common_device(name, a, b)
        if a._shape != b._shape:
            U.broadcast_shapes(a._shape, b._shape, name)
        a = a if a._dtype is ct else CP.cast(a, ct, name)
        b = b if b._dtype is ct else CP.cast(b, ct, name)
        return dev, (a, b), operands(a, b)
    meta.__name__ = meta.__qualname__ = name
    return meta


def _decomposition(which):
    def run(a, x):
        dt = a._dtype
        return U.from_opmath(incomplete_gamma(U.opmath(a), U.opmath(x))[which], dt)
    run.__name__ = ("_igamma", "_igammac")[which]
    return run


def _density(a, x):
    """dP/dx as PyTorch forms it: exp((a - 1) log x - x - lgamma(a))."""
    return UN.exp((a - 1.0) * UN.log(x) - x - G.lgamma(a))


def _backward(name, sign):
    def bw_a(g, a, x):
        raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")

    def bw_x(g, a, x):
        return g * _density(a, x) if sign > 0 else -(g * _density(a, x))
    return lambda ctx, g: binary_grads(ctx, g, bw_a, bw_x)


igamma = defop("igamma", _meta("igamma"), decomposition=_decomposition(0), backward=_backward("igamma", 1),
               result="elementwise", inplace=True, group="special", module=__name__,
               doc="The regularised lower incomplete gamma function P(input, other) (torch.special.gammainc; "
                   "differentiable with respect to ``other`` only, as in PyTorch).")
igammac = defop("igammac", _meta("igammac"), decomposition=_decomposition(1), backward=_backward("igammac", -1),
                result="elementwise", inplace=True, group="special", module=__name__,
                doc="The regularised upper incomplete gamma function Q(input, other) = 1 - P(input, other) "
                    "(torch.special.gammaincc; differentiable with respect to ``other`` only, as in PyTorch).")
igamma_, igammac_ = igamma.inplace, igammac.inplace
