"""Op table, linear algebra: matmul in every rank combination (batch dims broadcast), the BLAS-style
ops built on it, einsum, tensordot, kron, trace and the diagonal family, against numpy float64,
on every layout, gradchecked in float64."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
F16 = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
I = (ember.int32, ember.int64)


def _diag_embed(x, offset=0, d1=-2, d2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n))
    for idx in np.ndindex(x.shape[:-1]):
        out[idx] = np.diag(x[idx], offset)
    return np.moveaxis(out, (-2, -1), (d1, d2)) if (d1, d2) != (-2, -1) else out


def _matrix_power(x, n):
    r = np.broadcast_to(np.eye(x.shape[-1]), x.shape).copy()
    for _ in range(n):
        r = r @ x
    return r


# rank combinations of matmul: (a shape, b shape)
_MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
                  ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (6, 4, 2))]

LINALG_CASES = [
    *[C(f"matmul_{'x'.join(map(str, a)) or 's'}_{'x'.join(map(str, b))}", ember.matmul, np.matmul, [a, b],
        dtypes=F, grad=True) for a, b in _MATMUL_SHAPES],
    C("matmul_f16", ember.matmul, np.matmul, [(3, 4), (4, 5)], dtypes=F16),
    C("matmul_ints_batched", ember.matmul, np.matmul, [(2, 3, 4), (4, 2)], dtypes=I),
    C("matmul_empty_k", ember.matmul, np.matmul, [(3, 0), (0, 2)], dtypes=F),
    C("mm_ints", ember.mm, np.matmul, [(3, 4), (4, 5)], dtypes=I + F16),
    C("bmm_f16", ember.bmm, np.matmul, [(2, 3, 4), (2, 4, 2)], dtypes=F16),
    C("mv_ints", ember.mv, np.matmul, [(3, 4), (4,)], dtypes=I),
    C("dot_ints", ember.dot, np.dot, [(5,), (5,)], dtypes=I + F16),
    C("vdot", ember.vdot, np.vdot, [(5,), (5,)], dtypes=F, grad=True),
    C("inner", ember.inner, np.inner, [(2, 4), (3, 4)], dtypes=F, grad=True),
    C("inner_3d", ember.inner, np.inner, [(2, 4), (2, 3, 4)], dtypes=F, grad=True),
    C("outer_ints", ember.outer, np.outer, [(3,), (4,)], dtypes=I),
    C("ger", ember.ger, np.outer, [(3,), (4,)], dtypes=F, grad=True),
    C("addmm_broadcast_input", lambda i, a, b: ember.addmm(i, a, b), lambda i, a, b: i + a @ b,
      [(4,), (3, 5), (5, 4)], dtypes=F16, grad=True),
    C("addmm_beta0", lambda i, a, b: ember.addmm(i * float("nan"), a, b, beta=0), lambda i, a, b: a @ b,
      [(3, 4), (3, 5), (5, 4)], dtypes=F),
    C("addmv", lambda i, a, v: ember.addmv(i, a, v, beta=2, alpha=-1), lambda i, a, v: 2 * i - a @ v,
      [(3,), (3, 4), (4,)], dtypes=F, grad=True),
    C("addr", lambda i, a, b: ember.addr(i, a, b, alpha=3), lambda i, a, b: i + 3 * np.outer(a, b),
      [(3, 4), (3,), (4,)], dtypes=F, grad=True),
    C("baddbmm_scaled", lambda i, a, b: ember.baddbmm(i, a, b, beta=0.5, alpha=2),
      lambda i, a, b: 0.5 * i + 2 * (a @ b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)], dtypes=F, grad=True),
    C("addbmm", lambda i, a, b: ember.addbmm(i, a, b), lambda i, a, b: i + (a @ b).sum(0),
      [(3, 5), (2, 3, 4), (2, 4, 5)], dtypes=F, grad=True),
    C("matrix_power", lambda x: ember.matrix_power(x, 3), lambda x: _matrix_power(x, 3), [(2, 3, 3)], dtypes=F,
      grad=True),
    C("matrix_power_0", lambda x: ember.matrix_power(x, 0), lambda x: _matrix_power(x, 0), [(3, 3)], dtypes=F + I),
    C("chain_matmul", ember.chain_matmul, lambda a, b, c: a @ b @ c, [(2, 3), (3, 4), (4, 2)], dtypes=F, grad=True),
    C("einsum_ellipsis_broadcast", lambda a, b: ember.einsum("...ij,...jk->...ik", a, b),
      lambda a, b: np.einsum("...ij,...jk->...ik", a, b), [(2, 3, 4), (4, 5)], dtypes=F, grad=True),
    C("einsum_implicit_output", lambda a, b: ember.einsum("ij,jk", a, b), lambda a, b: np.einsum("ij,jk", a, b),
      [(2, 3), (3, 4)], dtypes=F + I, grad=True),
    C("einsum_bilinear", lambda a, w, b: ember.einsum("bn,anm,bm->ba", a, w, b),
      lambda a, w, b: np.einsum("bn,anm,bm->ba", a, w, b), [(2, 3), (4, 3, 5), (2, 5)], dtypes=F, grad=True),
    C("einsum_batch_diag", lambda x: ember.einsum("bii->bi", x), lambda x: np.einsum("bii->bi", x), [(2, 3, 3)],
      dtypes=F, grad=True),
    C("einsum_sum_all", lambda x: ember.einsum("ijk->", x), lambda x: np.einsum("ijk->", x), [(2, 3, 4)], dtypes=F,
      grad=True),
    C("einsum_transpose", lambda x: ember.einsum("ijk->kji", x), lambda x: np.einsum("ijk->kji", x), [(2, 3, 4)],
      dtypes=F + I, grad=True),
    C("einsum_list_operands", lambda a, b: ember.einsum("i,i->", [a, b]), lambda a, b: np.einsum("i,i->", a, b),
      [(5,), (5,)], dtypes=F, grad=True),
    C("tensordot_int_dims", lambda a, b: ember.tensordot(a, b, 2), lambda a, b: np.tensordot(a, b, 2),
      [(2, 3, 4), (3, 4, 5)], dtypes=F + I, grad=True),
    C("tensordot_zero", lambda a, b: ember.tensordot(a, b, 0), lambda a, b: np.tensordot(a, b, 0), [(2, 3), (4,)],
      dtypes=F, grad=True),
    C("tensordot_swapped", lambda a, b: ember.tensordot(a, b, dims=([1, 2], [1, 0])),
      lambda a, b: np.tensordot(a, b, ([1, 2], [1, 0])), [(2, 3, 4), (4, 3, 5)], dtypes=F, grad=True),
    C("kron_mixed_rank", ember.kron, np.kron, [(2,), (3, 4)], dtypes=F + I, grad=True),
    C("trace_rect", ember.trace, np.trace, [(3, 5)], dtypes=F + I, grad=True),
    C("diag_offsets", lambda x: ember.cat([ember.diag(x, 1), ember.diag(x, -1)]),
      lambda x: np.concatenate([np.diag(x, 1), np.diag(x, -1)]), [(4, 5)], dtypes=F + I, grad=True),
    C("diag_vector_offset", lambda v: ember.diag(v, -2), lambda v: np.diag(v, -2), [(3,)], dtypes=F + I, grad=True),
    C("diagonal_dims", lambda x: ember.diagonal(x, 1, 0, 2), lambda x: np.diagonal(x, 1, 0, 2), [(3, 2, 4)],
      dtypes=F + I, grad=True),
    C("diagonal_neg_dims", lambda x: x.diagonal(offset=-1, dim1=-1, dim2=-2),
      lambda x: np.diagonal(x, -1, -1, -2), [(2, 4, 3)], dtypes=F, grad=True),
    C("diag_embed_offset_dims", lambda x: ember.diag_embed(x, 1, 0, 2), lambda x: _diag_embed(x, 1, 0, 2), [(2, 3)],
      dtypes=F, grad=True),
    C("diagflat", lambda x: ember.diagflat(x, -1), lambda x: np.diagflat(x, -1), [(2, 2)], dtypes=F, grad=True),
    C("cross_broadcast", lambda a, b: ember.cross(a, b, dim=-1), lambda a, b: np.cross(a, b),
      [(1, 3), (4, 3)], dtypes=F, grad=True),
]
