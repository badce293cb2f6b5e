"""Op table, factorizations and solvers (``ember.linalg`` and its top-level aliases) against
numpy float64, on every layout, batched, gradchecked in float64 (and twice: the backward formulas
are ember ops). Inputs are made well-conditioned in the op under test (``a + 8 I``; symmetric
positive-definite ``a a^T + 4 I``); non-unique factors are compared through what is unique
(reconstructions, ``|V|``, orthogonality)."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
L = ember.linalg


def _eye(a):
    n = a.shape[-1]
    return ember.eye(n, dtype=a.dtype, device=a.device) if isinstance(a, ember.Tensor) else np.eye(n)


def wc(a):
    """Well-conditioned: ``a + 8 I`` (entries of a in [-3, 3))."""
    return a + 8 * _eye(a)


def spd(a):
    """Symmetric positive-definite: ``a a^T + 4 I``."""
    return a @ a.mT + 4 * _eye(a) if isinstance(a, ember.Tensor) else a @ np.swapaxes(a, -1, -2) + 4 * _eye(a)


def sym(a):
    return a + a.mT if isinstance(a, ember.Tensor) else a + np.swapaxes(a, -1, -2)


def _T(a):
    return a.mT if isinstance(a, ember.Tensor) else np.swapaxes(a, -1, -2)


def _qr_parts(q, r):
    return q @ r, _T(q) @ q, r.abs() if isinstance(r, ember.Tensor) else np.abs(r)


def _np_qr(a):
    q, r = np.linalg.qr(a)
    return q @ r, _T(q) @ q, np.abs(r)


def _eigh_parts(a):
    w, v = L.eigh(sym(a))
    return w, (v * w.unsqueeze(-2)) @ v.mT, v.abs()


def _np_eigh(a):
    w, v = np.linalg.eigh(sym(a))
    return w, (v * w[..., None, :]) @ _T(v), np.abs(v)


def _svd_parts(a):
    u, s, vh = L.svd(a, full_matrices=False)
    return s, (u * s.unsqueeze(-2)) @ vh, u.abs(), vh.abs()


def _np_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return s, (u * s[..., None, :]) @ vh, np.abs(u), np.abs(vh)


def _np_tri(a, b, upper, left=True, unit=False):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t - np.diagflat(np.diagonal(t)) + np.eye(t.shape[-1]) if t.ndim == 2 else t
    return np.linalg.solve(t, b) if left else _T(np.linalg.solve(_T(t), _T(b)))


def _np_expm(a):
    r = np.eye(a.shape[-1]) + 0 * a
    term = r
    for k in range(1, 40):
        term = term @ a / k
        r = r + term
    return r


S = (3, 4, 4)
SQ = (4, 4)

FACTOR_CASES = [
    C("linalg_inv", lambda a: L.inv(wc(a)), lambda a: np.linalg.inv(wc(a)), [S], dtypes=F, grad=True),
    C("inverse", lambda a: ember.inverse(wc(a)), lambda a: np.linalg.inv(wc(a)), [SQ], dtypes=F, grad=True),
    C("linalg_det", lambda a: L.det(wc(a)), lambda a: np.linalg.det(wc(a)), [S], dtypes=F, grad=True, rtol=1e-4),
    C("linalg_slogdet", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), [S], dtypes=F,
      grad=True),
    C("logdet", lambda a: ember.logdet(spd(a)), lambda a: np.linalg.slogdet(spd(a))[1], [SQ], dtypes=F, grad=True),
    C("linalg_solve", lambda a, b: L.solve(wc(a), b), lambda a, b: np.linalg.solve(wc(a), b), [S, (3, 4, 2)],
      dtypes=F, grad=True),
    C("linalg_solve_vector_broadcast", lambda a, b: L.solve(wc(a), b),
      lambda a, b: np.linalg.solve(wc(a), b[..., None])[..., 0], [(2, 1, 4, 4), (4,)], dtypes=F, grad=True),
    C("linalg_solve_right", lambda a, b: L.solve(wc(a), b, left=False),
      lambda a, b: _T(np.linalg.solve(_T(wc(a)), _T(b))), [S, (3, 2, 4)], dtypes=F, grad=True),
    C("linalg_solve_triangular", lambda a, b: L.solve_triangular(wc(a), b, upper=True),
      lambda a, b: _np_tri(wc(a), b, True), [S, (3, 4, 2)], dtypes=F, grad=True),
    C("linalg_solve_triangular_right_unit", lambda a, b: L.solve_triangular(a, b, upper=False, left=False,
                                                                             unitriangular=True),
      lambda a, b: _np_tri(a, b, False, False, True), [SQ, (2, 4)], dtypes=F, grad=True, rtol=1e-4),
    C("linalg_cholesky", lambda a: L.cholesky(spd(a)), lambda a: np.linalg.cholesky(spd(a)), [S], dtypes=F,
      grad=True),
    C("linalg_cholesky_upper", lambda a: L.cholesky(spd(a), upper=True),
      lambda a: _T(np.linalg.cholesky(spd(a))), [SQ], dtypes=F, grad=True),
    C("cholesky_solve", lambda a, b: ember.cholesky_solve(b, L.cholesky(spd(a))),
      lambda a, b: np.linalg.solve(spd(a), b), [S, (3, 4, 2)], dtypes=F, grad=True),
    C("cholesky_inverse", lambda a: ember.cholesky_inverse(L.cholesky(spd(a))), lambda a: np.linalg.inv(spd(a)),
      [SQ], dtypes=F, grad=True),
    C("linalg_qr", lambda a: _qr_parts(*L.qr(a)), _np_qr, [S], dtypes=F, grad=True),
    C("linalg_qr_tall", lambda a: _qr_parts(*L.qr(a)), _np_qr, [(2, 5, 3)], dtypes=F, grad=True),
    C("linalg_qr_wide", lambda a: _qr_parts(*L.qr(a)), _np_qr, [(2, 3, 5)], dtypes=F, grad=True),
    C("linalg_eigh", _eigh_parts, _np_eigh, [S], dtypes=F, grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_eigvalsh", lambda a: L.eigvalsh(sym(a)), lambda a: np.linalg.eigvalsh(sym(a)), [S], dtypes=F,
      grad=True),
    C("linalg_svd", _svd_parts, _np_svd, [(2, 5, 3)], dtypes=F, grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_svd_wide", _svd_parts, _np_svd, [(2, 3, 5)], dtypes=F, grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [S], dtypes=F, grad=True),
    C("svd_torch", lambda a: (ember.svd(a)[1], ember.svd(a)[2].abs()),
      lambda a: (np.linalg.svd(a)[1], np.abs(_T(np.linalg.svd(a)[2]))), [(5, 3)], dtypes=F, grad=True),
    C("linalg_pinv", L.pinv, np.linalg.pinv, [(2, 5, 3)], dtypes=F, grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_lstsq", lambda a, b: L.lstsq(a, b).solution, lambda a, b: np.linalg.pinv(a) @ b, [(5, 3), (5, 2)],
      dtypes=F, grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_matrix_rank", lambda a: L.matrix_rank(a), lambda a: np.linalg.matrix_rank(a), [S], dtypes=F),
    C("linalg_matrix_norm", lambda a: tuple(L.matrix_norm(a, o) for o in ("fro", "nuc", 1, -1, 2, -2)),
      lambda a: tuple(np.linalg.norm(a, o, axis=(-2, -1)) for o in ("fro", "nuc", 1, -1, 2, -2)), [S], dtypes=F,
      grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_norm_vector", lambda a: L.norm(a, 3, dim=-1), lambda a: np.linalg.norm(a, 3, axis=-1), [S],
      dtypes=F, grad=True),
    C("linalg_vector_norm", lambda a: L.vector_norm(a, 1), lambda a: np.abs(a).sum(), [S], dtypes=F, grad=True),
    C("linalg_cond", lambda a: L.cond(wc(a)), lambda a: np.linalg.cond(wc(a)), [S], dtypes=F, grad=True, rtol=1e-4),
    C("linalg_matrix_power_negative", lambda a: L.matrix_power(wc(a), -2),
      lambda a: np.linalg.matrix_power(wc(a), -2), [S], dtypes=F, grad=True, rtol=1e-4),
    C("linalg_matrix_exp", lambda a: L.matrix_exp(a), _np_expm, [S], dtypes=F, grad=True, rtol=1e-4, atol=1e-4),
    C("linalg_lu_factor", lambda a: L.lu_factor(wc(a)).LU, lambda a: _np_lu(wc(a)), [S], dtypes=F, grad=True),
    C("linalg_lu_reconstruct", lambda a: (lambda p, lo, up: p @ lo @ up)(*L.lu(a)), lambda a: a, [S], dtypes=F,
      grad=True),
    C("linalg_lu_solve", lambda a, b: L.lu_solve(*L.lu_factor(wc(a)), b),
      lambda a, b: np.linalg.solve(wc(a), b), [S, (3, 4, 2)], dtypes=F, grad=True),
    C("linalg_lu_solve_adjoint_right", lambda a, b: L.lu_solve(*L.lu_factor(wc(a)), b, left=False, adjoint=True),
      lambda a, b: _T(np.linalg.solve(wc(a), _T(b))), [S, (3, 2, 4)], dtypes=F),
    C("linalg_householder_product", lambda a, t: L.householder_product(a, t),
      lambda a, t: _np_householder(a, t), [(5, 3), (2,)], dtypes=F, grad=True),
    C("linalg_vecdot", lambda a, b: L.vecdot(a, b), lambda a, b: (a * b).sum(-1), [S, (4,)], dtypes=F, grad=True),
    C("linalg_multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: a @ b @ c, [(3,), (3, 4), (4, 2)],
      dtypes=F, grad=True),
    C("linalg_cross", lambda a, b: L.cross(a, b), lambda a, b: np.cross(a, b), [(2, 3), (2, 3)], dtypes=F,
      grad=True),
    C("linalg_vander", L.vander, lambda x: np.vander(x, increasing=True), [(4,)], dtypes=F, grad=True),
    C("linalg_ldl_solve", lambda a, b: L.ldl_solve(*L.ldl_factor(sym(a) + _alt(a)), b),
      lambda a, b: np.linalg.solve(sym(a) + _alt(a), b), [S, (3, 4, 2)], dtypes=F, rtol=1e-4, atol=1e-4),
    C("linalg_ldl_factor_reconstruct", lambda a: _ldl_rebuild(*L.ldl_factor(sym(a) + _alt(a))),
      lambda a: sym(a) + _alt(a), [S], dtypes=F, rtol=1e-4, atol=1e-4),
    C("linalg_tensorinv", lambda a: L.tensorinv(wc(a.reshape(4, 4)).reshape(2, 2, 4)),
      lambda a: np.linalg.tensorinv(wc(a.reshape(4, 4)).reshape(2, 2, 4)), [(16,)], dtypes=F, grad=True),
    C("linalg_tensorsolve", lambda a, b: L.tensorsolve(wc(a.reshape(4, 4)).reshape(2, 2, 4), b),
      lambda a, b: np.linalg.tensorsolve(wc(a.reshape(4, 4)).reshape(2, 2, 4), b), [(16,), (2, 2)], dtypes=F,
      grad=True),
]


def _np_lu(a):
    a = np.array(a, dtype=np.float64, copy=True)
    out = a.reshape((-1,) + a.shape[-2:])
    for m in out:
        n = m.shape[-1]
        for j in range(n):
            p = j + np.argmax(np.abs(m[j:, j]))
            m[[j, p]] = m[[p, j]]
            m[j + 1:, j] /= m[j, j]
            m[j + 1:, j + 1:] -= np.outer(m[j + 1:, j], m[j, j + 1:])
    return out.reshape(a.shape)


def _np_householder(a, tau):
    m, n = a.shape
    q = np.eye(m)
    for i in range(len(tau)):
        v = np.zeros(m)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :n]


def _alt(a):
    """An indefinite, well-conditioned diagonal: +-6 alternating (2x2 pivots still occur)."""
    n = a.shape[-1]
    d = [6.0 * (-1) ** i for i in range(n)]
    return ember.diag(ember.tensor(d, dtype=a.dtype, device=a.device)) if isinstance(a, ember.Tensor) else np.diag(d)


def _ldl_rebuild(LD, piv):
    """``A`` from ldl_factor's compact form, applying LAPACK's interchanges (an ember computation
    on the host: the identity ``A = P L D L^T P^T`` checks LD and the pivots together)."""
    ld, p = LD.numpy(force=True).astype(np.float64), piv.numpy(force=True)
    out = np.empty(ld.shape)
    for idx in np.ndindex(ld.shape[:-2]):
        m, q = ld[idx], p[idx]
        n = m.shape[-1]
        Lm, D = np.eye(n), np.zeros((n, n))
        M = np.eye(n)  # the running product P1 L1 P2 L2 ...
        k = 0
        while k < n:
            s = 1 if q[k] > 0 else 2
            kp = abs(q[k]) - 1
            Pk = np.eye(n)
            Pk[[k + s - 1, kp]] = Pk[[kp, k + s - 1]]
            Lk = np.eye(n)
            Lk[k + s:, k:k + s] = m[k + s:, k:k + s]
            D[k:k + s, k:k + s] = m[k:k + s, k:k + s]
            if s == 2:
                D[k, k + 1] = m[k + 1, k]
            M = M @ Pk @ Lk
            k += s
        Lm = M
        out[idx] = Lm @ D @ Lm.T
    return ember.tensor(out, dtype=LD.dtype, device=LD.device)
