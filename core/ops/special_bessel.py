"""The Bessel functions of ``torch.special``: J0, J1, Y0, Y1 (``bessel_j0``...) and K0, K1 with
their exponentially scaled forms (``modified_bessel_k0``, ``scaled_modified_bessel_k0``...),
written in ember ops.

Each is computed from three formulas, selected per element: the power series (with its logarithm
for Y and K) near 0, Taylor polynomials about the centres of unit pieces up to 25 (the
coefficients are generated with mpmath: :mod:`ember.ops._bessel_tables`), and the asymptotic
(Hankel) expansions above 25. As in PyTorch: J is NaN at +-inf, Y and K are NaN for x < 0 and
-inf / +inf at 0, K is 0 at +inf; float16/bfloat16 are refused and the ops are not differentiable.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from . import _args as U
from . import _bessel_k_tables as BK
from . import _bessel_tables as BT
from . import _special_num as N
from . import _special_tables as TB
from . import comparison as CMP
from . import pointwise as PW
from . import unary as UN
from .declare import defop

__all__: list = []  # reached through ember.special

where = PW.where
PI = math.pi
GAMMA = TB.EULER_GAMMA
_TERMS = 20


def _hankel_coeffs(nu: int, n: int = 26) -> list:
    """a_k(nu) = prod_{j <= k} (4 nu^2 - (2j - 1)^2) / (k! 8^k), k < n."""
    a = [1.0]
    for k in range(1, n):
        a.append(a[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8.0))
    return a


_A = {nu: _hankel_coeffs(nu) for nu in (0, 1)}


def _hankel(x, nu: int):
    """(J_nu(x), Y_nu(x)) for x >= 25 by the Hankel expansions."""
    a = _A[nu]
    inv = 1.0 / x
    inv2 = inv * inv
    p = N.horner(inv2, [(-1) ** m * a[2 * m] for m in range(len(a) // 2)])
    q = N.horner(inv2, [(-1) ** m * a[2 * m + 1] for m in range(len(a) // 2)]) * inv
    c, s = UN.cos(x), UN.sin(x)
    r2 = math.sqrt(0.5)
    if nu == 0:
        cos_chi, sin_chi = (c + s) * r2, (s - c) * r2
    else:
        cos_chi, sin_chi = (s - c) * r2, -(s + c) * r2
    amp = UN.sqrt(2.0 / (PI * x))
    return amp * (p * cos_chi - q * sin_chi), amp * (p * sin_chi + q * cos_chi)


def _j_series(ax, nu: int):
    """J_nu(x) for |x| < 1 by its power series (exact at 0, relative accuracy near 0)."""
    q = ax * ax * -0.25
    s = N.horner(q, [1.0 / (math.factorial(k) * math.factorial(k + nu)) for k in range(12)])
    return s if nu == 0 else s * ax * 0.5


def _j(x, nu: int):
    ax = UN.abs(x)
    table = N.piecewise_taylor(ax, BT.J0 if nu == 0 else BT.J1, 0.0, 1.0)
    near = CMP.lt(ax, 1.0)
    table = where(near, _j_series(where(near, ax, 0.0), nu), table)
    far = CMP.ge(ax, BT.END)
    asym = _hankel(where(far, ax, BT.END), nu)[0]
    r = where(far, asym, table)
    r = where(CMP.logical_or(CMP.isinf(x), CMP.isnan(x)), math.nan, r)
    return r if nu == 0 else where(CMP.lt(x, 0.0), -r, r)


_H = [0.0]
for _k in range(1, _TERMS + 1):
    _H.append(_H[-1] + 1.0 / _k)
_F = [float(math.factorial(k)) for k in range(_TERMS + 2)]


def _psi_sum(k):  # psi(k + 1) + psi(k + 2)
    return 2 * (_H[k] - GAMMA) + 1.0 / (k + 1)


def _small_y(x, nu: int):
    """Y_nu(x) for 0 < x < 2: the power series with the logarithm."""
    q = x * x * 0.25
    log_term = UN.log(x) - math.log(2.0)  # (x / 2 underflows for the smallest subnormals)
    if nu == 0:
        s = N.horner(q, [0.0] + [(-1) ** (k + 1) * _H[k] / (_F[k] ** 2) for k in range(1, _TERMS)])
        return (2.0 / PI) * ((log_term + GAMMA) * _j(x, 0) + s)
    s = N.horner(q, [(-1) ** k * _psi_sum(k) / (_F[k] * _F[k + 1]) for k in range(_TERMS)])
    return -2.0 / (PI * x) + (2.0 / PI) * log_term * _j(x, 1) - x / (2.0 * PI) * s


def _small_k(x, nu: int):
    """K_nu(x) for 0 < x < 2: the power series with the logarithm."""
    q = x * x * 0.25
    # log(x / 2) as PyTorch rounds it for K1 (NaN at the smallest subnormals, where x / 2 is 0)
    log_term = UN.log(x) - math.log(2.0) if nu == 0 else UN.log(x * 0.5)
    i_scaled, i_plain = N.bessel_i_scaled(x, nu)
    if nu == 0:
        s = N.horner(q, [0.0] + [_H[k] / (_F[k] ** 2) for k in range(1, _TERMS)])
        return -(log_term + GAMMA) * i_plain + s
    s = N.horner(q, [_psi_sum(k) / (_F[k] * _F[k + 1]) for k in range(_TERMS)])
    return 1.0 / x + log_term * i_plain - x * 0.25 * s


def _positive_domain(x, r, at_zero):
    """Y and K: NaN below 0 and at NaN, ``at_zero`` at 0."""
    r = where(CMP.eq(x, 0.0), at_zero, r)
    return where(CMP.logical_or(CMP.lt(x, 0.0), CMP.isnan(x)), math.nan, r)


def _y(x, nu: int):
    small = CMP.lt(x, BT.SERIES_END)
    far = CMP.ge(x, BT.END)
    ser = _small_y(where(CMP.logical_and(small, CMP.gt(x, 0.0)), x, 1.0), nu)
    table = N.piecewise_taylor(x, BT.Y0 if nu == 0 else BT.Y1, BT.SERIES_END, 1.0)
    asym = _hankel(where(far, x, BT.END), nu)[1]
    r = where(small, ser, where(far, asym, table))
    return _positive_domain(x, r, -math.inf)


def _k_scaled(x, nu: int):
    """exp(x) K_nu(x), and whether x is in the series range (where K itself is computed)."""
    small = CMP.lt(x, BT.SERIES_END)
    far = CMP.ge(x, BT.END)
    table = N.piecewise_taylor(x, BK.K0E if nu == 0 else BK.K1E, BT.SERIES_END, 1.0)
    xa = where(far, x, BT.END)
    asym = N.horner(1.0 / xa, _A[nu]) * UN.sqrt(PI / (2.0 * xa))
    return small, where(far, asym, table)


def _k(x, nu: int):
    small, scaled = _k_scaled(x, nu)
    ser = _small_k(where(CMP.logical_and(small, CMP.gt(x, 0.0)), x, 1.0), nu)
    r = where(small, ser, scaled * UN.exp(-where(small, 0.0, x)))
    return _positive_domain(x, r, math.inf)


def _k_e(x, nu: int):
    small, scaled = _k_scaled(x, nu)
    xs = where(CMP.logical_and(small, CMP.gt(x, 0.0)), x, 1.0)
    ser = _small_k(xs, nu) * UN.exp(xs)
    r = where(small, ser, scaled)
    r = where(CMP.eq(x, math.inf), 0.0, r)
    return _positive_domain(x, r, math.inf)


def _declare(name, fn, nu, what):
    op = "special_" + name

    def meta(input):
        x = U.tensor_arg(input, op)
        if x._dtype.itemsize == 2 and x._dtype.category == D._FLOAT:
            raise U.dtype_not_implemented(f"{name}_cpu", x._dtype)
        return UN.unary_meta(op, UN.FLOAT)(x)
    meta.__name__ = meta.__qualname__ = op
    meta.__doc__ = f"The {what} (not differentiable, as in PyTorch)."

    def decomposition(x):
        return fn(x, nu)
    decomposition.__name__ = name
    return defop(op, meta, decomposition=N.detached(decomposition), differentiable=False, result="elementwise",
                 method=False, group="special", module=__name__)


special_bessel_j0 = _declare("bessel_j0", _j, 0, "Bessel function of the first kind of order 0")
special_bessel_j1 = _declare("bessel_j1", _j, 1, "Bessel function of the first kind of order 1")
special_bessel_y0 = _declare("bessel_y0", _y, 0, "Bessel function of the second kind of order 0")
special_bessel_y1 = _declare("bessel_y1", _y, 1, "Bessel function of the second kind of order 1")
special_modified_bessel_k0 = _declare("modified_bessel_k0", _k, 0, "modified Bessel function of the second kind "
                                      "of order 0")
special_modified_bessel_k1 = _declare("modified_bessel_k1", _k, 1, "modified Bessel function of the second kind "
                                      "of order 1")
special_scaled_modified_bessel_k0 = _declare("scaled_modified_bessel_k0", _k_e, 0, "exponentially scaled modified "
                                             "Bessel function of the second kind of order 0, exp(x) K0(x)")
special_scaled_modified_bessel_k1 = _declare("scaled_modified_bessel_k1", _k_e, 1, "exponentially scaled modified "
                                             "Bessel function of the second kind of order 1, exp(x) K1(x)")
