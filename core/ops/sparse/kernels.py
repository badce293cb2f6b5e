"""The sparse COO operations: ``sparse.mm`` (sparse @ dense), ``sparse.addmm``, ``sparse.sum``,
``sparse.softmax``/``log_softmax``, and the kernels of the sparse dispatch key
(:class:`~ember._layout.SparseKernels`) through which ``torch.mm``, ``@``, ``sparse * number``,
``sparse + sparse``, ``-sparse``, ``clone``, ``.to(...)`` and ``t()``/``transpose`` reach them.

``sparse @ dense`` is the dense rows picked by the column indices (``index_select``), scaled by
the values, added into the output rows (``index_add``): ops every backend has, so it runs
everywhere and autograd reaches both the dense operand and the values.
"""
from __future__ import annotations

from ... import _dtype as D
from ..._layout import SparseKernels, SparseParts
from ..._tensor import Tensor
from .. import creation as CR
from .. import indexing as IX
from .. import shape as SH
from . import coo

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spmm"]


def _check_2d(s: Tensor, op: str) -> coo.SparseParts:
    p = s._storage
    if p.indices._shape[0] != 2 or p.values.dim() != 1:
        raise RuntimeError(f"{op}: ember multiplies 2-D sparse tensors without dense dims only (got sparse_dim "
                           f"{p.indices._shape[0]}, dense_dim {p.values.dim() - 1})")
    return p


def _sparse_dense(s: Tensor, d: Tensor, op: str) -> Tensor:
    p = _check_2d(s, op)
    if coo.is_sparse(d):
        return coo.to_sparse(_sparse_dense(s, coo.to_dense(d), op))
    if d.dim() not in (1, 2):
        raise RuntimeError(f"{op}: the dense operand must be 1-D or 2-D, got {d.dim()}-D")
    m, k = s._shape
    if d._shape[0] != k:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and "
                           f"{'x'.join(str(n) for n in d._shape)})")
    if d._dtype is not s._dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: {s._dtype} != {d._dtype}")
    rows, cols = p.indices[0], p.indices[1]
    picked = d.index_select(0, cols)
    contrib = picked * (p.values.unsqueeze(-1) if d.dim() == 2 else p.values)
    out = CR.zeros((m,) + tuple(d._shape[1:]), dtype=d._dtype, device=d._device)
    return out.index_add(0, rows, contrib)


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """``ember.sparse.mm``: sparse @ dense is dense, sparse @ sparse is sparse; gradients reach the
    dense operand and the sparse operand's values (a sparse gradient at its indices)."""
    if reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} is not supported by ember (only 'sum')")
    if not coo.is_sparse(mat1):
        if coo.is_sparse(mat2):
            return _sparse_dense(mat2.t(), mat1.t(), "mm").t()
        return mat1.mm(mat2)
    return _sparse_dense(mat1, mat2, "mm")


spmm = mm


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse."""
    prod = mm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return (mat if beta == 1 else mat * beta) + prod


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - torch.sparse.sum
    """``ember.sparse.sum``: all entries (a 0-d dense tensor), or over ``dim`` (a sparse tensor
    over the remaining sparse dims, dense when every sparse dim is summed)."""
    p = coo._parts(input, "sparse.sum")
    vals = p.values if dtype is None else p.values.to(dtype)
    if dim is None:
        return vals.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd = input.dim()
    dims = sorted({d + nd if d < 0 else d for d in dims})
    sd = p.indices._shape[0]
    sparse_dims = [d for d in dims if d < sd]
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dim=tuple(dense_dims))
    keep = [d for d in range(sd) if d not in sparse_dims]
    if not sparse_dims:
        return coo.make_sparse(p.indices, vals, tuple(s for i, s in enumerate(input._shape) if i not in dims),
                               p.coalesced)
    if not keep:
        return vals.sum(0)
    idx = p.indices.index_select(0, CR.tensor(keep, dtype=D.int64, device=p.indices._device))
    size = tuple(s for i, s in enumerate(input._shape) if i not in dims)
    return coo.coalesce(coo.make_sparse(idx, vals, size, False))


def _softmax(input: Tensor, dim: int, log: bool, dtype) -> Tensor:
    s = coo.coalesce(input)
    p = s._storage
    sd = p.indices._shape[0]
    dim = dim + input.dim() if dim < 0 else dim
    if dim >= sd or p.values.dim() != 1:
        raise NotImplementedError("sparse.softmax: ember supports softmax over a sparse dim of a tensor without "
                                  "dense dims")
    vals = p.values if dtype is None else p.values.to(dtype)
    keep = [d for d in range(sd) if d != dim]
    if not keep or vals._shape[0] == 0:
        groups = CR.zeros(vals._shape[0], dtype=D.int64, device=vals._device)
        ng = 1
    else:
        sub = p.indices.index_select(0, CR.tensor(keep, dtype=D.int64, device=p.indices._device))
        uniq, groups = IX.unique(coo.linear_index(sub, [s._shape[d] for d in keep]), return_inverse=True)
        ng = uniq._shape[0]
    zeros = CR.zeros(ng, dtype=vals._dtype, device=vals._device)
    with_grad_off = vals.detach()
    top = zeros.scatter_reduce(0, groups, with_grad_off, "amax", include_self=False)
    shifted = vals - top.index_select(0, groups)
    e = shifted.exp()
    total = zeros.index_add(0, groups, e).index_select(0, groups)
    out = shifted - total.log() if log else e / total
    return coo.make_sparse(p.indices, out, input._shape, True)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``ember.sparse.softmax``: softmax over the specified entries along ``dim`` (the others count
    as -inf, so they stay unspecified)."""
    return _softmax(input, dim, False, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``ember.sparse.log_softmax``, as :func:`softmax`."""
    return _softmax(input, dim, True, dtype)


# -- the sparse dispatch key's kernels: what the dense front ends reach with a sparse operand ----

def _is_number(b) -> bool:
    return not isinstance(b, Tensor) or (not b._shape and b._storage.__class__ is not SparseParts)


def _scaled(op: str):
    def kernel(a, b, **kwargs):
        if kwargs or not coo.is_sparse(a) or not _is_number(b):
            raise RuntimeError(f"{op}: ember supports a sparse tensor {'times' if op == 'mul' else 'divided by'} a "
                               "number only (see docs/sparse.md)")
        p = a._storage
        v = p.values * b if op == "mul" else p.values / b
        return coo.make_sparse(p.indices, v, a._shape, p.coalesced)
    return kernel


def _mul(a, b, **kwargs):
    if not coo.is_sparse(a):
        a, b = b, a
    return _scaled("mul")(a, b, **kwargs)


def _add(a, b, sign=1):
    if not (coo.is_sparse(a) and coo.is_sparse(b)):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if a._shape != b._shape:
        raise RuntimeError(f"add: expected sizes to match, but got {list(a._shape)} and {list(b._shape)}")
    pa, pb = a._storage, b._storage
    if pa.indices._shape[0] != pb.indices._shape[0]:
        raise RuntimeError("add: expected both sparse tensors to have the same sparse_dim")
    vb = pb.values if sign == 1 else -pb.values
    return coo.coalesce(coo.make_sparse(SH.cat([pa.indices, pb.indices], 1), SH.cat([pa.values, vb]), a._shape,
                                        False))


def _neg(a):
    p = a._storage
    return coo.make_sparse(p.indices, -p.values, a._shape, p.coalesced)


def _abs(a):
    p = a._storage
    return coo.make_sparse(p.indices, p.values.abs(), a._shape, p.coalesced)


def _clone(a, **kwargs):
    p = a._storage
    return coo.make_sparse(p.indices.clone(), p.values.clone(), a._shape, p.coalesced)


def _to_copy(x, dtype, dev, non_blocking=False):
    return coo.sparse_to(x, dtype, dev, True)


def _sum(x, dims, keepdim):
    if keepdim:
        raise NotImplementedError("sum(keepdim=True) of a sparse tensor is not supported by ember")
    return sum(x, tuple(dims) if dims is not None else None)


def _transpose(x, d0, d1):
    p = x._storage
    sd = p.indices._shape[0]
    if d0 >= sd or d1 >= sd:
        raise RuntimeError("transpose: ember transposes two sparse dims of a sparse tensor only")
    perm = list(range(sd))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    idx = p.indices.index_select(0, CR.tensor(perm, dtype=D.int64, device=p.indices._device))
    shape = list(x._shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    return coo.make_sparse(idx, p.values, tuple(shape), p.coalesced and d0 == d1)


SparseKernels.impls.update({
    "matmul": lambda a, b: _sparse_dense(a, b, "matmul"),
    "mul": _mul,
    "div": _scaled("div"),
    "add": _add,
    "sub": lambda a, b: _add(a, b, -1),
    "neg": _neg,
    "abs": _abs,
    "clone": _clone,
    "_to_copy": _to_copy,
    "_to_device": _to_copy,
    "sum": _sum,
})
SparseKernels.views.update({"transpose": _transpose})
