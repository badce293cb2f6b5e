"""Generators of calls for ``torch.linalg`` and the top-level factorization aliases, on
well-conditioned generated matrices (``a + 3n I``; symmetric positive-definite ``a a^T + n I``),
batched and strided, float32/float64 and complex64/complex128 (Hermitian ``a a^H + n I`` for
the positive-definite kind), plus a few integer and singular inputs for the errors.
The factorizations whose factors are unique only up to sign (eigh, svd, qr, lu) are compared
here through the gauge-invariant functions (values, svdvals, pinv, reconstructions in
test_linalg_oracle.py); their own calls are compared there."""
from __future__ import annotations

import numpy as np
import torch
from hypothesis import strategies as st

from .calls import Call
from .tensors import COMPLEX, T, tensors

__all__ = ["FACTOR"]

F = ("float32", "float64") + COMPLEX


def _mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _parts(t):
    """The values of a drawn T at their own precision (complex128 or float64)."""
    return t.values.astype(np.complex128 if t.dtype in COMPLEX else np.float64)


@st.composite
def matrices(draw, kind="wc", shape=None, dtypes=F):
    """A well-conditioned ('wc'), symmetric positive-definite ('spd'), symmetric ('sym') or plain
    ('any') batch of matrices, with a drawn layout."""
    if shape is None:
        n = draw(st.integers(1, 4))
        shape = draw(st.sampled_from(((), (2,), (2, 1)))) + (n, n)
    t = draw(tensors(dtypes, shape=shape, low=-1, high=1, special=False))
    a = _parts(t)
    n = shape[-1]
    if kind == "wc":  # distinct diagonal offsets: an all-zero draw is not a multiple of I, whose
        # singular values repeat (gradients through an SVD are not defined there)
        a = a + np.diag(3.0 * n + 0.5 * np.arange(n))
    elif kind == "spd":
        a = a @ _mH(a) + n * np.eye(n)
    elif kind == "sym":  # distinct eigenvalues: the gradient is well-defined
        a = a + _mH(a) + np.diag(3.0 * np.arange(1, n + 1))
    elif kind == "signed":  # well-conditioned, with a negative determinant half of the time
        a = a + 3 * n * np.eye(n)
        if draw(st.booleans()):
            a[..., 0, :] *= -1
    # an expanded layout repeats one slice along a dim: singular matrices, not what this generator is for
    return T(a, t.dtype, "contiguous" if t.layout == "expanded" else t.layout)


def _one(op, fn, kind="wc", kwargs=None, **kw):
    @st.composite
    def gen(draw):
        return Call(op, fn, (draw(matrices(kind, **kw)),), dict(kwargs or {}))
    return gen()


@st.composite
def _solve(draw, op, fn):
    A = draw(matrices("wc"))
    n = A.shape[-1]
    left = draw(st.booleans())
    rhs = draw(st.sampled_from(("matrix", "vector", "bad")))
    if rhs == "vector":
        B = draw(tensors((A.dtype,), shape=(n,), low=-1, high=1, special=False))
    else:
        k = draw(st.integers(1, 3))
        B = draw(tensors((A.dtype,), shape=A.shape[:-2] + ((n, k) if left else (k, n)), low=-1, high=1,
                         special=False) if rhs == "matrix" else tensors((A.dtype,), shape=(n + 1, 2), special=False))
    return Call(op, fn, (A, B), {} if left else {"left": False})


@st.composite
def _solve_triangular(draw):
    A = draw(matrices("wc"))
    n = A.shape[-1]
    left = draw(st.booleans())
    B = draw(tensors((A.dtype,), shape=A.shape[:-2] + ((n, 2) if left else (2, n)), low=-1, high=1, special=False))
    kw = {"upper": draw(st.booleans()), "left": left, "unitriangular": draw(st.booleans())}
    return Call("linalg_solve_triangular", "linalg.solve_triangular", (A, B), kw)


@st.composite
def _triangular_solve(draw):
    A = draw(matrices("wc"))
    B = draw(tensors((A.dtype,), shape=A.shape[:-1] + (2,), low=-1, high=1, special=False))
    kw = {"upper": draw(st.booleans()), "transpose": draw(st.booleans())}
    return Call("triangular_solve", "triangular_solve", (B, A), kw)


@st.composite
def _cholesky_solve(draw, op):
    A = draw(matrices("spd"))
    L = T(np.linalg.cholesky(_parts(A)), A.dtype)
    if op == "cholesky_inverse":
        return Call(op, op, (L,))
    B = draw(tensors((A.dtype,), shape=A.shape[:-1] + (2,), low=-1, high=1, special=False))
    return Call(op, op, (B, L))


@st.composite
def _singular_or_indefinite(draw, op, fn, kwargs=None):
    """The ``_ex`` functions: a well-conditioned matrix, a zero or negative-definite one (the
    error path: info, or LinAlgError with ``check_errors``), or an integer one. The values
    computed for a failed matrix are compared for cholesky_ex and lu_factor_ex (LAPACK's partial
    results, which ember reproduces); inv_ex's are not (LAPACK's inf/NaN pattern is its own)."""
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from(((), (2,))))
    kind = draw(st.sampled_from(("ok", "zero", "neg", "int")))
    kw = dict(kwargs or {})
    if kind == "int":
        return Call(op, fn, (T(np.ones(batch + (n, n)), "int64"),), kw)
    if kind == "ok":
        return Call(op, fn, (draw(matrices("spd", shape=batch + (n, n))),), kw)
    a = np.zeros(batch + (n, n)) if kind == "zero" else -np.broadcast_to(np.eye(n), batch + (n, n))
    if op == "linalg_inv_ex" or draw(st.booleans()):
        kw["check_errors"] = True
    return Call(op, fn, (T(a, draw(st.sampled_from(F))),), kw)


@st.composite
def _wide_or_tall(draw, op, fn, kwargs=None, kind="any"):
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    t = draw(tensors(F, shape=draw(st.sampled_from(((), (2,)))) + (m, n), low=-1, high=1, special=False))
    a = _parts(t)
    k = min(m, n)
    a[..., range(k), range(k)] += 2 * max(m, n)  # well separated singular values
    return Call(op, fn, (T(a, t.dtype, "contiguous" if t.layout == "expanded" else t.layout),), dict(kwargs or {}))


@st.composite
def _lstsq(draw):
    m, n = draw(st.integers(2, 4)), draw(st.integers(1, 2))
    A = draw(_wide_or_tall("x", "x")).args[0]
    A = T(A.values[..., :m, :n] if A.values.shape[-2] >= m and A.values.shape[-1] >= n else A.values, A.dtype)
    B = draw(tensors((A.dtype,), shape=A.shape[:-1] + (2,), low=-1, high=1, special=False))
    drv = draw(st.sampled_from((None, "gelsd")))
    return Call("linalg_lstsq", "linalg.lstsq", (A, B), {"driver": drv} if drv else {})


@st.composite
def _norms(draw, op, fn):
    A = draw(_wide_or_tall(op, fn)).args[0]
    if op == "linalg_matrix_norm":
        return Call(op, fn, (A,), {"ord": draw(st.sampled_from(("fro", "nuc", 1, -1, 2, -2, float("inf"))))})
    if op == "linalg_vector_norm":
        return Call(op, fn, (A,), {"ord": draw(st.sampled_from((2, 1, 3, float("inf")))),
                                   "dim": draw(st.sampled_from((None, -1)))})
    if op == "linalg_cond":
        return Call(op, fn, (draw(matrices("wc")),), {"p": draw(st.sampled_from((None, 2, -2, "fro", 1)))})
    return Call(op, fn, (A,), {"ord": draw(st.sampled_from((None, "fro", 2)))})


@st.composite
def _misc(draw, op):
    if op == "linalg_vecdot":
        a = draw(tensors(F, shape=(2, 3), low=-1, high=1, special=False))
        return Call(op, "linalg.vecdot", (a, draw(tensors((a.dtype,), shape=(3,), special=False))))
    if op == "linalg_cross":
        a = draw(tensors(F, shape=(2, 3), special=False))
        return Call(op, "linalg.cross", (a, draw(tensors((a.dtype,), shape=(2, 3), special=False))))
    if op == "linalg_multi_dot":
        dt = draw(st.sampled_from(F))
        return Call(op, "linalg.multi_dot", ([draw(tensors((dt,), shape=s, special=False))
                                              for s in ((3,), (3, 2), (2, 4), (4, 2))],))
    if op == "linalg_householder_product":
        # PyTorch's gradient formula inverts each reflector I - tau v v^H (NaN where tau |v|^2 = 1,
        # tau = 0): |v|^2 <= 1.75 and tau in [0.1, 0.5] keep them invertible
        a = draw(tensors(F, shape=(4, 3), low=-0.5, high=0.5, special=False))
        tau = T(draw(st.lists(st.floats(0.1, 0.5), min_size=2, max_size=2)), a.dtype)
        return Call(op, "linalg.householder_product", (a, tau))
    if op == "linalg_vander":
        return Call(op, "linalg.vander", (draw(tensors(F, shape=(3,), low=-2, high=2, special=False)),))
    if op == "linalg_diagonal":
        return Call(op, "linalg.diagonal", (draw(tensors(F, shape=(2, 3, 3))),), {"offset": draw(st.integers(-1, 1))})
    if op == "linalg_tensorinv":
        A = draw(matrices("wc", shape=(4, 4)))
        return Call(op, "linalg.tensorinv", (T(A.values.reshape(2, 2, 4), A.dtype),))
    if op == "linalg_tensorsolve":
        A = draw(matrices("wc", shape=(4, 4)))
        return Call(op, "linalg.tensorsolve", (T(A.values.reshape(2, 2, 4), A.dtype),
                                               draw(tensors((A.dtype,), shape=(2, 2), special=False))))
    if op == "linalg_matrix_power":
        return Call(op, "linalg.matrix_power", (draw(matrices("wc")), draw(st.integers(-3, 3))))
    if op == "linalg_matrix_exp" or op == "matrix_exp":
        A = draw(matrices("any"))
        return Call(op, "linalg.matrix_exp" if op.startswith("linalg") else op, (A,))
    raise AssertionError(op)


@st.composite
def _lu_unpack(draw):
    A = draw(matrices("any"))
    lu, piv = _np_lu(_parts(A))
    return Call("lu_unpack", "lu_unpack", (T(lu, A.dtype), T(piv, "int32")))


@st.composite
def _lu_solve(draw):
    A = draw(matrices("wc"))
    lu, piv = _np_lu(_parts(A))
    n = A.shape[-1]
    left, adjoint = draw(st.booleans()), draw(st.booleans())
    B = draw(tensors((A.dtype,), shape=A.shape[:-2] + ((n, 2) if left else (2, n)), low=-1, high=1, special=False))
    return Call("linalg_lu_solve", "linalg.lu_solve", (T(lu, A.dtype), T(piv, "int32"), B),
                {"left": left, "adjoint": adjoint})


def _np_lu(a):
    """LAPACK getrf's packed LU and 1-based pivots (partial pivoting on |re| + |im|), batched."""
    a = np.array(a, copy=True)
    flat = a.reshape((-1,) + a.shape[-2:])
    n = a.shape[-1]
    piv = np.zeros((flat.shape[0], n), np.int32)
    for b, m in enumerate(flat):
        for j in range(n):
            p = j + int(np.argmax(np.abs(m[j:, j].real) + np.abs(m[j:, j].imag)))
            piv[b, j] = p + 1
            m[[j, p]] = m[[p, j]]
            if m[j, j] != 0:
                m[j + 1:, j] /= m[j, j]
            m[j + 1:, j + 1:] -= np.outer(m[j + 1:, j], m[j, j + 1:])
    return flat.reshape(a.shape), piv.reshape(a.shape[:-1])


@st.composite
def _ldl(draw, op):
    """Symmetric (or, for complex, Hermitian or complex-symmetric) indefinite matrices: LD and
    the pivots (1x1 and 2x2 blocks) are compared exactly with LAPACK's."""
    n = draw(st.integers(1, 5))
    dt = draw(st.sampled_from(F))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))  # generic values: no singular D, no pivot ties
    a = rng.uniform(-1, 1, draw(st.sampled_from(((), (2,)))) + (n, n))
    if dt in COMPLEX:
        a = a + 1j * rng.uniform(-1, 1, a.shape)
    a = np.asarray(a, dtype=dt).astype(a.dtype)  # the values as the dtype stores them
    herm = dt in COMPLEX and draw(st.booleans())
    a = a + (_mH(a) if herm else np.swapaxes(a, -1, -2))
    kw = {"hermitian": True} if herm else {}
    if op != "linalg_ldl_solve":
        return Call(op, op.replace("linalg_", "linalg."), (T(a, dt),), kw)
    LD, piv = _ldl_host(np.asarray(a, dtype=dt), herm)
    B = draw(tensors((dt,), shape=a.shape[:-1] + (2,), low=-1, high=1, special=False))
    return Call(op, "linalg.ldl_solve", (T(LD, dt), T(piv, "int32"), B), kw)


def _ldl_host(a, herm):
    """PyTorch's factorization, the input of ldl_solve."""
    LD, piv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=herm)
    return LD.numpy(), piv.numpy()


FACTOR = {
    "linalg_inv": _one("linalg_inv", "linalg.inv"),
    "inverse": _one("inverse", "inverse"),
    "linalg_inv_ex": _singular_or_indefinite("linalg_inv_ex", "linalg.inv_ex"),
    "linalg_det": _one("linalg_det", "linalg.det"),
    "det": _one("det", "det", "signed"),
    "linalg_slogdet": _one("linalg_slogdet", "linalg.slogdet", "signed"),
    "slogdet": _one("slogdet", "slogdet"),
    "logdet": _one("logdet", "logdet", "spd"),
    "linalg_cholesky": _one("linalg_cholesky", "linalg.cholesky", "spd"),
    "cholesky": _one("cholesky", "cholesky", "spd", {"upper": True}),
    "linalg_cholesky_ex": _singular_or_indefinite("linalg_cholesky_ex", "linalg.cholesky_ex"),
    "cholesky_solve": _cholesky_solve("cholesky_solve"),
    "cholesky_inverse": _cholesky_solve("cholesky_inverse"),
    "linalg_solve": _solve("linalg_solve", "linalg.solve"),
    "linalg_solve_ex": _solve("linalg_solve_ex", "linalg.solve_ex"),
    "linalg_solve_triangular": _solve_triangular(),
    "triangular_solve": _triangular_solve(),
    "linalg_eigvalsh": _one("linalg_eigvalsh", "linalg.eigvalsh", "sym"),
    "linalg_svdvals": _wide_or_tall("linalg_svdvals", "linalg.svdvals"),
    "linalg_pinv": _wide_or_tall("linalg_pinv", "linalg.pinv"),
    "pinverse": _wide_or_tall("pinverse", "pinverse"),
    "linalg_matrix_rank": _wide_or_tall("linalg_matrix_rank", "linalg.matrix_rank"),
    "linalg_lstsq": _lstsq(),
    "linalg_matrix_norm": _norms("linalg_matrix_norm", "linalg.matrix_norm"),
    "linalg_vector_norm": _norms("linalg_vector_norm", "linalg.vector_norm"),
    "linalg_norm": _norms("linalg_norm", "linalg.norm"),
    "linalg_cond": _norms("linalg_cond", "linalg.cond"),
    "linalg_lu_factor": _one("linalg_lu_factor", "linalg.lu_factor"),
    "linalg_lu": _one("linalg_lu", "linalg.lu"),
    "lu_unpack": _lu_unpack(),
    "linalg_lu_solve": _lu_solve(),
    "linalg_qr": _wide_or_tall("linalg_qr", "linalg.qr"),
    "qr": _wide_or_tall("qr", "qr"),
    "linalg_lu_factor_ex": _singular_or_indefinite("linalg_lu_factor_ex", "linalg.lu_factor_ex"),
    **{op: _ldl(op) for op in ("linalg_ldl_factor", "linalg_ldl_factor_ex", "linalg_ldl_solve")},
    **{op: _misc(op) for op in ("linalg_vecdot", "linalg_cross", "linalg_multi_dot", "linalg_householder_product",
                                "linalg_vander", "linalg_diagonal", "linalg_tensorinv", "linalg_tensorsolve",
                                "linalg_matrix_power", "linalg_matrix_exp", "matrix_exp")},
}
