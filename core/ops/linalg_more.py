"""The rest of ``torch.linalg``, written over the factorizations (:mod:`ember.ops.linalg_api`)
and the matrix products: norms, ``cond``, ``matrix_rank``, ``pinv``, ``lstsq``, ``matrix_exp``,
``matrix_power`` (negative powers), ``cross``, ``vecdot``, ``multi_dot``,
``householder_product``, ``vander``, ``tensorinv``, ``tensorsolve``, ``diagonal``; and the
top-level ``pinverse`` and ``matrix_exp``. All are composites: differentiated through their parts.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .. import return_types as RT
from . import _args as U
from . import creation as CR
from . import linalg as LA
from . import linalg_api as LAPI
from . import linalg_factor as LF
from . import reduction as R
from . import shape as SH
from .declare import composite, defop
from .linalg_factor import check_float, check_matrix, check_square, mH

__all__ = ["matrix_exp", "pinverse"]


# -- norms -----------------------------------------------------------------------------------------------

@composite("linalg_vector_norm", method=False)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm over ``dim`` (all dims, flattened, by default)."""
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    return R.norm(x, ord, dim, keepdim, dtype=dtype)


_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


@composite("linalg_matrix_norm", method=False)
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dims = tuple(U.wrap_dim(d, A.dim(), "linalg.matrix_norm") for d in dim)
    if len(dims) != 2 or dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[-1]})")
    if dtype is not None:
        A = A.to(D.to_dtype(dtype))
    check_float("linalg.matrix_norm", A, "linalg_matrix_norm")
    if ord == "fro":
        return R.norm(A, 2, dims, keepdim)
    if ord in ("nuc", 2, -2):
        rest = [d for d in range(A.dim()) if d not in dims]
        s = LAPI.svdvals(A.permute(rest + list(dims)))
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            for d in sorted(dims):
                r = r.unsqueeze(d)
        return r
    a = A.abs()
    if ord in (math.inf, -math.inf):
        inner, outer = dims[1], dims[0]
    else:
        inner, outer = dims[0], dims[1]
    s = a.sum(inner, keepdim=True)
    r = s.amax(outer, keepdim=True) if ord > 0 else s.amin(outer, keepdim=True)
    return r if keepdim else r.squeeze(dims)


@composite("linalg_norm", method=False)
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``vector_norm`` or ``matrix_norm``: a matrix norm when ``dim`` is a 2-tuple, or when it is
    None, ``ord`` is given and A is 2-D."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.dim() != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


@composite("linalg_cond", method=False)
def cond(A, p=None):
    """The condition number in norm ``p`` (the 2-norm's ratio of extreme singular values by
    default; inf for a singular matrix in the other norms)."""
    check_matrix("linalg.cond", A)
    if A.numel() == 0:  # PyTorch's answer for empty matrices
        return CR.zeros(A._shape[:-2], dtype=A._dtype, device=A._device)
    if p is None or p in (2, -2):
        s = LAPI.svdvals(A)
        return s.amax(-1) / s.amin(-1) if p != -2 else s.amin(-1) / s.amax(-1)
    check_square("linalg.cond", A)
    inv, info = LAPI.inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(inv, p)
    return r.where(info == 0, math.inf)


# -- rank, pseudo-inverse, least squares -------------------------------------------------------------------

def _tol(S, atol, rtol, m, n):
    """max(atol, rtol * S_max) (PyTorch's defaults: rtol = eps * max(m, n) without atol/rtol)."""
    if rtol is None:
        rtol = D.finfo(S._dtype).eps * max(m, n) if atol is None or (not hasattr(atol, "dim") and atol <= 0) else 0.0
    smax = S.amax(-1, keepdim=True) if S._shape[-1] else CR.zeros(S._shape[:-1] + (1,), dtype=S._dtype,
                                                                   device=S._device)
    tol = smax * (rtol.unsqueeze(-1) if hasattr(rtol, "dim") else rtol)
    if atol is not None:
        at = atol.unsqueeze(-1) if hasattr(atol, "dim") else atol
        tol = tol.where(tol >= at, at)
    return tol


@composite("linalg_matrix_rank", method=False)
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values above ``max(atol, rtol * S_max)`` (int64)."""
    check_matrix("linalg.matrix_rank", A)
    S = LAPI.eigvalsh(A).abs() if hermitian else LAPI.svdvals(A)
    return (S > _tol(S, atol, rtol, *A._shape[-2:])).sum(-1)


def _pinv_decomp(A, atol, rtol, hermitian):
    if hermitian:
        L, V = LAPI.eigh(A)
        tol = _tol(L.abs(), atol, rtol, *A._shape[-2:])
        Li = (1 / L).where(L.abs() > tol, 0.0)
        return (V * Li.unsqueeze(-2)).matmul(mH(V))
    U_, S, Vh = LAPI.linalg_svd(A, False)
    tol = _tol(S, atol, rtol, *A._shape[-2:])
    Si = (1 / S).where(S > tol, 0.0)
    return (mH(Vh) * Si.unsqueeze(-2)).matmul(mH(U_))


def _pinv_bw(ctx, g):
    """PyTorch's formula (well-defined where the rank does not change), in ember ops."""
    A = ctx.args[0]
    P = ctx.out
    m, n = A._shape[-2:]
    Ph, gh = mH(P), mH(g)
    if m <= n:
        K = gh.matmul(P)
        KPh = K.matmul(Ph)
        return (-mH(P.matmul(K)) + KPh - A.matmul(P).matmul(KPh) + Ph.matmul(P).matmul(gh - K.matmul(A)),)
    K = P.matmul(gh)
    PhK = Ph.matmul(K)
    return (-mH(K.matmul(P)) + (gh - A.matmul(K)).matmul(P).matmul(Ph) + PhK - PhK.matmul(P).matmul(A),)


@defop("_linalg_pinv", decomposition=_pinv_decomp, backward=_pinv_bw, save_output=True, out=False, method=False,
       group="linalg")
def _pinv_k(A, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse (through the SVD, or eigh with ``hermitian``), differentiated with
    PyTorch's pinv formula."""
    return A._device, (A, atol, rtol, bool(hermitian)), (A,)


@composite("linalg_pinv", method=False)
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse, singular values below ``max(atol, rtol * S_max)`` taken
    as zero."""
    check_matrix("linalg.pinv", A)
    check_float("linalg.pinv", A, "linalg_svd_cpu")
    return _pinv_k(A, atol, rtol, hermitian)


@composite("pinverse")
def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@composite("linalg_lstsq", method=False)
def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)``: the least-squares (minimum-norm)
    solution of ``A X = B`` through the pseudo-inverse; rank for the drivers that report it,
    singular values for 'gelsd'/'gelss', residuals for those when m > n and A has full rank."""
    driver = driver or "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    check_matrix("torch.linalg.lstsq", A)
    check_float("torch.linalg.lstsq", A)
    LF.check_same_dtype("torch.linalg.lstsq", A, B)
    vec = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vec else B
    m, n = A._shape[-2:]
    if Bm._shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    rt = rcond if rcond is not None and rcond > 0 else D.finfo(A._dtype).eps * max(m, n)
    X = _pinv_k(A, None, rt, False).matmul(Bm)  # differentiated with pinv's formula
    S = LAPI.svdvals(A.detach())
    tol = S.amax(-1, keepdim=True) * rt if S._shape[-1] else S
    rank = (S > tol).sum(-1)
    e = CR.empty(0, dtype=S._dtype, device=A._device)  # residuals and singular values are real
    res = e
    if driver != "gelsy" and m > n and bool((rank == n).all()):
        res = ((A.matmul(X) - Bm).abs() ** 2).sum(-2)
    if vec:
        X = X.squeeze(-1)
        res = res.squeeze(-1) if res.numel() else res
    return RT.linalg_lstsq(X, res, rank if driver != "gels" else CR.empty(0, dtype=D.int64, device=A._device),
                           S if driver in ("gelsd", "gelss") else e)


# -- matrix functions --------------------------------------------------------------------------------------

@composite("matrix_exp")
def matrix_exp(input):
    """The matrix exponential: scaling and squaring of a degree-18 Taylor polynomial (Horner),
    written in ember ops, so that it is differentiated (twice) through them."""
    A = input
    check_square("linalg.matrix_exp", A)
    check_float("linalg.matrix_exp", A, "linalg_matrix_exp")
    n = A._shape[-1]
    if A.numel() == 0:
        return A.clone()
    norm1 = float(A.detach().abs().sum(-2).amax())
    s = max(0, math.ceil(math.log2(norm1 / 0.5))) if norm1 > 0.5 and math.isfinite(norm1) else 0
    X = A / (2 ** s) if s else A
    eye = CR.eye(n, dtype=A._dtype, device=A._device)
    E = eye + X / 18
    for k in range(17, 0, -1):
        E = eye + X.matmul(E) / k
    for _ in range(s):
        E = E.matmul(E)
    return E


linalg_matrix_exp = matrix_exp


@composite("linalg_matrix_power", out=True, method=False)
def matrix_power(A, n):
    """``A`` to the integer power ``n`` (a negative power inverts first)."""
    if A.dim() >= 2 and A._shape[-1] == A._shape[-2] and n < 0:
        return LA.matrix_power(LAPI.inv(A), -n)
    return LA.matrix_power(A, n)


# -- vector and product helpers ------------------------------------------------------------------------------

@composite("linalg_cross", method=False)
def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (default -1); the operands broadcast."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    return LA.cross(input, other, dim)


@composite("linalg_vecdot", method=False)
def vecdot(x, y, *, dim=-1):
    """``sum(conj(x) * y, dim)``."""
    return (LF.conj(x) * y).sum(dim)


@composite("linalg_multi_dot", method=False)
def multi_dot(tensors):
    """The product of a list of matrices (the first may be a row vector, the last a column
    vector), left to right."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        ok = t.dim() == 2 or (t.dim() == 1 and i in (0, len(ts) - 1))
        if not ok:
            what = "first and last tensors" if i in (0, len(ts) - 1) else "tensor"
            raise RuntimeError(f"multi_dot(): {what} must be 1D or 2D but got {t.dim()}D" if i in (0, len(ts) - 1)
                               else f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    mats = [ts[0].unsqueeze(0) if first_vec else ts[0]] + ts[1:-1] + [ts[-1].unsqueeze(-1) if last_vec else ts[-1]]
    r = mats[0]
    for m in mats[1:]:
        r = LA.mm(r, m)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return r


@composite("linalg_householder_product", method=False)
def householder_product(A, tau):
    """The first n columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` the
    i-th column of A below the diagonal, 1 on it (LAPACK's orgqr)."""
    m, n = A._shape[-2:]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    k = tau._shape[-1]
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    rows = CR.arange(m, device=A._device).unsqueeze(-1)
    Q = CR.eye(m, n, dtype=A._dtype, device=A._device).expand(A._shape[:-2] + (m, n))
    for i in range(k - 1, -1, -1):
        v = A.narrow(-1, i, 1).where(rows > i, (rows == i).to(A._dtype))
        t = tau.narrow(-1, i, 1).unsqueeze(-1)
        Q = Q - (t * v).matmul(mH(v).matmul(Q))
    return Q


@composite("linalg_vander", method=False)
def vander(x, N=None):
    """``x[..., i] ** j`` for j < N (default ``x.shape[-1]``), increasing powers."""
    n = x._shape[-1] if x.dim() else 1
    N = n if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    cols = x.unsqueeze(-1).expand(x._shape + (N - 1,))
    one = CR.ones(x._shape + (1,), dtype=x._dtype, device=x._device)
    return SH.cat([one, cols], -1).cumprod(-1)


@composite("linalg_diagonal", out=False, method=False)
def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The ``offset`` diagonal over ``dim1`` and ``dim2`` (a view)."""
    return A.diagonal(offset, dim1, dim2)


@composite("linalg_tensorinv", method=False)
def tensorinv(A, ind=2):
    """The tensor inverse with respect to ``tensordot(.., ind)``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    a, b = A._shape[:ind], A._shape[ind:]
    pa, pb = math.prod(a), math.prod(b)
    if pa != pb:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {pb} != {pa}")
    return LAPI.inv(A.reshape(pa, pb)).reshape(b + a)


@composite("linalg_tensorsolve", method=False)
def tensorsolve(A, B, dims=None):
    """X with ``tensordot(A, X, X.ndim) = B``; ``dims`` are moved to the end of A first."""
    if dims is not None:
        dims = [U.wrap_dim(d, A.dim(), "linalg.tensorsolve") for d in dims]
        A = A.permute([d for d in range(A.dim()) if d not in dims] + dims)
    rest = A._shape[B.dim():]
    pb, pr = B.numel(), math.prod(rest)
    if pb != pr:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {pr} != {pb}")
    return LAPI.solve(A.reshape(pb, pr), B.reshape(pb)).reshape(rest)
