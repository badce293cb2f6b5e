"""Op table, special functions (``ember.special`` and lgamma, digamma, polygamma, mvlgamma, i0):
values against float64 references on contiguous and non-contiguous inputs, gradchecked in
float64 where PyTorch differentiates them.

The references come from python's ``math`` module (lgamma, erf) and numpy's polynomial classes;
the functions neither has (digamma, polygamma, zeta, erfcx, the Bessel functions...) are
computed with ``mpmath`` at 30 digits, and their cases skip when mpmath is not installed.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import special as ES
from ember.testing.helpers import BackendCase

F = (ember.float32, ember.float64)
S = (3, 4)
POS = {"low": 0.1, "high": 8.0}


class C(BackendCase):
    """A case whose reference needs mpmath: skipped when it is not installed."""

    def __init__(self, *args, mp=False, **kw):
        super().__init__(*args, **kw)
        self.mp = mp

    def run(self, device):
        if self.mp:
            _mpmath()
        super().run(device)


def _mpmath():
    try:
        import mpmath
    except ImportError:
        pytest.skip("the reference of this special function needs mpmath (pip install mpmath)")
    mpmath.mp.dps = 30
    return mpmath


class _LazyMpmath:
    """mpmath, imported when a reference first reads from it (inside a test, where a missing mpmath
    skips that case; the case tables are built at import, where a skip would skip the module)."""

    def __getattr__(self, name):
        return getattr(_mpmath(), name)


_LAZY_MP = _LazyMpmath()


def _vec(f):
    """A float64 reference from a scalar function of python floats (NaN where it raises)."""
    def ref(*arrays):
        def one(*xs):
            try:
                return float(f(*xs))
            except (ValueError, ZeroDivisionError, OverflowError):
                return math.nan
        return np.vectorize(one, otypes=[np.float64])(*arrays)
    return ref


def _mp(name, *pre):
    return _vec(lambda *xs: getattr(_mpmath(), name)(*pre, *xs))


def _mvlgamma(x, p=3):
    return sum(_vec(math.lgamma)(x - i / 2) for i in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


def _ndtr(x):
    return _vec(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)))(x)


def _ndtri(p):
    mp = _LAZY_MP
    return _vec(lambda v: -mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(v)))(p)


def _scaled(name, nu):
    mp = _LAZY_MP
    return _vec(lambda v: mp.exp(-abs(mp.mpf(v))) * getattr(mp, name)(nu, v))


def _erfcx_mp(x):
    mp = _LAZY_MP
    return _vec(lambda v: mp.exp(mp.mpf(v) ** 2) * mp.erfc(v))(x)


def _k_scaled_mp(x, nu):
    mp = _LAZY_MP
    return _vec(lambda v: mp.exp(v) * mp.besselk(nu, v))(x)


def _gammainc(upper):
    mp = _LAZY_MP
    return _vec(lambda a, x: mp.gammainc(a, x, mp.inf, regularized=True) if upper
                else mp.gammainc(a, 0, x, regularized=True))


def _entr(x):
    return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), np.where(x == 0, 0.0, -np.inf))


def _sbj0(x):
    return np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1.0, x))


# the polynomials, from numpy's polynomial classes (U_n = T_{n+1}' / (n + 1); V = U_n - U_{n-1},
# W = U_n + U_{n-1})
_P = np.polynomial


def _cheb_u(x, n):
    return _P.Chebyshev.basis(n + 1).deriv()(x) / (n + 1) if n >= 0 else 0 * x


POLYS = {
    "chebyshev_polynomial_t": lambda x, n: _P.Chebyshev.basis(n)(x),
    "chebyshev_polynomial_u": _cheb_u,
    "chebyshev_polynomial_v": lambda x, n: _cheb_u(x, n) - (_cheb_u(x, n - 1) if n else 0),
    "chebyshev_polynomial_w": lambda x, n: _cheb_u(x, n) + (_cheb_u(x, n - 1) if n else 0),
    "hermite_polynomial_h": lambda x, n: _P.Hermite.basis(n)(x),
    "hermite_polynomial_he": lambda x, n: _P.HermiteE.basis(n)(x),
    "laguerre_polynomial_l": lambda x, n: _P.Laguerre.basis(n)(x),
    "legendre_polynomial_p": lambda x, n: _P.Legendre.basis(n)(x),
}


def _poly_cases():
    cases = []
    for name, ref in POLYS.items():
        fn = getattr(ES, name)
        sh = getattr(ES, "shifted_" + name) if name.startswith("chebyshev") else None
        for n in (0, 1, 4, 11):
            cases.append(C(f"{name}_{n}", lambda x, fn=fn, n=n: fn(x, n), lambda x, ref=ref, n=n: ref(x, n),
                           [dict(shape=S, low=-0.99, high=0.99)], dtypes=F, rtol=1e-4, atol=1e-4))
            if sh is not None:
                cases.append(C(f"shifted_{name}_{n}", lambda x, fn=sh, n=n: fn(x, n),
                               lambda x, ref=ref, n=n: ref(2 * x - 1, n), [dict(shape=S, low=0.01, high=0.99)],
                               dtypes=F, rtol=1e-4, atol=1e-4))
        cases.append(C(f"{name}_tensor_n", lambda x, fn=fn: fn(x, ember.tensor([0.0, 2.0, 3.0, 5.0], device=x.device)),
                       lambda x, ref=ref: np.stack([ref(x[:, j], n) for j, n in enumerate((0, 2, 3, 5))], 1),
                       [dict(shape=S, low=-2.0, high=2.0)], dtypes=(ember.float64,)))
    return cases


IGAMMA_ARGS = [dict(shape=S, low=0.05, high=40.0), dict(shape=S, low=0.01, high=60.0)]

SPECIAL_CASES = [
    C("lgamma", ember.lgamma, _vec(math.lgamma), [dict(shape=S, **POS)], dtypes=F, grad=True),
    C("lgamma_negative", ember.lgamma, _vec(math.lgamma), [dict(shape=S, low=-4.9, high=-0.1)], dtypes=F,
      rtol=1e-4, atol=1e-5),
    C("lgamma_large", ember.lgamma, _vec(math.lgamma), [dict(shape=S, low=10.0, high=1e6)], dtypes=F),
    C("gammaln", ES.gammaln, _vec(math.lgamma), [dict(shape=S, **POS)], dtypes=F),
    C("digamma", ember.digamma, _mp("digamma"), [dict(shape=S, **POS)], dtypes=F, grad=True, mp=True),
    C("digamma_negative", ember.digamma, _mp("digamma"), [dict(shape=S, low=-4.9, high=-0.1)], dtypes=F,
      rtol=1e-4, atol=1e-4, mp=True),
    C("psi", ES.psi, _mp("digamma"), [dict(shape=S, **POS)], dtypes=F, mp=True),
    C("polygamma_1", lambda x: ember.polygamma(1, x), _mp("polygamma", 1), [dict(shape=S, **POS)], dtypes=F,
      grad=True, mp=True),
    C("polygamma_3", lambda x: ember.polygamma(3, x), _mp("polygamma", 3), [dict(shape=S, **POS)], dtypes=F,
      grad=True, mp=True),
    C("polygamma_method", lambda x: x.polygamma(2), _mp("polygamma", 2), [dict(shape=S, **POS)], dtypes=F, mp=True),
    C("mvlgamma", lambda x: ember.mvlgamma(x, p=3), _mvlgamma, [dict(shape=S, low=1.1, high=6.0)], dtypes=F,
      grad=True),
    C("multigammaln", lambda x: ES.multigammaln(x, 3), _mvlgamma, [dict(shape=S, low=1.1, high=6.0)], dtypes=F),
    C("zeta", lambda q: ES.zeta(ember.full_like(q, 3.5), q), _mp("zeta", 3.5), [dict(shape=S, low=0.2, high=6.0)],
      dtypes=F, grad=True, mp=True),
    C("zeta_tensors", ES.zeta, _mp("zeta"), [dict(shape=S, low=1.5, high=6.0), dict(shape=(4,), low=0.2, high=6.0)],
      dtypes=F, mp=True),
    C("ndtr", ES.ndtr, _ndtr, [dict(shape=S, low=-8.0, high=8.0)], dtypes=F, grad=True),
    C("log_ndtr", ES.log_ndtr, _vec(lambda v: math.log(0.5 * math.erfc(-v / math.sqrt(2)))),
      [dict(shape=S, low=-20.0, high=6.0)], dtypes=F, grad=True),
    C("ndtri", ES.ndtri, _ndtri, [dict(shape=S, low=0.001, high=0.999)], dtypes=F, grad=True, mp=True),
    C("erfcx", ES.erfcx, _vec(lambda v: math.exp(v * v) * math.erfc(v)), [dict(shape=S, low=-3.0, high=5.0)],
      dtypes=F, grad=True),
    C("erfcx_tail", ES.erfcx, lambda x: _erfcx_mp(x), [dict(shape=S, low=6.0, high=1e4)], dtypes=F, mp=True),
    C("entr", ES.entr, _entr, [dict(shape=S, low=-1.0, high=4.0)], dtypes=F),
    C("entr_grad", ES.entr, _entr, [dict(shape=S, low=0.1, high=4.0)], dtypes=F, grad=True),
    C("xlog1py", ES.xlog1py, lambda a, b: a * np.log1p(b), [S, dict(shape=S, low=-0.9, high=4.0)], dtypes=F,
      grad=True),
    C("i0", ember.i0, _mp("besseli", 0), [dict(shape=S, low=-30.0, high=30.0)], dtypes=F, grad=True, mp=True),
    C("special_i0", ES.i0, np.i0, [dict(shape=S, low=-5.0, high=5.0)], dtypes=F),
    C("i0e", ES.i0e, lambda x: _scaled("besseli", 0)(x), [dict(shape=S, low=-50.0, high=50.0)], dtypes=F,
      grad=True, mp=True),
    C("i1", ES.i1, _mp("besseli", 1), [dict(shape=S, low=-30.0, high=30.0)], dtypes=F, grad=True, mp=True),
    C("i1e", ES.i1e, lambda x: _scaled("besseli", 1)(x), [dict(shape=S, low=-50.0, high=50.0)], dtypes=F,
      grad=True, mp=True),
    C("modified_bessel_i0", ES.modified_bessel_i0, np.i0, [dict(shape=S, low=-5.0, high=5.0)], dtypes=F),
    C("modified_bessel_i1", ES.modified_bessel_i1, _mp("besseli", 1), [dict(shape=S, low=-5.0, high=5.0)],
      dtypes=F, mp=True),
    C("spherical_bessel_j0", ES.spherical_bessel_j0, _sbj0, [dict(shape=S, low=-20.0, high=20.0)], dtypes=F),
    C("bessel_j0", ES.bessel_j0, _mp("besselj", 0), [dict(shape=S, low=-40.0, high=40.0)], dtypes=F, mp=True,
      atol=1e-6),
    C("bessel_j1", ES.bessel_j1, _mp("besselj", 1), [dict(shape=S, low=-40.0, high=40.0)], dtypes=F, mp=True,
      atol=1e-6),
    C("bessel_y0", ES.bessel_y0, _mp("bessely", 0), [dict(shape=S, low=0.05, high=40.0)], dtypes=F, mp=True,
      atol=1e-6),
    C("bessel_y1", ES.bessel_y1, _mp("bessely", 1), [dict(shape=S, low=0.05, high=40.0)], dtypes=F, mp=True,
      atol=1e-6),
    C("modified_bessel_k0", ES.modified_bessel_k0, _mp("besselk", 0), [dict(shape=S, low=0.05, high=40.0)],
      dtypes=F, mp=True),
    C("modified_bessel_k1", ES.modified_bessel_k1, _mp("besselk", 1), [dict(shape=S, low=0.05, high=40.0)],
      dtypes=F, mp=True),
    C("scaled_modified_bessel_k0", ES.scaled_modified_bessel_k0, lambda x: _k_scaled_mp(x, 0),
      [dict(shape=S, low=0.05, high=400.0)], dtypes=F, mp=True),
    C("scaled_modified_bessel_k1", ES.scaled_modified_bessel_k1, lambda x: _k_scaled_mp(x, 1),
      [dict(shape=S, low=0.05, high=400.0)], dtypes=F, mp=True),
    # igamma: both sides of x = a + 1, Temme's range (a >= 20, x near a) and small a
    C("igamma", ember.igamma, _gammainc(False), IGAMMA_ARGS, dtypes=F, mp=True),
    C("igammac", ember.igammac, _gammainc(True), IGAMMA_ARGS, dtypes=F, mp=True),
    C("gammainc_temme", lambda a, lam: ES.gammainc(a, a * lam), lambda a, lam: _gammainc(False)(a, a * lam),
      [dict(shape=S, low=20.0, high=500.0), dict(shape=S, low=0.8, high=1.2)], dtypes=(ember.float64,), mp=True),
    C("gammaincc_small_a", lambda a, x: ES.gammaincc(a, x), _gammainc(True),
      [dict(shape=S, low=1e-6, high=0.99), dict(shape=S, low=0.01, high=1.9)], dtypes=F, mp=True),
    C("igamma_grad_x", lambda x: ember.igamma(ember.full_like(x, 2.5), x), lambda x: _gammainc(False)(2.5 + 0 * x, x),
      [dict(shape=S, low=0.1, high=8.0)], dtypes=F, grad=True, mp=True),
    C("igammac_grad_x", lambda x: ember.full_like(x, 30.0).igammac(x),
      lambda x: _gammainc(True)(30.0 + 0 * x, x), [dict(shape=S, low=20.0, high=40.0)], dtypes=F, grad=True, mp=True),
    C("airy_ai", ES.airy_ai, _mp("airyai"), [dict(shape=S, low=-20.0, high=20.0)], dtypes=F, mp=True, atol=1e-6),
    C("airy_ai_tails", ES.airy_ai, _mp("airyai"), [dict(shape=S, low=8.0, high=60.0)], dtypes=(ember.float64,),
      mp=True),
] + _poly_cases()
