"""The numerical building blocks of the special functions, written in ember ops so that they run
on every backend: polynomial evaluation, sin(pi x) without the rounding of pi x, the Hurwitz zeta
function by Euler-Maclaurin summation, log-gamma and digamma for x >= 1/2, the scaled
complementary error function erfcx and the modified Bessel functions I0, I1 (scaled).

Each function takes and returns tensors of one floating dtype (the caller computes float16 and
bfloat16 in float32) and is branch-free: every branch is computed and the right one selected with
``where``, so that an element's value never depends on the others. Constants come from
:mod:`ember.ops._special_tables` (generated with mpmath).
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .. import _state
from . import _special_tables as TB
from . import arithmetic as A
from . import comparison as CMP
from . import creation as CR
from . import indexing as IX
from . import pointwise as PW
from . import unary as UN

__all__ = ["horner", "sinpi", "cospi", "hurwitz_zeta_pos", "lgamma_ge_half", "lgamma1p_small", "digamma_ge_half",
           "erfcx", "erfc_accurate", "bessel_i_scaled", "is_nonpos_int", "log1p_accurate", "detached"]

where = PW.where
PI = math.pi
_SHIFT = 10.0  # the recurrences shift the argument to >= 10 before the asymptotic series


def horner(x, coeffs):
    """``sum(coeffs[k] * x**k)``, coefficients lowest first (python numbers)."""
    r = CR.full_like(x, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        r = r * x + c
    return r


def is_nonpos_int(x):
    """Where ``x`` is 0, a negative integer or -inf."""
    return CMP.logical_and(CMP.le(x, 0.0), CMP.eq(UN.floor(x), x))


def _reduce2(x):
    """``x - 2 round(x / 2)``, in [-1, 1] and exact."""
    return x - UN.round(x * 0.5) * 2.0


def sinpi(x):
    """sin(pi x), exact at the integers (0) and accurate for large x."""
    r = _reduce2(x)
    r = where(CMP.gt(r, 0.5), 1.0 - r, where(CMP.lt(r, -0.5), -1.0 - r, r))
    return UN.sin(r * PI)


def cospi(x):
    """cos(pi x), exact (0) at the half-integers."""
    r = UN.abs(_reduce2(x))
    return sinpi(0.5 - r)


def hurwitz_zeta_pos(s, q, terms: int = 9):
    """zeta(s, q) = sum over n >= 0 of (q + n)^-s for s > 1, q > 0: ``terms`` terms summed, the
    rest by the Euler-Maclaurin formula with 12 Bernoulli terms."""
    total = A.pow(q, -s)
    for n in range(1, terms):
        total = total + A.pow(q + float(n), -s)
    a = q + float(terms)
    b = A.pow(a, -s)
    total = total + A.pow(a, 1.0 - s) / (s - 1.0) + b * 0.5
    # sum_k B_2k / (2k)! * s (s + 1) ... (s + 2k - 2) * a^(-s - 2k + 1), each term from the last
    # (so that a tail that underflows gives 0, not 0 * inf)
    inv_a2 = 1.0 / (a * a)
    term = s * b / a
    for k in range(1, 13):
        total = total + term * (TB.BERNOULLI[k] / math.factorial(2 * k))
        term = term * (s + float(2 * k - 1)) * inv_a2 * (s + float(2 * k))
    return total


def _shift_count(x):
    """How many unit steps take ``x`` (> 0) to at least 10, as a float tensor."""
    return UN.ceil(PW.clamp(_SHIFT - x, min=0.0))


def _stirling(z):
    """lgamma(z) for z >= 10: Stirling's series with 9 terms."""
    lz = UN.log(z)
    inv = 1.0 / z
    inv2 = inv * inv
    series = horner(inv2, [TB.BERNOULLI[k] / (2 * k * (2 * k - 1)) for k in range(1, 10)]) * inv
    return (z - 0.5) * lz - z + 0.5 * math.log(2 * PI) + series


_LG1 = [0.0, -TB.EULER_GAMMA] + [(-1) ** k * (TB.ZETA_M1[k] + 1.0) / k for k in range(2, 31)]
_LG2 = [0.0, 1.0 - TB.EULER_GAMMA] + [(-1) ** k * TB.ZETA_M1[k] / k for k in range(2, 61)]


def lgamma_ge_half(y):
    """lgamma(y) for y > 0 (inf stays inf): the series of lgamma(1 + t) on [0.75, 1.25], of
    lgamma(2 + t) on [1.25, 3) (and for y + 1 on (0, 0.75)), the recurrence down to [2, 3)
    below 10 (a sum of positive terms), Stirling's series above."""
    n = PW.clamp(UN.floor(y) - 2.0, 0.0, 7.0)
    mid_range = CMP.logical_and(CMP.ge(y, 3.0), CMP.lt(y, 10.0))
    u = where(mid_range, y - n, y)
    prod = CR.ones_like(y)
    for k in range(7):
        prod = prod * where(CMP.logical_and(mid_range, CMP.gt(n, float(k))), u + float(k), 1.0)
    t2 = where(CMP.lt(u, 10.0), u - 2.0, 0.0)
    mid = horner(t2, _LG2) + UN.log(prod)
    t1 = where(CMP.lt(y, 1.25), y - 1.0, 0.0)
    near1 = horner(t1, _LG1)
    below = horner(t1, _LG2) - UN.log(y)  # lgamma(y + 1) - log(y)
    big = where(CMP.eq(y, math.inf), y, _stirling(where(CMP.ge(y, 10.0), y, 10.0)))
    r = where(CMP.ge(y, 10.0), big, mid)
    r = where(CMP.lt(y, 1.25), near1, r)
    return where(CMP.lt(y, 0.75), below, r)


def lgamma1p_small(t):
    """lgamma(1 + t) for |t| <= 1/4 from t itself (no rounding of 1 + t): its series about 1."""
    return horner(t, _LG1)


def digamma_ge_half(y):
    """digamma(y) for y > 0: the recurrence up to 10 and the asymptotic series."""
    cnt = _shift_count(y)
    acc = CR.zeros_like(y)
    for k in range(10):
        acc = acc + where(CMP.gt(cnt, float(k)), 1.0 / (y + float(k)), 0.0)
    z = y + cnt
    inv2 = 1.0 / (z * z)
    series = horner(inv2, [0.0] + [TB.BERNOULLI[k] / (2 * k) for k in range(1, 10)])
    return UN.log(z) - 0.5 / z - series - acc


_TABLES: dict = {}


def _table(rows, like):
    """``rows`` (a tuple of tuples of floats) as a tensor of ``like``'s dtype and device, cached."""
    key = (id(rows), like._device, like._dtype)
    t = _TABLES.get(key)
    if t is None:
        t = _TABLES[key] = CR.tensor([list(r) for r in rows], dtype=like._dtype, device=like._device)
    return t


def piecewise_taylor(x, rows, start: float, h: float):
    """The Taylor polynomial of the piece of ``x``: ``rows[i]`` holds the coefficients (lowest
    first) about the centre of [start + i h, start + (i + 1) h); outside the pieces the nearest
    piece is used (the caller selects another formula there)."""
    n = len(rows)
    xs = PW.clamp(where(CMP.isnan(x), start, x), start, start + n * h)
    idx = PW.clamp(UN.floor((xs - start) / h), 0.0, n - 1.0)
    t = (xs - start - (idx + 0.5) * h).reshape(-1)
    coeffs = IX.index_select(_table(rows, x), 0, idx.reshape(-1).to(dtype=D.int64))
    ncol = coeffs.shape[1]
    r = coeffs[:, ncol - 1]
    for j in range(ncol - 2, -1, -1):
        r = r * t + coeffs[:, j]
    return r.reshape(x.shape)


def _erfcx_nonneg(x):
    """erfcx(x) for x >= 0 (inf gives 0): the Taylor pieces below ERFCX_END, the asymptotic
    series above."""
    end = TB.ERFCX_END
    pieces = piecewise_taylor(x, TB.ERFCX_TAYLOR, 0.0, TB.ERFCX_H)
    xa = where(CMP.lt(x, end), end, x)  # the asymptotic series where it is used, harmless elsewhere
    inv2 = 1.0 / (2.0 * xa * xa)
    coeffs = [1.0]
    for k in range(1, 16):
        coeffs.append(coeffs[-1] * -(2 * k - 1))
    asym = horner(inv2, coeffs) / (xa * math.sqrt(PI))
    asym = where(CMP.eq(x, math.inf), 0.0, asym)
    return where(CMP.lt(x, end), pieces, asym)


def _exp_neg_square(x):
    """exp(-x^2) without the rounding of x^2: x = hi + lo with hi on a 1/16 grid."""
    hi = UN.trunc(x * 16.0) / 16.0
    rest = where(CMP.isinf(x), 0.0, (x - hi) * (x + hi))
    return UN.exp(-(hi * hi)) * UN.exp(-rest)


def _exp_square(x):
    hi = UN.trunc(x * 16.0) / 16.0
    rest = where(CMP.isinf(x), 0.0, (x - hi) * (x + hi))
    return UN.exp(hi * hi) * UN.exp(rest)


def erfcx(x):
    """exp(x^2) erfc(x), for every x (2 exp(x^2) - erfcx(-x) for x < 0; inf at -inf)."""
    pos = _erfcx_nonneg(UN.abs(x))
    neg = 2.0 * _exp_square(x) - pos
    return where(CMP.lt(x, 0.0), neg, pos)


def erfc_accurate(x):
    """erfc(x) with a small relative error in the right tail (1 - erf(x) loses it)."""
    tail = _exp_neg_square(x) * _erfcx_nonneg(UN.abs(x))
    return where(CMP.lt(x, 0.5), 1.0 - UN.erf(x), tail)


def _bessel_i_series(x, nu: int):
    """I_nu(x) by its power series (40 terms; |x| <= 20)."""
    q = x * x * 0.25
    coeffs = [1.0 / (math.factorial(k) * math.factorial(k + nu)) for k in range(48)]
    s = horner(q, coeffs)
    return s if nu == 0 else s * x * 0.5


def _bessel_i_asym_scaled(ax, nu: int):
    """exp(-x) I_nu(x) for x >= 20 by the asymptotic series."""
    coeffs = [1.0]
    mu = 4.0 * nu * nu
    for k in range(1, 30):
        coeffs.append(coeffs[-1] * -(mu - (2 * k - 1) ** 2) / (k * 8.0))
    return horner(1.0 / ax, coeffs) / UN.sqrt(2.0 * PI * ax)


def bessel_i_scaled(x, nu: int):
    """(exp(-|x|) I_nu(x), I_nu(x)) for nu in (0, 1): the power series below 20, the asymptotic
    series above (the unscaled value overflows to inf as it should)."""
    ax = UN.abs(x)
    small = CMP.le(ax, 20.0)
    xs = where(small, x, 0.0)
    ser = _bessel_i_series(xs, nu)
    xa = where(small, 20.0, ax)
    asym = _bessel_i_asym_scaled(xa, nu)
    if nu == 1:
        asym = where(CMP.lt(x, 0.0), -asym, asym)
    scaled = where(small, ser * UN.exp(-ax), asym)
    plain = where(small, ser, asym * UN.exp(xa * 0.5) * UN.exp(xa * 0.5))
    return scaled, plain


def log1p_accurate(u):
    """log(1 + u) to full relative precision on every backend (the ratio corrects the rounding
    of 1 + u)."""
    w = u + 1.0
    d = w - 1.0
    safe = where(CMP.eq(d, 0.0), 1.0, d)
    r = UN.log(w) * (u / safe)
    r = where(CMP.eq(d, 0.0), u, r)
    return where(CMP.eq(u, math.inf), math.inf, r)


def detached(fn):
    """The decomposition of an op PyTorch does not differentiate: run without recording, so that
    its result does not require grad."""
    def run(*args):
        with _state.grad_disabled():
            return fn(*args)
    run.__name__ = fn.__name__
    return run
