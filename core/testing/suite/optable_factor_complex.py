"""Op table, ``ember.linalg`` on complex64/complex128 against numpy complex128, on every layout,
batched; and complex128 gradchecks of the same functions (PyTorch's conjugate convention). Run by
the complex tier (``test_04f_complex``) for the backends that declare the complex dtypes.

Inputs are made well-conditioned in the function under test (``a + 8 I``; Hermitian
positive-definite ``a a^H + 4 I``; Hermitian ``a + a^H``). What is unique only up to a phase is
compared through what is not: reconstructions, moduli, projectors. The eigenvalues of ``eig``,
whose order is LAPACK's, are compared as a multiset through their power sums ``sum L^k``,
k = 1..n (which determine it), the eigenvectors through ``V diag(L) V^-1 = A`` and unit norms.
Gradchecked losses never depend on those free phases (PyTorch refuses such losses)."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

__all__ = ["COMPLEX_FACTOR_CASES", "COMPLEX_FACTOR_GRADS"]

CX = (ember.complex64, ember.complex128)
L = ember.linalg
S = (2, 3, 3)
SQ = (3, 3)


def _is_t(a):
    return isinstance(a, ember.Tensor)


def _H(a):
    return a.mH if _is_t(a) else np.conj(np.swapaxes(a, -1, -2))


def _eye(a):
    n = a.shape[-1]
    return ember.eye(n, dtype=a.dtype, device=a.device) if _is_t(a) else np.eye(n)


def wc(a):
    return a + 8 * _eye(a)


def hpd(a):
    return a @ _H(a) + 4 * _eye(a)


def herm(a):
    return a + _H(a)


def _abs(a):
    return a.abs() if _is_t(a) else np.abs(a)


def _eig_parts(a):
    w, v = L.eig(a)
    n = a.shape[-1]
    sums = tuple((w ** k).sum(-1) for k in range(1, n + 1))
    return sums + ((v * w.unsqueeze(-2)) @ L.inv(v), L.vector_norm(v, dim=-2))


def _np_eig_parts(a):
    w = np.linalg.eigvals(a)
    n = a.shape[-1]
    sums = tuple((w ** k).sum(-1) for k in range(1, n + 1))
    return sums + (a, np.ones(a.shape[:-1]))


def _power_sums(w):
    return tuple((w ** k).sum(-1) for k in range(1, w.shape[-1] + 1))


def _qr_parts(a):
    q, r = L.qr(a) if _is_t(a) else np.linalg.qr(a)
    return q @ r, _H(q) @ q, _abs(r)


def _eigh_parts(a):
    w, v = L.eigh(herm(a)) if _is_t(a) else np.linalg.eigh(herm(a))
    d = w.unsqueeze(-2) if _is_t(a) else w[..., None, :]
    return w, (v * d) @ _H(v), _abs(v)


def _svd_parts(a):
    u, s, vh = L.svd(a, full_matrices=False) if _is_t(a) else np.linalg.svd(a, full_matrices=False)
    d = s.unsqueeze(-2) if _is_t(a) else s[..., None, :]
    return s, (u * d) @ vh, _abs(u), _abs(vh), u @ vh


def _np_tri(a, b, upper):
    return np.linalg.solve(np.triu(a) if upper else np.tril(a), b)


def _np_expm(a):
    r = np.eye(a.shape[-1]) + 0 * a
    term = r
    for k in range(1, 40):
        term = term @ a / k
        r = r + term
    return r


def _np_lu(a):
    """LAPACK getrf's packed factors, pivoting on |re| + |im| as LAPACK does for complex."""
    out = np.array(a, dtype=np.complex128, copy=True).reshape((-1,) + a.shape[-2:])
    for m in out:
        for j in range(m.shape[-1]):
            p = j + np.argmax(np.abs(m[j:, j].real) + np.abs(m[j:, j].imag))
            m[[j, p]] = m[[p, j]]
            m[j + 1:, j] /= m[j, j]
            m[j + 1:, j + 1:] -= np.outer(m[j + 1:, j], m[j, j + 1:])
    return out.reshape(a.shape)


def _np_householder(a, tau):
    m, n = a.shape
    q = np.eye(m, dtype=np.complex128)
    for i in range(len(tau)):
        v = np.zeros(m, np.complex128)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, np.conj(v)))
    return q[:, :n]


_ORDS = ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
_TOL = {"rtol": 1e-4, "atol": 1e-4}

COMPLEX_FACTOR_CASES = [
    C("linalg_eig", _eig_parts, _np_eig_parts, [S], dtypes=CX, **_TOL),
    C("linalg_eig_real_input", _eig_parts, _np_eig_parts, [S], dtypes=(ember.float32, ember.float64), **_TOL),
    C("linalg_eigvals", lambda a: _power_sums(L.eigvals(a)), lambda a: _power_sums(np.linalg.eigvals(a)), [S],
      dtypes=CX, **_TOL),
    C("linalg_inv", lambda a: L.inv(wc(a)), lambda a: np.linalg.inv(wc(a)), [S], dtypes=CX),
    C("linalg_det", lambda a: L.det(wc(a)), lambda a: np.linalg.det(wc(a)), [S], dtypes=CX, rtol=1e-4),
    C("linalg_slogdet", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)), [S], dtypes=CX,
      **_TOL),
    C("logdet", lambda a: ember.logdet(wc(a)), lambda a: np.log(np.linalg.det(wc(a))), [S], dtypes=CX, **_TOL),
    C("linalg_solve", lambda a, b: L.solve(wc(a), b), lambda a, b: np.linalg.solve(wc(a), b), [S, (2, 3, 2)],
      dtypes=CX),
    C("linalg_solve_triangular", lambda a, b: L.solve_triangular(wc(a), b, upper=True),
      lambda a, b: _np_tri(wc(a), b, True), [S, (2, 3, 2)], dtypes=CX),
    C("linalg_cholesky", lambda a: L.cholesky(hpd(a)), lambda a: np.linalg.cholesky(hpd(a)), [S], dtypes=CX),
    C("linalg_cholesky_upper", lambda a: L.cholesky(hpd(a), upper=True), lambda a: _H(np.linalg.cholesky(hpd(a))),
      [SQ], dtypes=CX),
    C("cholesky_solve", lambda a, b: ember.cholesky_solve(b, L.cholesky(hpd(a))),
      lambda a, b: np.linalg.solve(hpd(a), b), [S, (2, 3, 2)], dtypes=CX, **_TOL),
    C("linalg_qr", _qr_parts, _qr_parts, [(2, 4, 3)], dtypes=CX, **_TOL),
    C("linalg_qr_wide", _qr_parts, _qr_parts, [(2, 3, 4)], dtypes=CX, **_TOL),
    C("linalg_eigh", _eigh_parts, _eigh_parts, [S], dtypes=CX, **_TOL),
    C("linalg_eigvalsh", lambda a: L.eigvalsh(herm(a)), lambda a: np.linalg.eigvalsh(herm(a)), [S], dtypes=CX),
    C("linalg_svd", _svd_parts, _svd_parts, [(2, 4, 3)], dtypes=CX, **_TOL),
    C("linalg_svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [S], dtypes=CX, **_TOL),
    C("linalg_pinv", L.pinv, np.linalg.pinv, [(2, 4, 3)], dtypes=CX, **_TOL),
    C("linalg_pinv_hermitian", lambda a: L.pinv(hpd(a), hermitian=True), lambda a: np.linalg.inv(hpd(a)), [S],
      dtypes=CX, **_TOL),
    C("linalg_lstsq", lambda a, b: L.lstsq(a, b).solution, lambda a, b: np.linalg.pinv(a) @ b, [(4, 3), (4, 2)],
      dtypes=CX, **_TOL),
    C("linalg_matrix_rank", L.matrix_rank, np.linalg.matrix_rank, [S], dtypes=CX),
    C("linalg_matrix_norm", lambda a: tuple(L.matrix_norm(a, o) for o in _ORDS),
      lambda a: tuple(np.linalg.norm(a, o, axis=(-2, -1)) for o in _ORDS), [S], dtypes=CX, **_TOL),
    C("linalg_vector_norm", lambda a: tuple(L.vector_norm(a, o, dim=-1) for o in (2, 1, 3, np.inf, 0)),
      lambda a: tuple(np.linalg.norm(a, o, axis=-1) for o in (2, 1, 3, np.inf, 0)), [S], dtypes=CX, **_TOL),
    C("linalg_cond", lambda a: (L.cond(wc(a)), L.cond(wc(a), "fro")),
      lambda a: (np.linalg.cond(wc(a)), np.linalg.cond(wc(a), "fro")), [S], dtypes=CX, **_TOL),
    C("linalg_matrix_power", lambda a: (L.matrix_power(a, 3), L.matrix_power(wc(a), -2)),
      lambda a: (np.linalg.matrix_power(a, 3), np.linalg.matrix_power(wc(a), -2)), [S], dtypes=CX, **_TOL),
    C("linalg_matrix_exp", L.matrix_exp, _np_expm, [S], dtypes=CX, **_TOL),
    C("linalg_lu_factor", lambda a: L.lu_factor(a).LU, _np_lu, [S], dtypes=CX, **_TOL),
    C("linalg_lu_reconstruct", lambda a: (lambda p, lo, up: p @ lo @ up)(*L.lu(a)), lambda a: a, [S], dtypes=CX),
    C("linalg_lu_solve_adjoint", lambda a, b: L.lu_solve(*L.lu_factor(wc(a)), b, adjoint=True),
      lambda a, b: np.linalg.solve(_H(wc(a)), b), [S, (2, 3, 2)], dtypes=CX, **_TOL),
    C("linalg_ldl_solve_hermitian", lambda a, b: L.ldl_solve(*L.ldl_factor(herm(a), hermitian=True), b,
                                                             hermitian=True),
      lambda a, b: np.linalg.solve(herm(a), b), [S, (2, 3, 2)], dtypes=CX, **_TOL),
    C("linalg_ldl_solve_symmetric", lambda a, b: L.ldl_solve(*L.ldl_factor(a + a.mT), b),
      lambda a, b: np.linalg.solve(a + np.swapaxes(a, -1, -2), b), [S, (2, 3, 2)], dtypes=CX, rtol=1e-3, atol=1e-3),
    C("linalg_householder_product", L.householder_product, _np_householder, [(4, 3), (2,)], dtypes=CX),
    C("linalg_vecdot", L.vecdot, lambda a, b: (np.conj(a) * b).sum(-1), [S, (3,)], dtypes=CX),
    C("vdot", ember.vdot, np.vdot, [(5,), (5,)], dtypes=CX),
    C("dot", ember.dot, np.dot, [(5,), (5,)], dtypes=CX),
    C("inner", ember.inner, np.inner, [(2, 3), (4, 3)], dtypes=CX),
    C("outer", ember.outer, np.outer, [(3,), (4,)], dtypes=CX),
    C("addmm", lambda i, a, b: ember.addmm(i, a, b, beta=0.5 + 1j, alpha=2 - 1j),
      lambda i, a, b: (0.5 + 1j) * i + (2 - 1j) * (a @ b), [(2, 4), (2, 3), (3, 4)], dtypes=CX),
    C("linalg_multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: a @ b @ c, [(3,), (3, 4), (4, 2)],
      dtypes=CX),
    C("linalg_cross", L.cross, np.cross, [(2, 3), (2, 3)], dtypes=CX),
    C("linalg_vander", L.vander, lambda x: np.vander(x, increasing=True), [(4,)], dtypes=CX),
]


def _eig_loss(a):
    w, v = L.eig(a)
    return w, v.abs(), (v * v.conj()).real


#: name -> (function, input shapes): gradchecked in complex128
COMPLEX_FACTOR_GRADS = {
    "eig": (_eig_loss, [S]),
    "eig_real_input": (lambda a: _eig_loss(a.real), [SQ]),
    "eigvals": (L.eigvals, [S]),
    "inv": (lambda a: L.inv(wc(a)), [S]),
    "det": (lambda a: L.det(wc(a)), [S]),
    "slogdet": (lambda a: tuple(L.slogdet(wc(a))), [S]),
    "logdet": (lambda a: ember.logdet(wc(a)), [SQ]),
    "solve": (lambda a, b: L.solve(wc(a), b), [S, (2, 3, 2)]),
    "solve_triangular": (lambda a, b: L.solve_triangular(wc(a), b, upper=False, left=False), [S, (2, 2, 3)]),
    "cholesky": (lambda a: L.cholesky(hpd(a)), [S]),
    "cholesky_solve": (lambda a, b: ember.cholesky_solve(b, L.cholesky(hpd(a))), [SQ, (3, 2)]),
    "qr": (lambda a: tuple(L.qr(a)), [(4, 3)]),
    "qr_wide": (lambda a: tuple(L.qr(a)), [(3, 4)]),
    "eigh": (lambda a: (lambda w, v: (w, v.abs(), v[..., :2] @ v[..., :2].mH))(*L.eigh(herm(a))), [S]),
    "eigvalsh": (lambda a: L.eigvalsh(herm(a)), [S]),
    "svd": (lambda a: (lambda u, s, vh: (s, u.abs(), u @ vh))(*L.svd(a, full_matrices=False)), [(4, 3)]),
    "svdvals": (L.svdvals, [(3, 4)]),
    "pinv": (L.pinv, [(4, 3)]),
    "lstsq": (lambda a, b: L.lstsq(a, b).solution, [(4, 3), (4, 2)]),
    "matrix_norm": (lambda a: tuple(L.matrix_norm(a, o) for o in ("fro", "nuc", 2, 1)), [S]),
    "vector_norm": (lambda a: (L.vector_norm(a), L.vector_norm(a, 3, dim=-1)), [S]),
    "cond": (lambda a: L.cond(wc(a)), [SQ]),
    "matrix_power": (lambda a: L.matrix_power(wc(a), -2), [SQ]),
    "matrix_exp": (L.matrix_exp, [SQ]),
    "lu_factor": (lambda a: L.lu_factor(wc(a)).LU, [SQ]),
    "lu_solve": (lambda a, b: L.lu_solve(*L.lu_factor(wc(a)), b, adjoint=True), [SQ, (3, 2)]),
    "householder_product": (L.householder_product, [(4, 3), (2,)]),
    "vecdot": (L.vecdot, [S, (3,)]),
    "vdot": (ember.vdot, [(4,), (4,)]),
    "multi_dot": (lambda a, b, c: L.multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)]),
    "cross": (L.cross, [(2, 3), (2, 3)]),
    "vander": (L.vander, [(3,)]),
}
