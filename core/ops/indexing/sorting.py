"""Sorting and searching: sort, argsort, msort, topk, kthvalue; unique and unique_consecutive;
searchsorted and bucketize; the counting ops bincount and histc.

sort and searchsorted are kernel ops (sort a primitive, searchsorted with a decomposition); the
others are written in them and in scatter_add.
"""
from __future__ import annotations

import math

from ... import _dtype as D
from ... import return_types as RT
from ..._tensor import Tensor, _wrap_dim
from .. import _args as U
from .. import comparison as CMP
from .. import creation as CR
from .. import reduction as R
from .. import shape as SH
from .. import unary as UN
from ..declare import composite, defop
from ..registry import dispatch, register_op
from . import masked as MK
from . import scatter_gather as SG

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive", "searchsorted", "bucketize",
           "bincount", "histc"]

_INT64 = D.int64


# -- sort, argsort, msort, topk, kthvalue ------------------------------------------------------------

def _sort_bw(ctx, g):
    x, d = ctx.args[0], ctx.args[1]
    gv = g[0]
    idx = ctx.out[1]
    if gv is None:
        return (None,)
    return (SG.scatter_add(CR.zeros(x.shape, dtype=gv._dtype, device=gv._device), d, idx, gv),)


@defop("sort", backward=_sort_bw, saves=(), save_output=(1,), returns=RT.sort, group="index")
def sort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """(values, indices) sorted along ``dim``; NaN sorts last (first when descending)."""
    x = input
    U.refuse_complex(x, "sort")
    if isinstance(dim, bool):
        dim, descending = -1, dim
    nd = x.dim()
    if nd == 0:
        return None, RT.sort(x.clone(), CR.zeros((), dtype=_INT64, device=x._device)), None
    d = _wrap_dim(dim, nd, "sort")
    if x._dtype is D.bool:
        v, i = sort(x.to(D.uint8), d, descending, stable)
        return None, RT.sort(v.to(D.bool), i), None
    # the kernel returns a plain (values, indices) pair: run it here to return the named tuple
    return x._device, (x, d, bool(descending), bool(stable)), (x,)


@composite("argsort", out=False, group="index")
def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """Indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


@composite("msort", group="index")
def msort(input):
    """``sort(input, 0).values``."""
    return sort(input, 0).values


@composite("topk", group="index")
def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices."""
    x = input
    U.refuse_complex(x, "topk")
    d = _wrap_dim(dim, x.dim(), "topk") if x.dim() else 0
    n = x._shape[d] if x.dim() else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range (k={k}, size {n} along dim {d})")
    v, i = sort(x, d, descending=largest, stable=True)
    if x.dim() == 0:
        return RT.topk(v, i)
    return RT.topk(v.narrow(d, 0, k), i.narrow(d, 0, k))


@composite("kthvalue", group="index")
def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest element along ``dim`` (1-based) and its index."""
    x = input
    d = _wrap_dim(dim, x.dim(), "kthvalue") if x.dim() else 0
    n = x._shape[d] if x.dim() else 1
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size (input {U.desc(x)}).")
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    v, i = sort(x, d, stable=True)
    if x.dim() == 0:
        return RT.kthvalue(v, i)
    v, i = v.narrow(d, k - 1, 1), i.narrow(d, k - 1, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return RT.kthvalue(v, i)


# -- unique, unique_consecutive -------------------------------------------------------------------

def _no_derivative_bw(ctx, g):
    raise NotImplementedError(f"the derivative for '{ctx.args[1]}' is not implemented")


# the values of unique/unique_consecutive of a tensor that requires grad: PyTorch's output requires
# grad too, and its backward raises (the op has no derivative)
_NO_DERIVATIVE = register_op("_no_derivative", decomposition=lambda v, name: v.clone(), backward=_no_derivative_bw,
                             saves=(), group="index")


def _values(res, input, name):
    """``res`` (the values, or a tuple starting with them) with the values attached to ``input``'s graph."""
    if not (isinstance(input, Tensor) and input.requires_grad):
        return res
    v = res[0] if isinstance(res, tuple) else res
    v = dispatch(_NO_DERIVATIVE, v._device, (v, name), (input,))
    return (v,) + res[1:] if isinstance(res, tuple) else v


def _check_zero_dims(x, d, name):
    if x._shape[d] == 0:
        if sum(n == 0 for n in x._shape) > 1:
            raise RuntimeError(f"{name}: Number of zero sized dimensions is more than one, so unique cannot be "
                               f"applied (input {U.desc(x)}, dim {d})")
    elif x.numel() == 0:
        raise RuntimeError(f"{name}: There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                           f"applied (input {U.desc(x)}, dim {d})")


@composite("unique", out=False, group="index")
def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """The distinct values (sorted), optionally with the inverse mapping and counts."""
    return _values(_unique(input.detach(), return_inverse, return_counts, dim), input, "unique")


def _unique(x, return_inverse, return_counts, dim):
    if dim is not None:
        d = _wrap_dim(dim, x.dim(), "unique")
        _check_zero_dims(x, d, "unique")
        return _unique_slices(x, d, return_inverse, return_counts, consecutive=False)
    flat = x.reshape(-1)
    n = flat._shape[0]
    if n == 0:
        e = flat.clone()
        res = [e]
        if return_inverse:
            res.append(CR.zeros(x._shape, dtype=_INT64, device=x._device))
        if return_counts:
            res.append(CR.zeros(0, dtype=_INT64, device=x._device))
        return res[0] if len(res) == 1 else tuple(res)
    s, perm = sort(flat, stable=True)
    first = CR.ones(1, dtype=D.bool, device=x._device)
    flags = SH.cat([first, CMP.ne(s[1:], s[:-1])]) if n > 1 else first
    vals = s[flags]
    res = [vals]
    if return_inverse:
        gid = R.cumsum(flags.to(_INT64), 0) - 1
        inv = SG.scatter(CR.zeros(n, dtype=_INT64, device=x._device), 0, perm, gid)
        res.append(inv.reshape(x._shape))
    if return_counts:
        pos = MK.nonzero(flags).reshape(-1)
        ends = SH.cat([pos[1:], CR.tensor([n], device=x._device)])
        res.append(ends - pos)
    return res[0] if len(res) == 1 else tuple(res)


def _unique_slices(x, d, return_inverse, return_counts, consecutive):
    """unique / unique_consecutive along ``dim``: the distinct slices ``x.select(d, i)``, sorted
    lexicographically unless ``consecutive`` (stable sorts by each element, last one first)."""
    n = x._shape[d]
    rows = x.movedim(d, 0).reshape(n, -1) if n else x.movedim(d, 0).reshape(0, max(1, x.numel()))
    perm = CR.arange(n, device=x._device)
    if not consecutive:
        for j in range(rows._shape[1] - 1, -1, -1):
            _, o = sort(SG.index_select(rows[:, j], 0, perm), stable=True)
            perm = SG.index_select(perm, 0, o)
    srt = SG.index_select(rows, 0, perm)
    first = CR.ones(min(n, 1), dtype=D.bool, device=x._device)
    flags = SH.cat([first, R.any(CMP.ne(srt[1:], srt[:-1]), 1)]) if n > 1 else first
    keep = MK.nonzero(flags).reshape(-1)
    res = [SG.index_select(x, d, SG.index_select(perm, 0, keep))]
    if return_inverse:
        gid = R.cumsum(flags.to(_INT64), 0) - 1
        res.append(SG.scatter(CR.zeros(n, dtype=_INT64, device=x._device), 0, perm, gid) if n else gid)
    if return_counts:
        ends = SH.cat([keep[1:], CR.tensor([n], device=x._device)]) if n else keep
        res.append(ends - keep)
    return res[0] if len(res) == 1 else tuple(res)


@composite("unique_consecutive", out=False, group="index")
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (or slices along ``dim``)."""
    return _values(_unique_consecutive(input.detach(), return_inverse, return_counts, dim), input,
                   "unique_consecutive")


def _unique_consecutive(input, return_inverse, return_counts, dim):
    if dim is not None:
        x = input
        d = _wrap_dim(dim, x.dim(), "unique_consecutive")
        _check_zero_dims(x, d, "unique_consecutive")
        return _unique_slices(x, d, return_inverse, return_counts, True)
    flat = input.reshape(-1)
    n = flat._shape[0]
    first = CR.ones(1, dtype=D.bool, device=input._device)
    flags = SH.cat([first, CMP.ne(flat[1:], flat[:-1])]) if n > 1 else first[:n]
    res = [flat[flags]]
    if return_inverse:
        res.append((R.cumsum(flags.to(_INT64), 0) - 1).reshape(input._shape))
    if return_counts:
        pos = MK.nonzero(flags).reshape(-1)
        ends = SH.cat([pos[1:], CR.tensor([n], device=input._device)])
        res.append(ends - pos)
    return res[0] if len(res) == 1 else tuple(res)


# -- searchsorted, bucketize ------------------------------------------------------------------------

def _searchsorted_decomp(seq, values, right):
    s = seq.unsqueeze(-2)          # [..., 1, n]
    v = values.unsqueeze(-1)       # [..., m, 1]
    cmp = CMP.le(s, v) if right else CMP.lt(s, v)
    return R.sum(cmp, -1)


@defop("searchsorted", decomposition=_searchsorted_decomp, differentiable=False, group="index")
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Indices where ``input`` values would be inserted into the last dim of ``sorted_sequence``."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("side and right can't be set to opposites, got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        sorter = SG._index_arg(sorter, "searchsorted", seq._device, "sorter")
        if sorter._shape != seq._shape:
            raise RuntimeError(f"searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                               f"{list(seq._shape)} and got sorter tensor {list(sorter._shape)}")
        SG.check_bounds(sorter, seq._shape[-1] if seq.dim() else 1, "searchsorted(): sorter", seq.dim() - 1, False)
        seq = SG.gather(seq, -1, sorter)
    scalar = not isinstance(input, Tensor)
    vals = CR.tensor(input, dtype=seq._dtype, device=seq._device) if scalar else input
    if vals._dtype is not seq._dtype:  # compared in the dtype PyTorch promotes them to (a 0-d input counts less)
        seq = seq.to(D.result_type(seq, vals))
    if seq.dim() > 1:
        if vals.dim() != seq.dim() or vals._shape[:-1] != seq._shape[:-1]:
            raise RuntimeError("searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                               "of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                               f"{list(seq._shape)} and input value tensor {list(vals._shape)}")
        args = (seq, vals.to(seq._dtype), bool(right))
        if not out_int32:
            return seq._device, args, ()
        r = dispatch(searchsorted.op, seq._device, args, ())
    else:
        # a 1-D sequence is one row: the kernel takes [1, n] boundaries and [1, m] values
        v = vals.reshape(1, -1) if vals.dim() else vals.reshape(1, 1)
        r = dispatch(searchsorted.op, seq._device, (seq.reshape(1, -1), v.to(seq._dtype), bool(right)), ())
        r = r.reshape(vals._shape)
    return None, (r.to(D.int32) if out_int32 else r), None


@composite("bucketize", group="index")
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """Bucket index of each value in ``boundaries`` (1-D, sorted)."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- bincount, histc ----------------------------------------------------------------------------------

@composite("bincount", out=False, group="index")
def bincount(input, weights=None, minlength: int = 0):
    """Count of each non-negative integer in a 1-D tensor (weighted when ``weights`` is given)."""
    if input._dtype.category != D._INT:
        raise U.dtype_not_implemented("bincount_cpu", input._dtype, "bincount only supports 1-d non-negative "
                                      "integral inputs")
    if input.dim() != 1:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs (got {input.dim()}-d)")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    n = input._shape[0]
    if n and int(input.min().item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = max(int(input.max().item()) + 1 if n else 0, minlength)
    idx = input.to(_INT64)
    if weights is None:
        z = CR.zeros(size, dtype=_INT64, device=input._device)
        return SG.scatter_add(z, 0, idx, CR.ones(n, dtype=_INT64, device=input._device))
    w = weights if weights._dtype is D.float32 else weights.to(D.float64)  # as PyTorch: float32 or double
    z = CR.zeros(size, dtype=w._dtype, device=input._device)
    return SG.scatter_add(z, 0, idx, w)


def _num(v: float):
    return int(v) if math.isfinite(v) and v == int(v) else v


@composite("histc", group="index")
def histc(input, bins: int = 100, min=0, max=0):
    """Histogram of values in ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    x = input.detach()
    if x._dtype.category != D._FLOAT:
        raise U.dtype_not_implemented("histogram_cpu", x._dtype)
    if bins <= 0:
        raise RuntimeError("bins must be > 0")
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(x.min().item()), float(x.max().item())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_num(lo)}, {_num(hi)}] is not finite (input {U.desc(x)})")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("max must be larger than min")
    flat = x.reshape(-1)
    keep = CMP.logical_and(CMP.ge(flat, lo), CMP.le(flat, hi))
    v = flat[keep]
    b = UN.floor((v - lo) * (bins / (hi - lo))).to(_INT64).clamp(0, bins - 1)
    z = CR.zeros(bins, dtype=x._dtype, device=x._device)
    return SG.scatter_add(z, 0, b, CR.ones(b._shape, dtype=x._dtype, device=x._device))
