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
           "ldl_factor_ex", "ldl_solve", "slogdet"]


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


# -- LDL^T (Bunch-Kaufman), LAPACK sytrf/hetrf's output ---------------------------------------------------

_BK_ALPHA = (1 + np.sqrt(17.0)) / 8  # Bunch and Kaufman's pivot threshold


def _size(x):
    """LAPACK's pivot size: |x|, or |re| + |im| for complex."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


def _bk_one(a, herm):
    """Bunch-Kaufman with the lower triangle of one matrix: ``(LD, pivots, info)`` as LAPACK's
    unblocked sytf2 (``herm``: hetf2, conjugating) leaves them."""
    A = np.tril(np.array(a, copy=True))
    n = A.shape[-1]
    cj = np.conj if herm and np.iscomplexobj(A) else (lambda x: x)
    dsize = (lambda x: abs(x.real)) if herm else _size
    piv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        if herm:
            A[k, k] = A[k, k].real
        step = 1
        absakk = dsize(A[k, k])
        colmax, imax = 0.0, k
        if k + 1 < n:
            col = _size(A[k + 1:, k])
            imax = k + 1 + int(np.argmax(col))
            colmax = col[imax - k - 1]
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info = info or k + 1
            piv[k] = k + 1
            k += 1
            continue
        kp = k
        if absakk < _BK_ALPHA * colmax:
            rowmax = max(_size(A[imax, k:imax]).max(initial=0), _size(A[imax + 1:, imax]).max(initial=0))
            if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                kp = k
            elif dsize(A[imax, imax]) >= _BK_ALPHA * rowmax:
                kp = imax
            else:
                kp, step = imax, 2
        kk = k + step - 1
        if kp != kk:  # symmetric interchange of kk and kp in the trailing lower triangle
            A[kp + 1:, [kk, kp]] = A[kp + 1:, [kp, kk]]
            mid = A[kk + 1:kp, kk].copy()
            A[kk + 1:kp, kk] = cj(A[kp, kk + 1:kp])
            A[kp, kk + 1:kp] = cj(mid)
            if herm:
                A[kp, kk] = cj(A[kp, kk])
            A[kk, kk], A[kp, kp] = A[kp, kp], A[kk, kk]
            if step == 2:
                A[k + 1, k], A[kp, k] = A[kp, k], A[k + 1, k]
        # the updates in LAPACK's order of operations, so that rounding (and exact zeros) agree
        one = A.dtype.type(1)
        if step == 1:
            d = one / (A[k, k].real if herm else A[k, k])
            x = A[k + 1:, k].copy()
            A[k + 1:, k + 1:] -= np.tril(np.outer(x, d * cj(x)))
            A[k + 1:, k] = x * d
            piv[k] = kp + 1
        else:
            c0, c1 = A[k + 2:, k].copy(), A[k + 2:, k + 1].copy()
            if herm:
                r = abs(A[k + 1, k])
                d11, d22 = A[k + 1, k + 1].real / r, A[k, k].real / r
                d21 = A[k + 1, k] / r
                t = (one / (d11 * d22 - 1)) / r
                wk, wk1 = t * (d11 * c0 - d21 * c1), t * (d22 * c1 - np.conj(d21) * c0)
            else:
                d21 = A[k + 1, k]
                d11, d22 = A[k + 1, k + 1] / d21, A[k, k] / d21
                t = (one / (d11 * d22 - 1)) / d21
                wk, wk1 = t * (d11 * c0 - c1), t * (d22 * c1 - c0)
            A[k + 2:, k + 2:] -= np.tril(np.outer(c0, cj(wk)))
            A[k + 2:, k + 2:] -= np.tril(np.outer(c1, cj(wk1)))
            A[k + 2:, k], A[k + 2:, k + 1] = wk, wk1
            piv[k] = piv[k + 1] = -(kp + 1)
        if herm:
            A[range(k, min(k + step, n)), range(k, min(k + step, n))] = A[range(k, min(k + step, n)),
                                                                          range(k, min(k + step, n))].real
        k += step
    return A, piv, info


def ldl_factor_ex(a, hermitian=False):
    """``(LD, pivots, info)``: the Bunch-Kaufman factorization ``A = L D L^T`` (``L D L^H`` with
    ``hermitian``) from the lower triangle, in LAPACK sytrf's compact form: L's unit lower
    triangle and D's 1x1 and 2x2 blocks in LD, 1-based int32 pivots (negative, twice, for a 2x2
    block), info = the first zero diagonal of D (1-based) or 0."""
    A, batch = _flat(a)
    herm = bool(hermitian) and np.iscomplexobj(A)
    parts = [_bk_one(m, herm) for m in A]
    n = a.shape[-1]
    LD = np.stack([p[0] for p in parts]).reshape(a.shape) if parts else np.zeros(a.shape, a.dtype)
    piv = np.array([p[1] for p in parts], np.int32).reshape(batch + (n,))
    info = np.array([p[2] for p in parts], np.int32).reshape(batch)
    return LD, piv, info


def _ldl_solve_one(LD, piv, B, herm):
    """LAPACK sytrs with the lower factor: X with ``A X = B`` for one matrix."""
    n = LD.shape[-1]
    cj = np.conj if herm else (lambda x: x)
    X = np.array(B, dtype=np.result_type(LD, B), copy=True)
    k = 0
    while k < n:  # L D Y = P^T B, forwards
        if piv[k] > 0:
            kp = piv[k] - 1
            X[[k, kp]] = X[[kp, k]]
            X[k + 1:] -= np.outer(LD[k + 1:, k], X[k])
            X[k] /= LD[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            X[[k + 1, kp]] = X[[kp, k + 1]]
            X[k + 2:] -= np.outer(LD[k + 2:, k], X[k]) + np.outer(LD[k + 2:, k + 1], X[k + 1])
            D = np.array([[LD[k, k], cj(LD[k + 1, k])], [LD[k + 1, k], LD[k + 1, k + 1]]])
            X[k:k + 2] = np.linalg.solve(D, X[k:k + 2])
            k += 2
    k = n - 1
    while k >= 0:  # L^T (L^H) X = Y, backwards
        step = 1 if piv[k] > 0 else 2
        for j in range(k, k - step, -1):
            X[j] -= cj(LD[k + 1:, j]) @ X[k + 1:]
        kp = abs(piv[k]) - 1
        X[[k, kp]] = X[[kp, k]]
        k -= step
    return X


def ldl_solve(LD, pivots, B, hermitian=False):
    """X with ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)``; batch dims broadcast."""
    batch = np.broadcast_shapes(LD.shape[:-2], pivots.shape[:-1], B.shape[:-2])
    n = LD.shape[-1]
    LDb = np.broadcast_to(LD, batch + LD.shape[-2:]).reshape((-1, n, n))
    Pb = np.broadcast_to(pivots, batch + (n,)).reshape((-1, n))
    Bb = np.broadcast_to(B, batch + B.shape[-2:]).reshape((-1,) + B.shape[-2:])
    herm = bool(hermitian) and np.iscomplexobj(LD)
    out = [_ldl_solve_one(LDb[i], Pb[i], Bb[i], herm) for i in range(Bb.shape[0])]
    dt = np.result_type(LD, B)
    return (np.stack(out) if out else np.zeros(Bb.shape, dt)).reshape(batch + B.shape[-2:])
