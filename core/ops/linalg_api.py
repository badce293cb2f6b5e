"""The factorizations and solvers of ``torch.linalg`` and their top-level aliases, as composites
over the kernel ops of :mod:`ember.ops.linalg_factor`: argument checks with PyTorch's messages,
``info`` checked (a host synchronisation, as in PyTorch) and :class:`LinAlgError` raised by the
non-``_ex`` functions, named tuples of :mod:`ember.return_types`.
"""
from __future__ import annotations

from .. import return_types as RT
from . import _args as U
from . import creation as CR
from . import linalg_factor as LF
from .declare import composite
from .linalg_factor import LinAlgError, check_float, check_matrix, check_same_dtype, check_square, mH

__all__ = ["cholesky", "cholesky_inverse", "cholesky_solve", "det", "inverse", "logdet", "lu_unpack", "qr", "slogdet",
           "svd", "triangular_solve"]


def raise_info(op: str, info, message) -> None:
    """Raise :class:`LinAlgError` (``op: message(v)``) for the first nonzero ``info`` entry,
    naming the batch element of a batched input, as PyTorch."""
    if info.numel() == 0:
        return
    for i, v in enumerate(info.reshape(-1).tolist()):
        if v > 0:
            where = f"(Batch element {i}): " if info.dim() > 0 else ""
            raise LinAlgError(f"{op}: {where}{message(v)}")


def _inv_msg(v):
    return (f"The diagonal element {v} is zero, the inversion could not be completed because the input matrix is "
            "singular.")


def _chol_msg(v):
    return ("The factorization could not be completed because the input is not positive-definite (the leading minor "
            f"of order {v} is not positive-definite).")


def _solve_msg(v):
    return "The solver failed because the input matrix is singular."


# -- Cholesky ----------------------------------------------------------------------------------------

@composite("linalg_cholesky_ex", method=False)
def cholesky_ex(A, *, upper=False, check_errors=False):
    """``(L, info)``: the Cholesky factor (``A = L L^H``; ``U = L^H`` with ``upper``) and, per
    matrix, the order of the first leading minor that is not positive-definite (0: success)."""
    check_square("linalg.cholesky", A)
    check_float("linalg.cholesky", A, "cholesky_cpu")
    L, info = LF.cholesky_ex_k(A, upper)
    if check_errors:
        raise_info("linalg.cholesky_ex", info, _chol_msg)
    return RT.linalg_cholesky_ex(L, info)


@composite("linalg_cholesky", method=False)
def linalg_cholesky(A, *, upper=False):
    """The Cholesky factor; LinAlgError for a matrix that is not positive-definite."""
    L, info = cholesky_ex(A, upper=upper)
    raise_info("linalg.cholesky", info, _chol_msg)
    return L


@composite("cholesky")
def cholesky(input, upper=False):
    """``torch.cholesky`` (deprecated in PyTorch for ``linalg.cholesky``)."""
    return linalg_cholesky(input, upper=upper)


@composite("cholesky_solve")
def cholesky_solve(input, input2, upper=False):
    """``X`` with ``A X = B``, given B (``input``) and A's Cholesky factor (``input2``)."""
    B, L = input, input2
    check_matrix("cholesky_solve", B, "B")
    check_square("cholesky_solve", L, "L")
    check_same_dtype("cholesky_solve", L, B)
    return LF.cholesky_solve_k(B, L, upper)


@composite("cholesky_inverse")
def cholesky_inverse(input, upper=False):
    """``A^-1`` given A's Cholesky factor."""
    eye = CR.eye(input._shape[-1], dtype=input._dtype, device=input._device)
    return cholesky_solve(eye.expand(input._shape), input, upper)


# -- inverse, solve ------------------------------------------------------------------------------------

@composite("linalg_inv_ex", method=False)
def inv_ex(A, *, check_errors=False):
    """``(inverse, info)``; info = the first zero pivot of a singular matrix (its inverse is NaN)."""
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    inv, info = LF.inv_ex_k(A)
    if check_errors:
        raise_info("linalg.inv_ex", info, _inv_msg)
    return RT.linalg_inv_ex(inv, info)


@composite("linalg_inv", method=False)
def inv(A):
    """The inverse; LinAlgError for a singular matrix."""
    r, info = inv_ex(A)
    raise_info("linalg.inv", info, _inv_msg)
    return r


@composite("inverse")
def inverse(input):
    """``torch.inverse``: ``linalg.inv``."""
    return inv(input)


def _is_vector_rhs(A, B):
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and B._shape == A._shape[:-1])


@composite("linalg_solve_ex", method=False)
def solve_ex(A, B, *, left=True, check_errors=False):
    """``(result, info)``: X with ``A X = B`` (``X A = B`` when not ``left``), batch dims
    broadcast, B a (batch of) vectors or matrices."""
    check_square("linalg.solve", A)
    check_float("linalg.solve", A)
    check_same_dtype("linalg.solve", A, B)
    vec = _is_vector_rhs(A, B)
    if vec and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    Bm = B.unsqueeze(-1) if vec else B
    n = A._shape[-1]
    if (Bm._shape[-2] if left else Bm._shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        bs = "x".join(str(s) for s in Bm._shape[-2:])
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and {bs})")
    U.broadcast_shapes(A._shape[:-2], Bm._shape[:-2], "linalg.solve")
    X, info = LF.solve_ex_k(A, Bm, left)
    if vec:
        X = X.squeeze(-1) if left else X.squeeze(-2)
    if check_errors:
        raise_info("torch.linalg.solve_ex", info, _solve_msg)
    return RT.linalg_solve_ex(X, info)


@composite("linalg_solve", method=False)
def solve(A, B, *, left=True):
    """X with ``A X = B`` (``X A = B`` when not ``left``); LinAlgError for a singular A."""
    X, info = solve_ex(A, B, left=left)
    raise_info("torch.linalg.solve", info, _solve_msg)
    return X


@composite("linalg_solve_triangular", method=False)
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with ``tri(A) X = B`` (``X tri(A) = B`` when not ``left``): only the ``upper`` or lower
    triangle of A is read (its diagonal as ones with ``unitriangular``); no singularity check."""
    check_matrix("linalg.solve_triangular", B, "B")
    check_square("linalg.solve_triangular", A)
    check_float("linalg.solve_triangular", A, "triangular_solve_cpu")
    check_same_dtype("linalg.solve_triangular", A, B)
    n = A._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B._shape[-2]}x{B._shape[-1]})")
    U.broadcast_shapes(A._shape[:-2], B._shape[:-2], "linalg.solve_triangular")
    return LF.solve_triangular_k(A, B, upper, left, unitriangular)


@composite("triangular_solve")
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)`` of ``tri(A) X = b`` (``tri(A)^T X = b`` with
    ``transpose``); deprecated in PyTorch for ``linalg.solve_triangular``."""
    M = A.mT if transpose else A
    X = solve_triangular(M, input, upper=upper != transpose, unitriangular=unitriangular)
    return RT.triangular_solve(X, A.clone())


# -- determinants ---------------------------------------------------------------------------------------

@composite("linalg_det", method=False)
def linalg_det(A):
    """The determinant (batched)."""
    check_square("linalg.det", A)
    check_float("linalg.det", A, "lu_cpu")
    return LF.det_k(A)


@composite("det")
def det(input):
    """``torch.det``: ``linalg.det``."""
    return linalg_det(input)


@composite("linalg_slogdet", method=False)
def linalg_slogdet(A):
    """``(sign, logabsdet)``: the determinant is ``sign * exp(logabsdet)``."""
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A, "lu_cpu")
    return RT.linalg_slogdet(*LF.slogdet_k(A))


@composite("slogdet")
def slogdet(input):
    """``torch.slogdet``."""
    return RT.slogdet(*linalg_slogdet(input))


@composite("logdet")
def logdet(input):
    """``log(det(input))``: NaN for a negative determinant, -inf for zero."""
    sign, la = linalg_slogdet(input)
    if input._dtype.is_complex:  # log(det): the sign's angle is the imaginary part, differentiable
        return la + sign.log()
    return la + sign.detach().log()


# -- QR, eigh, SVD -------------------------------------------------------------------------------------

@composite("linalg_qr", method=False)
def linalg_qr(A, mode="reduced"):
    """``(Q, R)``: mode 'reduced' (default), 'complete', or 'r' (R only, Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    check_matrix("linalg.qr", A)
    check_float("linalg.qr", A, "linalg_qr_cpu")
    return RT.linalg_qr(*LF.qr_k(A, mode))


@composite("qr")
def qr(input, some=True):
    """``torch.qr``: ``linalg.qr`` with mode 'reduced' (``some``) or 'complete'."""
    return RT.qr(*linalg_qr(input, "reduced" if some else "complete"))


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@composite("linalg_eigh", method=False)
def eigh(A, UPLO="L"):
    """``(eigenvalues, eigenvectors)`` of a Hermitian matrix (its ``UPLO`` triangle is read),
    eigenvalues ascending; eigenvectors are unique up to sign (phase)."""
    _check_uplo(UPLO)
    check_square("linalg.eigh", A)
    check_float("linalg.eigh", A, "linalg_eigh_cpu")
    return RT.linalg_eigh(*LF.eigh_k(A, UPLO, True))


@composite("linalg_eigvalsh", method=False)
def eigvalsh(A, UPLO="L"):
    """The eigenvalues of a Hermitian matrix, ascending."""
    _check_uplo(UPLO)
    check_square("linalg.eigvalsh", A)
    check_float("linalg.eigvalsh", A, "linalg_eigh_cpu")
    return LF.eigh_k(A, UPLO, A.requires_grad)[0]


def _check_eig(op, A):
    check_square(op, A)
    dt = A._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {U.type_name(dt)}")
    check_float(op, A, "linalg_eig_out_cpu")


@composite("linalg_eig", method=False)
def eig(A):
    """``(eigenvalues, eigenvectors)`` of a general square matrix, complex for real and complex
    input (``A V = V diag(L)``); eigenvectors have unit norm and are unique up to a phase, their
    order is LAPACK's. An input with an inf or NaN raises, as in PyTorch."""
    _check_eig("linalg.eig", A)
    if A.numel() and not bool(A.isfinite().all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    return RT.linalg_eig(*LF.eig_k(A, True))


@composite("linalg_eigvals", method=False)
def eigvals(A):
    """The eigenvalues of a general square matrix, complex, in ``eig``'s order."""
    _check_eig("linalg.eigvals", A)
    return LF.eig_k(A, A.requires_grad)[0]


@composite("linalg_svd", method=False)
def linalg_svd(A, full_matrices=True, *, driver=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, S descending (``driver`` is for cuSOLVER:
    ignored here, as on PyTorch's cpu)."""
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A, "linalg_svd_cpu")
    return RT.linalg_svd(*LF.svd_k(A, full_matrices, True))


@composite("linalg_svdvals", method=False)
def svdvals(A, *, driver=None):
    """The singular values, descending."""
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A, "linalg_svd_cpu")
    return LF.svd_k(A, False, A.requires_grad)[1]


@composite("svd")
def svd(input, some=True, compute_uv=True):
    """``torch.svd``: ``(U, S, V)`` (V, not Vh); ``some`` gives the reduced factors; without
    ``compute_uv`` U and V are zero-filled (m x m) and (n x n) matrices."""
    if not compute_uv:
        m, n = input._shape[-2:]
        S = svdvals(input)
        bs = input._shape[:-2]
        return RT.svd(CR.zeros(bs + (m, m), dtype=input._dtype, device=input._device), S,
                      CR.zeros(bs + (n, n), dtype=input._dtype, device=input._device))
    U_, S, Vh = linalg_svd(input, not some)
    return RT.svd(U_, S, mH(Vh))


# -- LU --------------------------------------------------------------------------------------------------

@composite("linalg_lu_factor_ex", method=False)
def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)``: the packed LU factorization with partial pivoting (LAPACK's
    getrf: 1-based int32 pivots), info = the first zero pivot (1-based) or 0."""
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: {list(A._shape)} "
                           "instead")
    check_float("linalg.lu_factor", A, "lu_cpu")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    LU, piv, info = LF.lu_factor_ex_k(A, pivot)
    if check_errors:
        raise_info("torch.linalg.lu_factor_ex", info, _solve_msg)
    return RT.linalg_lu_factor_ex(LU, piv, info)


@composite("linalg_lu_factor", method=False)
def lu_factor(A, *, pivot=True):
    """``(LU, pivots)``; RuntimeError for a zero pivot (as PyTorch)."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    if info.numel():
        for i, v in enumerate(info.reshape(-1).tolist()):
            if v > 0:
                where = f"(Batch element {i}): " if info.dim() > 0 else ""
                raise RuntimeError(f"torch.linalg.lu_factor: {where}U[{v},{v}] is zero and using it on lu_solve would "
                                   "result in a division by zero. If you still want to perform the factorization, "
                                   "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return RT.linalg_lu_factor(LU, piv)


@composite("lu_unpack", method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from ``lu_factor``'s packed result (empty tensors for what is not unpacked)."""
    m, n = LU_data._shape[-2:]
    k = min(m, n)
    e = CR.empty(0, dtype=LU_data._dtype, device=LU_data._device)
    L = U_ = e
    if unpack_data:
        eye = CR.eye(m, k, dtype=LU_data._dtype, device=LU_data._device)
        L = LU_data.narrow(-1, 0, k).tril(-1) + eye
        U_ = LU_data.narrow(-2, 0, k).triu()
    P = LF.perm_matrix(LU_pivots, m, LU_data._dtype, LU_data._device) if unpack_pivots else e
    return RT.lu_unpack(P, L, U_)


@composite("linalg_lu", method=False)
def lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P L U``."""
    LU, piv, _ = lu_factor_ex(A, pivot=pivot)
    P, L, U_ = lu_unpack(LU, piv)
    return RT.linalg_lu(P, L, U_)


@composite("linalg_lu_solve", method=False)
def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with ``A X = B`` (``X A = B`` when not ``left``; ``A^H`` with ``adjoint``) from A's
    ``lu_factor``."""
    check_square("linalg.lu_solve", LU, "LU")
    check_matrix("linalg.lu_solve", B, "B")
    check_same_dtype("linalg.lu_solve", LU, B)
    P = LF.perm_matrix(pivots, LU._shape[-1], LU._dtype, LU._device)
    T = LF.solve_triangular_k
    if left and not adjoint:
        return T(LU, T(LU, P.mT.matmul(B), False, True, True), True, True, False)
    if left:
        return P.matmul(T(mH(LU), T(mH(LU), B, False, True, False), True, True, True))
    if not adjoint:
        return T(LU, T(LU, B, True, False, False), False, False, True).matmul(P.mT)
    return T(mH(LU), T(mH(LU), B.matmul(P), True, False, True), False, False, False)

