"""The factorizations on numpy arrays: the host path of the linear-algebra kernel ops
(:mod:`ember.ops.linalg_factor`), and the kernels of ember-cpu-numpy, which wraps these same
functions. numpy.linalg does the work (numpy only, no scipy); the LU factorization, which numpy
lacks, is a batched partial-pivoting elimination written here.

Every function takes the op's kernel arguments with numpy arrays for tensors (any strides,
leading batch dims) and returns arrays; none raises for a singular or indefinite input: the
``info`` arrays say where a factorization failed (LAPACK's convention: 0, or the 1-based index
of the failing pivot or leading minor), and the front ends raise ``LinAlgError`` from them.
The code is written for real and complex arrays alike (conjugate transposes throughout).
"""
from __future__ import annotations

import numpy as np

__all__ = ["cholesky_ex", "qr", "eig", "eigh", "svd", "lu_factor_ex", "solve_triangular", "inv_ex", "solve_ex", "det",
           "slogdet"]


def _mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _flat(a):
    """``a`` as a (B, m, n) array (a copy) and its batch shape."""
    batch = a.shape[:-2]
    return np.array(a.reshape((int(np.prod(batch)),) + a.shape[-2:]), copy=True), batch


def lu_factor_ex(a, pivot=True):
    """``(LU, pivots, info)`` of ``a`` (..., m, n): LAPACK getrf's packed factors, 1-based int32
    pivots, and info = the first zero pivot (1-based) or 0."""
    m, n = a.shape[-2:]
    k = min(m, n)
    A, batch = _flat(a)
    if not np.issubdtype(A.dtype, np.inexact):
        A = A.astype(np.float64)
    nb = A.shape[0]
    piv = np.tile(np.arange(1, k + 1, dtype=np.int32), (nb, 1))
    info = np.zeros(nb, np.int32)
    rows = np.arange(nb)
    for j in range(k):
        if pivot:
            col = A[:, j:, j]  # LAPACK's pivot size: |re| + |im| for complex entries (its cabs1)
            p = j + np.argmax(np.abs(col.real) + np.abs(col.imag) if np.iscomplexobj(col) else np.abs(col), axis=1)
            piv[:, j] = p + 1
            swap = p != j
            if swap.any():
                r, q = rows[swap], p[swap]
                tmp = A[r, j, :].copy()
                A[r, j, :] = A[r, q, :]
                A[r, q, :] = tmp
        d = A[:, j, j]
        zero = d == 0
        info[(info == 0) & zero] = j + 1
        if j + 1 < m:
            col = A[:, j + 1:, j]
            A[:, j + 1:, j] = np.where(zero[:, None], col, col / np.where(zero, 1, d)[:, None])
            if j + 1 < n:
                A[:, j + 1:, j + 1:] -= A[:, j + 1:, j, None] * A[:, j, None, j + 1:]
    return A.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def _potf2(a):
    """LAPACK potf2's unblocked lower Cholesky of one matrix, stopping where it fails as LAPACK
    does (the failing diagonal entry holds its updated value, the rest of the input is left):
    ``(lower triangle, info)``."""
    A = np.tril(np.array(a, copy=True))
    for j in range(A.shape[-1]):
        ajj = A[j, j] - np.vdot(A[j, :j], A[j, :j])
        if not np.real(ajj) > 0:
            A[j, j] = ajj
            return A, j + 1
        ajj = np.sqrt(ajj)
        A[j, j] = ajj
        A[j + 1:, j] = (A[j + 1:, j] - A[j + 1:, :j] @ np.conj(A[j, :j])) / ajj
    return A, 0


def cholesky_ex(a, upper=False):
    """``(L, info)``: the Cholesky factor from the lower triangle of ``a`` (its conjugate
    transpose with ``upper``); info = the order of the first leading minor that is not
    positive-definite, where the factor holds LAPACK's partial result."""
    try:
        L = np.linalg.cholesky(a)
        info = np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        A, batch = _flat(a)
        parts = [_potf2(m) for m in A]
        L = np.stack([p[0] for p in parts]).reshape(a.shape)
        info = np.array([p[1] for p in parts], np.int32).reshape(batch)
    return (_mH(L) if upper else L), info


def qr(a, mode="reduced"):
    """``(Q, R)``; mode 'r' gives an empty Q, as PyTorch."""
    if mode == "r":
        return np.empty((0,), a.dtype), np.linalg.qr(a, mode="r")
    return tuple(np.linalg.qr(a, mode=mode))


def eigh(a, uplo="L", compute_v=True):
    """``(eigenvalues, eigenvectors)`` (ascending); without ``compute_v`` an empty second."""
    if compute_v:
        return tuple(np.linalg.eigh(a, UPLO=uplo))
    return np.linalg.eigvalsh(a, UPLO=uplo), np.empty((0,), a.dtype)


def eig(a, compute_v=True):
    """``(eigenvalues, eigenvectors)`` of a general square matrix (LAPACK geev through numpy:
    eigenvectors of unit norm), always complex (complex64 for float32/complex64 input); without
    ``compute_v`` an empty second result. A matrix with an inf or NaN gets NaN eigenvalues and
    eigenvectors (numpy refuses it; the front end of ``eig`` raises first)."""
    ct = np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128
    n = a.shape[-1]
    A, batch = _flat(a)
    L = np.full(A.shape[:2], np.nan, ct)
    V = np.full(A.shape, np.nan, ct)
    ok = np.isfinite(A).all(axis=(-2, -1))
    if n and ok.any():
        if compute_v:
            L[ok], V[ok] = np.linalg.eig(A[ok])
        else:
            L[ok] = np.linalg.eigvals(A[ok])
    L = L.reshape(batch + (n,))
    return (L, V.reshape(a.shape)) if compute_v else (L, np.empty((0,), ct))


def svd(a, full_matrices=True, compute_uv=True):
    """``(U, S, Vh)``; without ``compute_uv`` empty U and Vh, as PyTorch."""
    if compute_uv:
        return tuple(np.linalg.svd(a, full_matrices=full_matrices))
    e = np.empty((0,), a.dtype)
    return e, np.linalg.svd(a, compute_uv=False), e


def _substitute(T, B, upper):
    """``T^-1 B`` by substitution (T triangular, batched): the path for zero diagonals, which
    give inf/NaN as LAPACK's trsm does."""
    n = T.shape[-1]
    X = np.array(np.broadcast_to(B, np.broadcast_shapes(T.shape[:-2], B.shape[:-2]) + B.shape[-2:]),
                 dtype=np.result_type(T, B), copy=True)
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(all="ignore"):
        for i in order:
            X[..., i, :] /= T[..., i, i, None]
            rest = slice(0, i) if upper else slice(i + 1, n)
            X[..., rest, :] -= T[..., rest, i, None] * X[..., i, None, :]
    return X


def solve_triangular(a, b, upper, left=True, unitriangular=False):
    """``X`` with ``tri(A) X = B`` (``X tri(A) = B`` when not ``left``); only the triangle of
    ``A`` is read, its diagonal taken as ones with ``unitriangular``."""
    T = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        n = T.shape[-1]
        T = T.copy()
        T[..., range(n), range(n)] = 1
    if not left:  # X T = B  <=>  T^T X^T = B^T
        return np.swapaxes(solve_triangular(np.swapaxes(T, -1, -2), np.swapaxes(b, -1, -2), not upper), -1, -2)
    if T.shape[-1] == 0 or b.size == 0:
        return np.zeros(np.broadcast_shapes(T.shape[:-2], b.shape[:-2]) + b.shape[-2:], np.result_type(T, b))
    try:
        return np.linalg.solve(*_bcast(T, b))
    except np.linalg.LinAlgError:
        return _substitute(T, b, upper)


def _bcast(a, b):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


def _lu_info(a):
    return lu_factor_ex(a)[2]


def inv_ex(a):
    """``(inverse, info)``; the inverse of a singular matrix is NaN, info its first zero pivot."""
    try:
        return np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        info = _lu_info(a)
        A, _ = _flat(a)
        out = np.full(A.shape, np.nan, dtype=A.dtype)
        ok = info.reshape(-1) == 0
        if ok.any():
            out[ok] = np.linalg.inv(A[ok])
        return out.reshape(a.shape), info


def solve_ex(a, b, left=True):
    """``(X, info)`` with ``A X = B`` (``X A = B`` when not ``left``), batch dims broadcast, B a
    batch of matrices; a singular system gives NaN and its first zero pivot in info."""
    if not left:
        x, info = solve_ex(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2))
        return np.swapaxes(x, -1, -2), info
    A, B = _bcast(a, b)
    try:
        return np.linalg.solve(A, B), np.zeros(A.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        info = _lu_info(A)
        Af, _ = _flat(A)
        Bf, _ = _flat(B)
        out = np.full(Bf.shape, np.nan, dtype=np.result_type(Af, Bf))
        ok = info.reshape(-1) == 0
        if ok.any():
            out[ok] = np.linalg.solve(Af[ok], Bf[ok])
        return out.reshape(B.shape), info


def det(a):
    """The determinant (batched)."""
    return np.asarray(np.linalg.det(a))


def slogdet(a):
    """``(sign, log|det|)`` (batched)."""
    s, l = np.linalg.slogdet(a)
    return np.asarray(s), np.asarray(l)
