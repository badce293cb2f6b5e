"""LAPACK one matrix at a time through ``scipy.linalg.lapack``: the cpu fast path of ``inv``,
where numpy.linalg's batched routine does more work than the result needs.

``numpy.linalg.inv`` solves ``A X = I`` (getrf, then triangular solves against a full identity);
``getri`` inverts the LU factors in place, with fewer flops and no right-hand side: for 64 x
(64x64) float64 it takes about two thirds of numpy's time. Each matrix is copied once into a
buffer laid out column-major per matrix (LAPACK's order, so that scipy's wrappers work in place
without copying again), and the result keeps that layout: strides (n*n, 1, n), PyTorch's own for
``inv``.

A Python call per matrix costs a few microseconds, more than numpy's whole gufunc call on a small
matrix, so the path runs from :data:`MIN_N` rows up; smaller matrices, dtypes LAPACK does not take
and empty inputs go to :mod:`ember.ops.linalg_host` (numpy.linalg), which also computes every
result when scipy cannot be imported. The values and ``info`` are the host function's (``info``:
getrf's first zero pivot, 1-based; the inverse of a singular matrix is NaN).
"""
from __future__ import annotations

import numpy as np

from ember.ops import linalg_host as H

try:
    from scipy.linalg import lapack as _LAPACK
except ImportError:  # pragma: no cover - scipy is a dependency; kept for minimal environments
    _LAPACK = None

__all__ = ["MIN_N", "inv_ex"]

#: the smallest matrix order run one matrix at a time, per routine (below it numpy's batched
#: call is faster: the measured crossover for inv is about 16, at one thread)
MIN_N = {"inv": 16}

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
           np.dtype(np.complex128): "z"}
_ROUTINES: dict = {}  # (prefix, name) -> the wrapper
_LWORK: dict = {}  # (prefix, n) -> getri's optimal workspace size


def _routine(prefix, name):
    f = _ROUTINES.get((prefix, name))
    if f is None:
        f = _ROUTINES[(prefix, name)] = getattr(_LAPACK, prefix + name)
    return f


def _getri_lwork(prefix, n):
    """LAPACK's optimal workspace size for getri of order ``n`` (asked once, then cached)."""
    w = _LWORK.get((prefix, n))
    if w is None:
        work, info = _routine(prefix, "getri_lwork")(n)
        w = _LWORK[(prefix, n)] = max(1, int(np.real(work))) if info == 0 else max(1, 64 * n)
    return w


def _prefix(a, routine):
    """The LAPACK type prefix when ``a`` should take the per-matrix path, else None."""
    if _LAPACK is None or a.ndim < 2 or min(a.shape[-2:]) < MIN_N[routine]:
        return None
    return _PREFIX.get(a.dtype)


def _columns(a):
    """``(buffer, batch)``: a copy of ``a`` (..., m, n) as (B, n, m) C-ordered, so that
    ``buffer[i].T`` is matrix i in column-major order (a view LAPACK writes in place)."""
    batch = a.shape[:-2]
    nb = int(np.prod(batch))
    buf = np.empty((nb,) + a.shape[:-3:-1], a.dtype)
    np.copyto(np.swapaxes(buf, -1, -2), a.reshape((nb,) + a.shape[-2:]))
    return buf, batch


def _matrices(buf, batch):
    """The (..., m, n) view of a buffer of :func:`_columns` (column-major matrices)."""
    return np.swapaxes(buf, -1, -2).reshape(batch + buf.shape[:-3:-1])


def _into(dst, out):
    """Make sure a wrapper's result ``out`` is in ``dst``: scipy's wrappers work in place when they
    can, but copy some inputs anyway (sgeqrf copies a float32 matrix whose address is not 8-byte
    aligned; getrf and getri did not in our tests, which this guards)."""
    if out.ctypes.data != dst.ctypes.data:
        dst[...] = out


def inv_ex(a):
    """``(inverse, info)`` of ``a`` (..., n, n): getrf + getri per matrix (see the module)."""
    p = _prefix(a, "inv")
    if p is None:
        return H.inv_ex(a)
    n = a.shape[-1]
    getrf, getri = _routine(p, "getrf"), _routine(p, "getri")
    lwork = _getri_lwork(p, n)
    buf, batch = _columns(a)
    info = np.zeros(buf.shape[0], np.int32)
    for i in range(buf.shape[0]):
        m = buf[i].T
        lu, piv, inf = getrf(m, overwrite_a=True)
        if inf == 0:
            x, inf = getri(lu, piv, lwork=lwork, overwrite_lu=True)
            _into(m, x)
        if inf > 0:  # a zero pivot: no inverse (NaN, as the host function gives)
            m[...] = np.nan
        elif inf < 0:  # pragma: no cover - an argument error is a bug here
            raise RuntimeError(f"LAPACK {p}getrf/{p}getri: argument {-inf} had an illegal value")
        info[i] = max(inf, 0)
    return _matrices(buf, batch), info.reshape(batch)
