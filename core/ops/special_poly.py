"""The orthogonal polynomials of ``torch.special``: Chebyshev T, U, V, W (and their shifted forms
on [0, 1]), Hermite H (physicists') and He (probabilists'), Laguerre L and Legendre P, each
``f(input, n)`` evaluated by its three-term recurrence in ember ops.

As in PyTorch: ``n`` (a tensor or a number) is truncated to an integer, a negative ``n`` gives 0,
the values at x = +-1 are exact, the Chebyshev polynomials of |x| < 1 and large ``n`` use their
trigonometric forms, float16/bfloat16 are refused, and the ops are not differentiable. The
recurrence runs up to the largest ``n`` needed, so its cost grows with ``n``.
"""
from __future__ import annotations


from .._tensor import Tensor
from . import _args as U
from . import _special_num as N
from . import arithmetic as A
from . import comparison as CMP
from . import creation as CR
from . import pointwise as PW
from . import reduction as R
from . import unary as UN
from ._binary import FLOATOP, operands, promote
from .declare import defop

__all__: list = []  # reached through ember.special

where = PW.where


def _tensors(x, n):
    like = x if isinstance(x, Tensor) else n
    x = x if isinstance(x, Tensor) else CR.full_like(like, x)
    n = n if isinstance(n, Tensor) else CR.full_like(like, n)
    if x._shape != n._shape:
        shape = U.broadcast_all((x._shape, n._shape))
        x, n = x.expand(shape), n.expand(shape)
    return x, UN.trunc(n)


def _recurrence(x, n, first, step, skip=None):
    """P_n(x) from P_0 = 1, P_1 = first(x) and P_{k+1} = step(k, x, P_k, P_{k-1}); ``skip``
    marks the elements another formula gives (they do not lengthen the loop)."""
    p = CR.ones_like(x)
    q = first(x)
    r = where(CMP.eq(n, 0.0), p, where(CMP.eq(n, 1.0), q, x * 0.0))
    need = n if skip is None else where(skip, 0.0, n)
    kmax = int(R.amax(where(CMP.isnan(need), 0.0, need)).item()) if need.numel() else 0
    for k in range(1, kmax):
        p, q = q, step(k, x, q, p)
        r = where(CMP.eq(n, float(k + 1)), q, r)
    return where(CMP.lt(n, 0.0), 0.0, r)


def _odd(n):
    return CMP.ne(A.remainder(n, 2.0), 0.0)


def _cheb_step(k, x, q, p):
    return 2.0 * x * q - p


def _cheb_t(x, n):
    trig = CMP.logical_and(CMP.lt(UN.abs(x), 1.0), CMP.gt(n, 6.0))
    r = _recurrence(x, n, lambda x: x, _cheb_step, trig)
    r = where(trig, UN.cos(n * UN.acos(where(trig, x, 0.0))), r)
    at1 = where(CMP.logical_or(CMP.gt(x, 0.0), CMP.logical_not(_odd(n))), 1.0, -1.0)
    return where(CMP.logical_and(CMP.eq(UN.abs(x), 1.0), CMP.ge(n, 0.0)), at1, r)


def _cheb_trig_u(x, n, trig):
    t = UN.acos(where(trig, x, 0.0))
    s = UN.sin(t)
    return where(CMP.ne(s, 0.0), UN.sin((n + 1.0) * t) / s, (n + 1.0) * UN.cos((n + 1.0) * t) / x)


def _cheb_u(x, n):
    trig = CMP.logical_and(CMP.lt(UN.abs(x), 1.0), CMP.gt(n, 8.0))
    r = _recurrence(x, n, lambda x: 2.0 * x, _cheb_step, trig)
    r = where(trig, _cheb_trig_u(x, n, trig), r)
    at1 = where(CMP.logical_or(CMP.gt(x, 0.0), CMP.logical_not(_odd(n))), n + 1.0, -(n + 1.0))
    return where(CMP.logical_and(CMP.eq(UN.abs(x), 1.0), CMP.ge(n, 0.0)), at1, r)


def _cheb_v(x, n):
    trig = CMP.logical_and(CMP.lt(UN.abs(x), 1.0), CMP.gt(n, 8.0))
    r = _recurrence(x, n, lambda x: 2.0 * x - 1.0, _cheb_step, trig)
    t = UN.acos(where(trig, x, 0.0))
    s2 = UN.sin(t / 2.0)
    tv = where(CMP.ne(s2, 0.0), UN.cos((n + 0.5) * t) / UN.cos(t / 2.0),
               where(_odd(n), -(n + n + 1.0), n + n + 1.0))
    r = where(trig, tv, r)
    at1 = where(CMP.gt(x, 0.0), 1.0, where(_odd(n), -(n + n + 1.0), n + n + 1.0))
    return where(CMP.logical_and(CMP.eq(UN.abs(x), 1.0), CMP.ge(n, 0.0)), at1, r)


def _cheb_w(x, n):
    trig = CMP.logical_and(CMP.lt(UN.abs(x), 1.0), CMP.gt(n, 8.0))
    r = _recurrence(x, n, lambda x: 2.0 * x + 1.0, _cheb_step, trig)
    t = UN.acos(where(trig, x, 0.0))
    c2 = UN.cos(t / 2.0)
    tw = where(CMP.ne(c2, 0.0), UN.sin((n + 0.5) * t) / UN.sin(t / 2.0),
               where(CMP.gt(x, 0.0), n + n + 1.0, where(_odd(n), -1.0, 1.0)))
    r = where(trig, tw, r)
    at1 = where(CMP.gt(x, 0.0), n + n + 1.0, where(_odd(n), -1.0, 1.0))
    return where(CMP.logical_and(CMP.eq(UN.abs(x), 1.0), CMP.ge(n, 0.0)), at1, r)


def _shifted(fn):
    return lambda x, n: fn(x + x - 1.0, n)


def _hermite_h(x, n):
    return _recurrence(x, n, lambda x: 2.0 * x, lambda k, x, q, p: 2.0 * x * q - 2.0 * k * p)


def _hermite_he(x, n):
    return _recurrence(x, n, lambda x: x, lambda k, x, q, p: x * q - float(k) * p)


def _laguerre(x, n):
    r = _recurrence(x, n, lambda x: 1.0 - x, lambda k, x, q, p: ((2.0 * k + 1.0 - x) * q - k * p) / (k + 1.0))
    return where(CMP.logical_and(CMP.eq(x, 0.0), CMP.ge(n, 0.0)), 1.0, r)


def _legendre(x, n):
    r = _recurrence(x, n, lambda x: x, lambda k, x, q, p: ((2.0 * k + 1.0) * x * q - k * p) / (k + 1.0))
    at1 = where(CMP.logical_or(CMP.gt(x, 0.0), CMP.logical_not(_odd(n))), 1.0, -1.0)
    return where(CMP.logical_and(CMP.eq(UN.abs(x), 1.0), CMP.ge(n, 0.0)), at1, r)


def _declare(name, fn, what):
    op = "special_" + name

    def meta(input, n):
        a, b, dev, ct = promote(op, input, n, FLOATOP)
        if ct.itemsize == 2:
            raise U.dtype_not_implemented(f"{name}_cpu", ct)
        return dev, (a, b), operands(a, b)
    meta.__name__ = meta.__qualname__ = op
    meta.__doc__ = f"The {what} of degree ``n`` at ``input``."

    def decomposition(x, n):
        return fn(*_tensors(x, n))
    return defop(op, meta, decomposition=N.detached(decomposition), differentiable=False, result="elementwise",
                 method=False, group="special", module=__name__)


special_chebyshev_polynomial_t = _declare("chebyshev_polynomial_t", _cheb_t, "Chebyshev polynomial of the first kind")
special_chebyshev_polynomial_u = _declare("chebyshev_polynomial_u", _cheb_u,
                                          "Chebyshev polynomial of the second kind")
special_chebyshev_polynomial_v = _declare("chebyshev_polynomial_v", _cheb_v, "Chebyshev polynomial of the third kind")
special_chebyshev_polynomial_w = _declare("chebyshev_polynomial_w", _cheb_w,
                                          "Chebyshev polynomial of the fourth kind")
special_shifted_chebyshev_polynomial_t = _declare("shifted_chebyshev_polynomial_t", _shifted(_cheb_t),
                                                  "shifted Chebyshev polynomial of the first kind, T(2 x - 1)")
special_shifted_chebyshev_polynomial_u = _declare("shifted_chebyshev_polynomial_u", _shifted(_cheb_u),
                                                  "shifted Chebyshev polynomial of the second kind, U(2 x - 1)")
special_shifted_chebyshev_polynomial_v = _declare("shifted_chebyshev_polynomial_v", _shifted(_cheb_v),
                                                  "shifted Chebyshev polynomial of the third kind, V(2 x - 1)")
special_shifted_chebyshev_polynomial_w = _declare("shifted_chebyshev_polynomial_w", _shifted(_cheb_w),
                                                  "shifted Chebyshev polynomial of the fourth kind, W(2 x - 1)")
special_hermite_polynomial_h = _declare("hermite_polynomial_h", _hermite_h, "physicists' Hermite polynomial")
special_hermite_polynomial_he = _declare("hermite_polynomial_he", _hermite_he, "probabilists' Hermite polynomial")
special_laguerre_polynomial_l = _declare("laguerre_polynomial_l", _laguerre, "Laguerre polynomial")
special_legendre_polynomial_p = _declare("legendre_polynomial_p", _legendre, "Legendre polynomial")

