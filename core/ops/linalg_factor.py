"""The linear-algebra kernel ops: the factorizations and solvers a backend may implement
(``_linalg_cholesky_ex``, ``_linalg_qr``, ``_linalg_eig``, ``_linalg_eigh``, ``_linalg_svd``,
``_linalg_lu_factor_ex``, ``_linalg_solve_triangular``, ``_linalg_inv_ex``, ``_linalg_solve_ex``,
``_linalg_det``, ``_linalg_slogdet``). Each has no decomposition but a declared **host path**
(:mod:`ember.ops.linalg_host`, numpy): a backend without the kernel computes it on the host with
copies (reported as "host" by the conformance suite's coverage table). Their backward formulas
are written in ember ops (these same kernel ops), so double backward works on every backend.

These are internal ops with their kernel arguments as signature; the public functions
(``ember.linalg.*`` and the top-level aliases) are the composites of :mod:`ember.ops.linalg_api`,
which check ``info`` and raise :class:`LinAlgError` as PyTorch does.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from . import _args as U
from . import creation as CR
from . import linalg_host as H
from . import shape as SH
from .declare import defop

__all__ = ["LinAlgError"]


class LinAlgError(RuntimeError):
    """A linear-algebra function failed on its input (a singular matrix, a matrix that is not
    positive-definite); ``torch.linalg.LinAlgError``, a RuntimeError subclass."""


_LOW = (D.float16, D.bfloat16)


def type_desc(dt) -> str:
    try:
        return U.type_name(dt)
    except KeyError:
        return dt.name


def check_float(op: str, A, kernel: str = ""):
    """PyTorch's refusal of integer and low-precision inputs of the linalg functions."""
    dt = A._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {type_desc(dt)}")
    if dt in _LOW:
        if kernel:
            raise U.dtype_not_implemented(kernel, dt, f"{op} of {U.desc(A)}")
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {type_desc(dt)}")


def check_matrix(op: str, A, name: str = "A"):
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")


def check_square(op: str, A, name: str = "A"):
    check_matrix(op, A, name)
    if A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {A._shape[-2]} by "
                           f"{A._shape[-1]} matrices")


def check_same_dtype(op: str, A, B):
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type {type_desc(A._dtype)} "
                           f"and B of type {type_desc(B._dtype)} instead")


def mH(x):
    return x.mT.conj() if x._dtype.is_complex else x.mT


def conj(x):
    return x.conj() if x._dtype.is_complex else x


def _mm(a, b):
    return a.matmul(b)


def _scale_cols(x, s):
    """``x @ diag(s)``."""
    return x * s.unsqueeze(-2)


# -- Cholesky ----------------------------------------------------------------------------------------

def _cholesky_bw(ctx, g):
    A, upper = ctx.args
    L = ctx.out[0]
    gL = g[0]
    if gL is None:
        return (None,)
    L_ = mH(L) if upper else L
    gL_ = mH(gL) if upper else gL
    gA = _mm(mH(L_), gL_).tril()
    gA = 0.5 * (gA + mH(gA.tril(-1)))
    gA = solve_triangular_k(mH(L_), gA, True, True, False)
    gA = solve_triangular_k(L_, gA, False, False, False)
    return (gA,)


@defop("_linalg_cholesky_ex", backward=_cholesky_bw, saves=(), save_output=(0,), out=False, method=False,
       group="linalg", host=H.cholesky_ex)
def cholesky_ex_k(A, upper=False):
    """``(L, info)``: the Cholesky factor of the lower triangle of ``A`` (its conjugate transpose
    with ``upper``), info = the order of the first leading minor that is not positive-definite."""
    return A._device, (A, bool(upper)), (A,)


# -- QR ----------------------------------------------------------------------------------------------

def _copyltu(M):
    """The Hermitian matrix with M's strict lower triangle (the real part of its diagonal)."""
    low = M.tril(-1)
    d = M.diagonal(0, -2, -1)
    if M._dtype.is_complex:
        d = d.real.to(M._dtype)
    return low + mH(low) + d.diag_embed()


def _qr_square_bw(Q, R, gQ, gR):
    """gA for A = QR with m >= n (reduced): (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q."""
    M = None
    if gR is not None:
        M = _mm(R, mH(gR))
    if gQ is not None:
        t = _mm(mH(gQ), Q)
        M = -t if M is None else M - t
    b = _mm(Q, _copyltu(M))
    if gQ is not None:
        b = b + gQ
    return solve_triangular_k(mH(R), b, False, False, False)


def _qr_bw(ctx, g):
    A, mode = ctx.args
    Q, R = ctx.out
    gQ, gR = g
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    m, n = A.shape[-2:]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if gQ is None and gR is None:
        return (None,)
    if m >= n:
        return (_qr_square_bw(Q, R, gQ, gR),)
    # wide: A = Q [U V], X = A[..., :m] = Q U, Y = Q V (A is not saved); gY = Q gV, gX from the
    # square case with gQ + Y gV^H
    V = R.narrow(-1, m, n - m)
    Y = _mm(Q, V)
    gU = gR.narrow(-1, 0, m) if gR is not None else None
    gV = gR.narrow(-1, m, n - m) if gR is not None else None
    gQ2 = gQ
    if gV is not None:
        t = _mm(Y, mH(gV))
        gQ2 = t if gQ2 is None else gQ2 + t
    gX = _qr_square_bw(Q, R.narrow(-1, 0, m), gQ2, gU)
    gY = _mm(Q, gV) if gV is not None else CR.zeros(Y._shape, dtype=Y._dtype, device=Y._device)
    return (SH.cat([gX, gY], -1),)


@defop("_linalg_qr", backward=_qr_bw, saves=(), save_output=True, out=False, method=False, group="linalg",
       materialize=False, host=H.qr)
def qr_k(A, mode="reduced"):
    """``(Q, R)`` (mode 'reduced', 'complete' or 'r', which gives an empty Q)."""
    return A._device, (A, mode), (A,)


EIGVEC_PHASE = ("The eigenvectors in the complex case are specified up to multiplication by e^{i phi}. The specified "
                "loss function depends on this quantity, so it is ill-defined.")


# -- eigh ----------------------------------------------------------------------------------------------

def _eigh_bw(ctx, g):
    A, uplo, compute_v = ctx.args
    L, V = ctx.out
    gL, gV = g
    if not compute_v:
        raise RuntimeError("linalg.eigvalsh: the derivative needs the eigenvectors, which were not computed "
                           "(ember computes them whenever the input requires grad)")
    if gV is None:
        if gL is None:
            return (None,)
        return (_mm(_scale_cols(V, gL.to(V._dtype)), mH(V)),)
    E = L.unsqueeze(-2) - L.unsqueeze(-1)  # E_ij = L_j - L_i
    n = L._shape[-1]
    eye = CR.eye(n, dtype=D.bool, device=L._device)
    E = E.where(~eye, 1.0)
    VhgV = _mm(mH(V), gV)
    if V._dtype.is_complex:
        gauge_check("linalg_eigh_backward", VhgV.diagonal(0, -2, -1).imag, EIGVEC_PHASE)
    # the skew-Hermitian part (PyTorch's): the gradient is Hermitian, as the input is taken to be
    inner = ((VhgV - mH(VhgV)) * 0.5 / E).where(~eye, 0.0)
    if gL is not None:
        inner = inner + gL.to(inner._dtype).diag_embed()
    return (_mm(_mm(V, inner), mH(V)),)


@defop("_linalg_eigh", backward=_eigh_bw, saves=(), save_output=True, out=False, method=False, group="linalg",
       materialize=False, host=H.eigh)
def eigh_k(A, UPLO="L", compute_v=True):
    """``(eigenvalues, eigenvectors)`` of the Hermitian matrix given by the ``UPLO`` triangle of
    ``A``, ascending; without ``compute_v`` an empty second result."""
    return A._device, (A, UPLO, bool(compute_v)), (A,)


def gauge_check(op: str, d, message: str) -> None:
    """PyTorch's refusal of a loss that depends on the free phases of complex singular vectors or
    eigenvectors: ``d`` (the phase derivatives, ``Im diag(V^H gV)`` and the like) must vanish, up
    to rounding (a host synchronisation, as in PyTorch)."""
    tol = math.sqrt(D.finfo(d._dtype).eps) * 10
    if d.numel() and bool((d.abs() > tol * (1 + d.abs().amax())).any()):
        raise RuntimeError(f"{op}: {message}")


def _phase_term(op, J, K, message):
    """``Im diag(J) - Im diag(K)`` for the SVD's phase terms (J = U^H gU, K = V^H gV), after
    checking that their sum, the loss's derivative along the free phases, vanishes."""
    zero = None
    dj = J.diagonal(0, -2, -1).imag if J is not None else zero
    dk = K.diagonal(0, -2, -1).imag if K is not None else zero
    total = dj if dk is None else (dk if dj is None else dj + dk)
    gauge_check(op, total, message)
    if dk is None:
        return dj * 2
    if dj is None:
        return -dk * 2
    return dj - dk


# -- eig -----------------------------------------------------------------------------------------------

def _eig_bw(ctx, g):
    """A V = V diag(L) with unit columns: with P = V^-1 dA V, dL = diag(P) and V^-1 dV = P / E off
    the diagonal (E_ij = L_j - L_i), its diagonal fixed by the unit norms up to the free phases;
    so gA = V^-H (diag(gL) + (W - V^H V Re diag(W)) / conj(E)) V^H, W = V^H gV (off the diagonal)."""
    A, compute_v = ctx.args
    L, V = ctx.out
    gL, gV = g
    if not compute_v:
        raise RuntimeError("linalg.eigvals: the derivative needs the eigenvectors, which were not computed "
                           "(ember computes them whenever the input requires grad)")
    if gL is None and gV is None:
        return (None,)
    n = L._shape[-1]
    eye = CR.eye(n, dtype=D.bool, device=L._device)
    VH = mH(V)
    if gV is not None:
        W = _mm(VH, gV)
        gauge_check("linalg_eig_backward", W.diagonal(0, -2, -1).imag, EIGVEC_PHASE)
        W = W - _scale_cols(_mm(VH, V), W.diagonal(0, -2, -1).real.to(V._dtype))
        E = (L.unsqueeze(-2) - L.unsqueeze(-1)).conj().where(~eye, 1.0)
        inner = (W / E).where(~eye, 0.0)
        if gL is not None:
            inner = inner + gL.diag_embed()
    else:
        inner = gL.diag_embed()
    return (solve_ex_k(VH, _mm(inner, VH), True)[0],)


@defop("_linalg_eig", backward=_eig_bw, saves=(), save_output=True, out=False, method=False, group="linalg",
       materialize=False, host=H.eig)
def eig_k(A, compute_v=True):
    """``(eigenvalues, eigenvectors)`` of a general square matrix, complex (unit-norm eigenvectors,
    LAPACK's geev); without ``compute_v`` an empty second result."""
    return A._device, (A, bool(compute_v)), (A,)


# -- SVD -----------------------------------------------------------------------------------------------

def _svd_bw(ctx, g):
    A, full_matrices, compute_uv = ctx.args
    U_, S, Vh = ctx.out
    gU, gS, gVh = g
    if not compute_uv:
        raise RuntimeError("linalg.svd: the derivative needs U and V, which were not computed (ember computes them "
                           "whenever the input requires grad)")
    m, n = A.shape[-2:]
    k = min(m, n)
    if full_matrices:
        U_, Vh = U_.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = gU.narrow(-1, 0, k) if gU is not None else None
        gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
    if gU is None and gVh is None:
        if gS is None:
            return (None,)
        return (_mm(_scale_cols(U_, gS.to(U_._dtype)), Vh),)
    eye = CR.eye(k, dtype=D.bool, device=S._device)
    S2 = S * S
    E = (S2.unsqueeze(-2) - S2.unsqueeze(-1)).where(~eye, 1.0)  # E_ij = s_j^2 - s_i^2
    inner = None
    J = K = None
    if gU is not None:
        J = _mm(mH(U_), gU)
        inner = (J - mH(J)) * S.unsqueeze(-2)
    V = mH(Vh)
    if gVh is not None:
        gV = mH(gVh)
        K = _mm(Vh, gV)
        t = S.unsqueeze(-1) * (K - mH(K))
        inner = t if inner is None else inner + t
    inner = (inner / E).where(~eye, 0.0)
    if gS is not None:
        inner = inner + gS.to(inner._dtype).diag_embed()
    if U_._dtype.is_complex:  # the phases: d(U_kk^H dU_k - V_k^H dV_k) = i Im(dP_kk) / s_k
        ph = _phase_term("svd_backward", J, K, "The singular vectors in the complex case are specified up to "
                         "multiplication by e^{i phi}. The specified loss function depends on this phase term, making "
                         "it ill-defined.")
        inner = inner + (ph * 0.5j / S).diag_embed()
    gA = _mm(_mm(U_, inner), Vh)
    if m > k and gU is not None:
        gA = gA + _mm(_scale_cols(gU - _mm(U_, J), 1 / S), Vh)
    if n > k and gVh is not None:
        gA = gA + _mm(U_, mH(_scale_cols(gV - _mm(V, K), 1 / S)))
    return (gA,)


@defop("_linalg_svd", backward=_svd_bw, saves=(), save_output=True, out=False, method=False, group="linalg",
       materialize=False, host=H.svd)
def svd_k(A, full_matrices=True, compute_uv=True):
    """``(U, S, Vh)``; without ``compute_uv`` empty U and Vh."""
    return A._device, (A, bool(full_matrices), bool(compute_uv)), (A,)


# -- LU ------------------------------------------------------------------------------------------------

def perm_matrix(pivots, m, dtype, device):
    """P with ``A = P L U`` from LAPACK's 1-based sequential row swaps."""
    k = pivots._shape[-1]
    perm = CR.arange(m, device=device).expand(pivots._shape[:-1] + (m,)).clone()
    for i in range(k):
        j = pivots.narrow(-1, i, 1).long() - 1
        pi = perm.narrow(-1, i, 1).clone()
        pj = perm.gather(-1, j)
        perm.narrow(-1, i, 1).copy_(pj)
        perm.scatter_(-1, j, pi)
    rows = CR.arange(m, device=device).unsqueeze(-1)
    return (perm.unsqueeze(-2) == rows).to(dtype)


def _lu_factor_bw(ctx, g):
    A = ctx.args[0]
    LU, piv = ctx.out[0], ctx.out[1]
    gLU = g[0]
    if gLU is None:
        return (None,)
    m, n = A.shape[-2:]
    if m != n:
        raise NotImplementedError("linalg.lu_factor: ember differentiates the LU factorization of square matrices only "
                                  f"(got {m} by {n} matrices)")
    P = perm_matrix(piv, m, LU._dtype, LU._device)
    L = LU.tril(-1) + CR.eye(m, dtype=LU._dtype, device=LU._device)
    U_ = LU.triu()
    phi = _mm(mH(L), gLU.tril(-1)).tril(-1) + _mm(gLU.triu(), mH(U_)).triu()
    gA = _mm(P, solve_triangular_k(mH(L), phi, True, True, True))
    return (solve_triangular_k(mH(U_), gA, False, False, False),)


@defop("_linalg_lu_factor_ex", backward=_lu_factor_bw, saves=(), save_output=(0, 1), out=False, method=False,
       group="linalg", host=H.lu_factor_ex)
def lu_factor_ex_k(A, pivot=True):
    """``(LU, pivots, info)``: LAPACK getrf's packed factors, 1-based int32 pivots, info."""
    return A._device, (A, bool(pivot)), (A,)


# -- triangular solve, inverse, solve ------------------------------------------------------------------

def _tri_mask(gA, upper, unitriangular):
    gA = gA.triu() if upper else gA.tril()
    if unitriangular:
        gA = gA.triu(1) if upper else gA.tril(-1)
    return gA


def _solve_tri_bw(ctx, g):
    A, B, upper, left, unit = ctx.args
    X = ctx.out
    gB = solve_triangular_k(mH(A), g, not upper, left, unit)
    gA = None
    if ctx.needs_input_grad[0]:
        gA = _tri_mask(-(_mm(gB, mH(X)) if left else _mm(mH(X), gB)), upper, unit)
    return (gA, gB if ctx.needs_input_grad[1] else None)


@defop("_linalg_solve_triangular", backward=_solve_tri_bw, saves=(0,), save_output=True, out=False, method=False,
       group="linalg", host=H.solve_triangular)
def solve_triangular_k(A, B, upper, left=True, unitriangular=False):
    """``X`` with ``tri(A) X = B`` (``X tri(A) = B`` when not ``left``), batch dims broadcast."""
    return A._device, (A, B, bool(upper), bool(left), bool(unitriangular)), (A, B)


def _inv_bw(ctx, g):
    Ai = ctx.out[0]
    if g[0] is None:
        return (None,)
    AiH = mH(Ai)
    return (-_mm(_mm(AiH, g[0]), AiH),)


@defop("_linalg_inv_ex", backward=_inv_bw, saves=(), save_output=(0,), out=False, method=False, group="linalg",
       host=H.inv_ex)
def inv_ex_k(A):
    """``(inverse, info)``."""
    return A._device, (A,), (A,)


def _solve_bw(ctx, g):
    A, B, left = ctx.args
    X = ctx.out[0]
    gX = g[0]
    if gX is None:
        return (None, None)
    gB = solve_ex_k(mH(A), gX, left)[0]
    gA = None
    if ctx.needs_input_grad[0]:
        gA = -(_mm(gB, mH(X)) if left else _mm(mH(X), gB))
    return (gA, gB if ctx.needs_input_grad[1] else None)


@defop("_linalg_solve_ex", backward=_solve_bw, saves=(0,), save_output=(0,), out=False, method=False,
       group="linalg", host=H.solve_ex)
def solve_ex_k(A, B, left=True):
    """``(X, info)`` with ``A X = B`` (``X A = B`` when not ``left``), B a (batch of) matrices."""
    return A._device, (A, B, bool(left)), (A, B)


# -- determinants --------------------------------------------------------------------------------------

def _exclusive_prod(s):
    """``prod_{j != i} s_j`` along the last dim, without dividing (zeros allowed)."""
    one = CR.ones(s._shape[:-1] + (1,), dtype=s._dtype, device=s._device)
    pre = SH.cat([one, s.narrow(-1, 0, s._shape[-1] - 1)], -1).cumprod(-1)
    rs = s.flip(-1)
    suf = SH.cat([one, rs.narrow(-1, 0, s._shape[-1] - 1)], -1).cumprod(-1).flip(-1)
    return pre * suf


def _det_bw(ctx, g):
    A = ctx.args[0]
    d = ctx.out
    gd = (g * conj(d)).unsqueeze(-1).unsqueeze(-1)
    if not bool((d == 0).any()):
        return (gd * mH(inv_ex_k(A)[0]),)
    # a singular matrix: adj(A) = det(U) det(Vh) Vh^H adj(S) U^H through the SVD, so
    # adj(A)^H = conj(det(U) det(Vh)) U adj(S) Vh
    U_, S, Vh = svd_k(A, False, True)
    sign = conj(det_k(U_.detach()) * det_k(Vh.detach())).unsqueeze(-1).unsqueeze(-1)
    cofH = _mm(_scale_cols(U_, _exclusive_prod(S).to(U_._dtype)), Vh) * sign
    return (g.unsqueeze(-1).unsqueeze(-1) * cofH,)


@defop("_linalg_det", backward=_det_bw, save_output=True, out=False, method=False, group="linalg", host=H.det)
def det_k(A):
    """The determinant."""
    return A._device, (A,), (A,)


def _slogdet_bw(ctx, g):
    """With t = tr(A^-1 dA): d logabsdet = Re t, d sign = i sign Im t, so the gradient is
    ``conj(c) A^-H``, c = g_logabsdet + i Im(conj(g_sign) sign) (the sign's part only for complex A)."""
    A = ctx.args[0]
    gs, gl = g
    c = gl
    if A._dtype.is_complex and gs is not None:
        c = (c if c is not None else 0) - (gs.conj() * ctx.out[0]).imag * 1j
    if c is None:
        return (None,)
    return (c.unsqueeze(-1).unsqueeze(-1) * mH(inv_ex_k(A)[0]),)


@defop("_linalg_slogdet", backward=_slogdet_bw, save_output=(0,), materialize=False, out=False, method=False,
       group="linalg", host=H.slogdet)
def slogdet_k(A):
    """``(sign, log|det|)``."""
    return A._device, (A,), (A,)


# -- Cholesky solve ------------------------------------------------------------------------------------

def _cholesky_solve_decomp(B, L, upper):
    if upper:
        return solve_triangular_k(L, solve_triangular_k(mH(L), B, False), True)
    return solve_triangular_k(mH(L), solve_triangular_k(L, B, False), True)


def _cholesky_solve_bw(ctx, g):
    B, L, upper = ctx.args
    X = ctx.out
    gB = cholesky_solve_k(g, L, upper)
    gL = None
    if ctx.needs_input_grad[1]:
        common = _mm(gB, mH(X))
        common = common + mH(common)
        gL = -_mm(L, common) if upper else -_mm(common, L)
    return (gB if ctx.needs_input_grad[0] else None, gL)


@defop("_cholesky_solve", decomposition=_cholesky_solve_decomp, backward=_cholesky_solve_bw, saves=(1,),
       save_output=True, out=False, method=False, group="linalg")
def cholesky_solve_k(B, L, upper=False):
    """X with ``L L^H X = B`` (``U^H U X = B`` with ``upper``), reading the factor's triangle; its
    gradient is PyTorch's, which treats the factor as a full matrix (the ``L L^H`` it stands for)."""
    return L._device, (B, L, bool(upper)), (B, L)
