"""Indexing ops (gather/scatter and friends, index_*, masked_*, nonzero, sort/topk, unique,
searchsorted, histograms) and ``Tensor.__getitem__`` / ``__setitem__``.

Indices are bounds-checked: front ends of composite ops wrap negative indices where PyTorch
allows them and raise ``IndexError`` for anything out of range before any kernel runs;
primitive kernels (gather, scatter_add) check again themselves.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .. import return_types as RT
from .._tensor import Tensor, _wrap_dim
from . import _args as U
from .registry import dispatch, register_op
from . import arithmetic as A
from . import comparison as CMP
from . import copy as CP
from . import creation as CR
from . import pointwise as PW
from . import reduction as R
from . import shape as SH
from . import unary as UN
from . import views as V
from . import writes as W

__all__ = ["argsort", "argwhere", "bincount", "bucketize", "gather", "histc", "index_add", "index_add_",
           "index_copy", "index_copy_", "index_fill", "index_fill_", "index_put", "index_put_", "index_reduce",
           "index_reduce_", "index_select", "kthvalue", "masked_fill", "masked_fill_", "masked_scatter",
           "masked_scatter_", "masked_select", "msort", "nonzero", "put", "put_", "scatter", "scatter_",
           "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_", "searchsorted", "sort", "take",
           "take_along_dim", "topk", "unique", "unique_consecutive"]

_INT64 = D.int64


def _as_index(idx, op, dev=None) -> Tensor:
    if isinstance(idx, Tensor):
        dt = idx._dtype
        if dt is _INT64 or dt is D.bool:
            return idx
        if dt is D.uint8:  # legacy byte masks
            return idx.to(D.bool)
        if dt is D.int32 or dt is D.int16 or dt is D.int8:
            return idx.to(_INT64)
        if dt is not _INT64:
            raise IndexError(f"{op}(): tensors used as indices must be long, int, byte or bool tensors (got {idx._dtype})")
        return idx
    if isinstance(idx, (list, tuple)) and len(idx) == 0:
        return CR.zeros(0, dtype=_INT64, device=dev)
    t = CR.tensor(idx, device=dev)
    if t._dtype.category == D._FLOAT:
        raise IndexError(f"{op}(): tensors used as indices must be long, int, byte or bool tensors (got float values)")
    return t if t._dtype is _INT64 or t._dtype is D.bool else t.to(_INT64)


def _index_arg(index, op: str, dev, what: str = "index") -> Tensor:
    """The index tensor of gather/scatter/index_*/take: int64 (int32 and lists are converted);
    anything else is refused with RuntimeError, as PyTorch."""
    if not isinstance(index, Tensor):
        if isinstance(index, (list, tuple)):
            return _as_index(list(index), op, dev)
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(index).__name__}")
    dt = index._dtype
    if dt is _INT64:
        return index
    if dt is D.int32 or dt is D.int16 or dt is D.int8 or dt is D.uint8:
        return index.to(_INT64)
    raise RuntimeError(f"{op}(): Expected dtype int32/int64 for {what}, got {dt.name} ({U.desc(index)})")


def check_bounds(idx: Tensor, size: int, op: str, dim: int, allow_negative: bool) -> Tensor:
    """Wrap negative indices (when allowed) and refuse out-of-range ones with
    :class:`~ember.backend.IndexOutOfRangeError` (an IndexError and a RuntimeError)."""
    if idx.numel() == 0:
        return idx
    lo = int(R.amin(idx).item())
    hi = int(R.amax(idx).item())
    lim_lo = -size if allow_negative else 0
    if lo < lim_lo or hi >= size:
        bad = hi if hi >= size else lo
        raise U.index_error(op, bad, dim, size)
    if lo < 0:
        idx = PW.where(CMP.lt(idx, 0), A.add(idx, size), idx)
    return idx


# -- gather / scatter ---------------------------------------------------------------------------

def _gather_bw(ctx, g):
    x, d, index = ctx.args
    from . import zeros
    return (scatter_add(zeros(x.shape, dtype=g._dtype, device=g._device), d, index, g),)


_GATHER = register_op("gather", group="index", saves=(), backward=_gather_bw)


def _check_gather_shapes(x, d, index, op, src=None):
    if index.dim() != x.dim() and not (index.dim() <= 1 and x.dim() <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(index._shape)}, input {list(x._shape)})")
    for i in range(index.dim()):
        if i != d and index._shape[i] > (x._shape[i] if x.dim() else 1):
            raise RuntimeError(f"{op}(): Size does not match at dimension {i} expected index {list(index._shape)} to be "
                               f"smaller than self {list(x._shape)} apart from dimension {d}")
        if src is not None and index._shape[i] > (src._shape[i] if src.dim() else 1):
            raise RuntimeError(f"{op}(): Expected index {list(index._shape)} to be smaller than self {list(x._shape)} "
                               f"apart from dimension {d} and to be smaller size than src {list(src._shape)}")


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (indices must be in range)."""
    x = input
    d = _wrap_dim(dim, x.dim(), "gather") if x.dim() else 0
    index = _index_arg(index, "gather", x._device)
    U.common_device("gather", x, index)
    _check_gather_shapes(x, d, index, "gather")
    if x.dim() == 0:
        x = x.reshape(1)
        index = index.reshape(-1) if index.dim() else index.reshape(1)
        r = dispatch(_GATHER, x._device, (x, 0, index), (x,))
        return r.reshape(input._shape if index.numel() == 1 and input.dim() == 0 else r._shape)
    r = dispatch(_GATHER, x._device, (x, d, index), (x,))
    return r if out is None else W.write_out(out, r, "gather")


def _scatter_add_bw(ctx, g):
    x, d, index, src = ctx.args
    res = []
    i = 0
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        res.append(g if ctx.needs_input_grad[0] else None)
        i = 1
    res.append(gather(g, d, index) if ctx.needs_input_grad[i] else None)
    return tuple(res)


_SCATTER_ADD = register_op("scatter_add", group="index", saves=(), backward=_scatter_add_bw)


def _src_region(src, index):
    if src._shape == index._shape:
        return src
    r = src
    for i, n in enumerate(index._shape):
        if r._shape[i] != n:
            r = r.narrow(i, 0, n)
    return r


def _scatter_prep(x, dim, index, src, op):
    d = _wrap_dim(dim, x.dim(), op) if x.dim() else 0
    index = _index_arg(index, op, x._device)
    if isinstance(src, Tensor):
        U.common_device(op, x, index, src)
        if src._dtype is not x._dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got {x._dtype.name} and {src._dtype.name})")
        _check_gather_shapes(x, d, index, op, src)
        src = _src_region(src, index)
    else:
        _check_gather_shapes(x, d, index, op)
    return d, index, src


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (duplicates accumulate)."""
    d, index, src = _scatter_prep(input, dim, index, src, "scatter_add")
    return dispatch(_SCATTER_ADD, input._device, (input, d, index, src), (input, src))


def scatter_add_(self, dim, index, src):
    """In-place :func:`scatter_add`."""
    d, index, src = _scatter_prep(self, dim, index, src, "scatter_add_")
    return W.write_direct(_SCATTER_ADD, self, self._device, (self, d, index, src), (self, src), 0)


def _scatter_decomp(x, d, index, src):
    from . import ones_like, zeros_like
    if not isinstance(src, Tensor):
        src = CR.full(index._shape, src, dtype=x._dtype, device=x._device)
    hit = scatter_add(zeros_like(x, dtype=D.int32), d, index, ones_like(index, dtype=D.int32))
    vals = scatter_add(zeros_like(x), d, index, src)
    if x._dtype.category == D._FLOAT:
        vals = vals / PW.where(CMP.gt(hit, 1), hit, 1).to(x._dtype)  # duplicate indices: unspecified in PyTorch
    return PW.where(CMP.gt(hit, 0), vals, x)


def _scatter_bw(ctx, g):
    x, d, index, src = ctx.args
    res = [g.scatter(d, index, 0.0) if ctx.needs_input_grad[0] else None]
    if isinstance(src, Tensor) or hasattr(src, "shape"):
        res.append(gather(g, d, index) if ctx.needs_input_grad[1] else None)
    return tuple(res)


_SCATTER = register_op("scatter", decomposition=_scatter_decomp, backward=_scatter_bw, saves=(), group="index")


def _scatter_reduce_decomp(x, d, index, src, reduce, include_self):
    n = x._shape[d]
    pos = CR.arange(n, device=x._device).reshape([n] + [1] * index.dim())
    onehot = (index.unsqueeze(0) == pos)  # [n, *index.shape]
    dd = d + 1
    s = src.unsqueeze(0).expand(onehot._shape)
    if reduce in ("sum", "mean"):
        acc = R.sum(PW.where(onehot, s, 0), dd)
    elif reduce == "prod":
        acc = R.prod(PW.where(onehot, s, 1), dd)
    elif reduce == "amax":
        lo = float("-inf") if x._dtype.category == D._FLOAT else D.iinfo(x._dtype).min
        acc = R.amax(PW.where(onehot, s, lo), dd)
    else:
        hi = float("inf") if x._dtype.category == D._FLOAT else D.iinfo(x._dtype).max
        acc = R.amin(PW.where(onehot, s, hi), dd)
    # acc: [n, *other dims of index]; move the dim back and pad to x's shape
    acc = acc.movedim(0, d)
    cnt = R.sum(onehot, dd).movedim(0, d)
    full = x.clone()
    region = full
    for i in range(x.dim()):
        if i != d and region._shape[i] != acc._shape[i]:
            region = region.narrow(i, 0, acc._shape[i])
    hit = cnt > 0
    if reduce == "sum":
        newv = acc + region if include_self else acc
    elif reduce == "prod":
        newv = acc * region if include_self else acc
    elif reduce == "mean":
        tot = acc + region if include_self else acc
        c = cnt + (1 if include_self else 0)
        newv = tot / c if x._dtype.category == D._FLOAT else tot // c
    elif reduce == "amax":
        newv = A.maximum(acc, region) if include_self else acc
    else:
        newv = A.minimum(acc, region) if include_self else acc
    region.copy_(PW.where(hit, newv.to(x._dtype), region))
    return full


_SCATTER_REDUCE = register_op("scatter_reduce", decomposition=_scatter_reduce_decomp, group="index")


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (or ``value``) written at ``index`` along ``dim``;
    ``reduce`` 'add' or 'multiply' combines instead."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() needs src or value")
    if isinstance(src, Tensor) and src.dim() == 0 and index.dim() != 0:
        src = src.item()
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        if not isinstance(src, Tensor):
            src = CR.full(index._shape, src, dtype=input._dtype, device=input._device)
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    d, index, src = _scatter_prep(input, dim, index, src, "scatter")
    if not isinstance(src, Tensor):
        src = CP.scalar_for(src, input._dtype, "scatter")
        return dispatch(_SCATTER, input._device, (input, d, index, src), (input,))
    return dispatch(_SCATTER, input._device, (input, d, index, src), (input, src))


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place :func:`scatter`."""
    if reduce is not None:
        return self.copy_(scatter(self, dim, index, src, value=value, reduce=reduce))
    return _scatter_inplace(self, dim, index, src if src is not None else value)


def _scatter_inplace(self, dim, index, src):
    if isinstance(src, Tensor) and src.dim() == 0 and index.dim() != 0:
        src = src.item()
    d, index, src = _scatter_prep(self, dim, index, src, "scatter_")
    if not isinstance(src, Tensor):
        src = CP.scalar_for(src, self._dtype, "scatter_")
        return W.write_direct(_SCATTER, self, self._device, (self, d, index, src), (self,), 0)
    return W.write_direct(_SCATTER, self, self._device, (self, d, index, src), (self, src), 0)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce ``src`` into ``input`` at ``index`` with 'sum', 'prod', 'mean', 'amax' or 'amin'."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, index, src = _scatter_prep(input, dim, index, src, "scatter_reduce")
    index = check_bounds(index, input._shape[d] if input.dim() else 1, "scatter_reduce", d, False)
    return dispatch(_SCATTER_REDUCE, input._device, (input, d, index, src, reduce, bool(include_self)), (input, src))


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place :func:`scatter_reduce`."""
    return self.copy_(scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


# -- index_* ------------------------------------------------------------------------------------

def _index_select_decomp(x, d, index):
    shape = [1] * x.dim()
    shape[d] = index._shape[0]
    full = list(x._shape)
    full[d] = index._shape[0]
    return gather(x, d, index.reshape(shape).expand(full))


def _index_select_bw(ctx, g):
    x, d, index = ctx.args
    from . import zeros
    return (index_add(zeros(x.shape, dtype=g._dtype, device=g._device), d, index, g),)


_INDEX_SELECT = register_op("index_select", decomposition=_index_select_decomp, backward=_index_select_bw, saves=(),
                            group="index")


def index_select(input, dim, index, *, out=None):
    """The entries of ``input`` at ``index`` (1-D, indices in range) along ``dim``."""
    x = input
    index = _index_arg(index, "index_select", x._device)
    if index.dim() > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got {index.dim()}-D")
    if x.dim() == 0:
        index = check_bounds(index, 1, "index_select", 0, False)
        r = x.reshape(1).index_select(0, index.reshape(-1)).reshape(index._shape)
        return r if out is None else W.write_out(out, r, "index_select")
    d = _wrap_dim(dim, x.dim(), "index_select")
    index = index.reshape(-1)
    index = check_bounds(index, x._shape[d], "index_select", d, False)
    r = dispatch(_INDEX_SELECT, x._device, (x, d, index), (x,))
    return r if out is None else W.write_out(out, r, "index_select")


def _expand_index(x, d, index, src_shape):
    shape = [1] * len(src_shape)
    shape[d] = index._shape[0]
    return index.reshape(shape).expand(src_shape)


def _index_source_args(input, dim, index, source, op, allow_negative=False):
    """Validate the (dim, index, source) of index_add/index_copy/index_reduce as PyTorch does:
    a 1-D index in range, a source of input's shape except ``len(index)`` along ``dim``."""
    d = _wrap_dim(dim, input.dim(), op) if input.dim() else 0
    index = _index_arg(index, op, input._device)
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got {index.dim()}-D")
    index = index.reshape(-1)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    n = index._shape[0]
    src_n = source._shape[d] if source.dim() else 1
    if src_n != n:
        raise U.IndexOutOfRangeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim) ({src_n}) "
                         f"(input {list(input._shape)}, source {list(source._shape)}, dim {d})")
    if max(input.dim(), 1) != max(source.dim(), 1) or any(
            i != d and source._shape[i] != input._shape[i] for i in range(source.dim())):
        raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, excluding the specified "
                           f"dimension. Got self.shape = {list(input._shape)} source.shape = {list(source._shape)}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"{op}(): self ({input._dtype.name}) and source ({source._dtype.name}) must have the "
                           "same scalar type")
    index = check_bounds(index, input._shape[d] if input.dim() else 1, op, d, allow_negative)
    return d, index


def _as_1d(x):
    return x.reshape(1) if x.dim() == 0 else x


def index_add(input, dim, index, source, *, alpha=1, out=None):
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``."""
    d, index = _index_source_args(input, dim, index, source, "index_add")
    src = _as_1d(source if alpha == 1 else source * alpha)
    r = scatter_add(_as_1d(input), d, _expand_index(input, d, index, src._shape), src).reshape(input._shape)
    return r if out is None else W.write_out(out, r, "index_add")


def index_add_(self, dim, index, source, *, alpha=1):
    """In-place :func:`index_add`."""
    d, index = _index_source_args(self, dim, index, source, "index_add_")
    src = _as_1d(source if alpha == 1 else source * alpha)
    target = _as_1d(self)
    scatter_add_(target, d, _expand_index(self, d, index, src._shape), src)
    return self


def index_copy(input, dim, index, source, *, out=None):
    """A copy of ``input`` with ``source`` written at ``index`` along ``dim``."""
    d, index = _index_source_args(input, dim, index, source, "index_copy")
    src = _as_1d(source)
    r = scatter(_as_1d(input), d, _expand_index(input, d, index, src._shape), src).reshape(input._shape)
    return r if out is None else W.write_out(out, r, "index_copy")


def index_copy_(self, dim, index, source):
    """In-place :func:`index_copy`."""
    d, index = _index_source_args(self, dim, index, source, "index_copy_")
    src = _as_1d(source)
    _scatter_inplace(_as_1d(self), d, _expand_index(self, d, index, src._shape), src)
    return self


def _index_fill_args(input, dim, index, value, op):
    d = _wrap_dim(dim, input.dim(), op) if input.dim() else 0
    index = _index_arg(index, op, input._device)
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index has to be a vector, got {index.dim()}-D")
    index = check_bounds(index.reshape(-1), input._shape[d] if input.dim() else 1, op, d, True)
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{op}(): only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        value = value.item()
    shape = list(input._shape) or [1]
    shape[d] = index._shape[0]
    return d, _expand_index(input, d, index, tuple(shape)), value


def index_fill(input, dim, index, value):
    """A copy of ``input`` with ``value`` written at ``index`` (negative counts from the end) along ``dim``."""
    d, idx, value = _index_fill_args(input, dim, index, value, "index_fill")
    return scatter(_as_1d(input), d, idx, value=value).reshape(input._shape)


def index_fill_(self, dim, index, value):
    """In-place :func:`index_fill`."""
    d, idx, value = _index_fill_args(self, dim, index, value, "index_fill_")
    _scatter_inplace(_as_1d(self), d, idx, value)
    return self


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """Reduce rows of ``source`` into ``input`` at ``index`` along ``dim`` ('prod', 'mean', 'amax', 'amin')."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, index = _index_source_args(input, dim, index, source, "index_reduce")
    src = _as_1d(source)
    r = scatter_reduce(_as_1d(input), d, _expand_index(input, d, index, src._shape), src, reduce,
                       include_self=include_self).reshape(input._shape)
    return r if out is None else W.write_out(out, r, "index_reduce")


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place :func:`index_reduce`."""
    return W.write_back(self, index_reduce(self, dim, index, source, reduce, include_self=include_self), "index_reduce_")


def take(input, index, *, out=None):
    """``input.flatten()[index]`` (negative indices count from the end)."""
    index = _index_arg(index, "take", input._device)
    flat = input.reshape(-1)
    idx = check_bounds(index, flat._shape[0], "take", 0, True)
    r = index_select(flat, 0, idx.reshape(-1)).reshape(index._shape)
    return r if out is None else W.write_out(out, r, "take")


def _put_args(self, index, source, op):
    index = _index_arg(index, op, self._device)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.numel() != index.numel():
        raise RuntimeError(f"{op}(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"{op}(): self ({self._dtype.name}) and source ({source._dtype.name}) must have the same "
                           "scalar type")
    return check_bounds(index.reshape(-1), self.numel(), op, 0, True), source.reshape(-1)


def put(input, index, source, accumulate: bool = False):
    """A copy of ``input`` with ``source`` written at flat positions ``index`` (summed with
    ``accumulate``; negative indices count from the end)."""
    idx, src = _put_args(input, index, source, "put")
    return index_put(input.reshape(-1), (idx,), src, accumulate).reshape(input._shape)


def put_(self, index, source, accumulate: bool = False):
    """In-place :func:`put`."""
    idx, src = _put_args(self, index, source, "put_")
    return W.write_back(self, index_put(self.reshape(-1), (idx,), src, accumulate).reshape(self._shape), "put_")


def take_along_dim(input, indices, dim=None, *, out=None):
    """``gather`` with broadcasting between ``input`` and ``indices`` (negative indices count
    from the end; PyTorch reads out-of-range ones unchecked, ember refuses them)."""
    indices = _index_arg(indices, "take_along_dim", input._device, "indices")
    if dim is None:
        r = take(input, indices.reshape(-1))
        return r if out is None else W.write_out(out, r, "take_along_dim")
    d = _wrap_dim(dim, input.dim(), "take_along_dim")
    if indices.dim() != input.dim():
        raise RuntimeError(f"take_along_dim(): input and indices should have the same number of dimensions, but got "
                           f"{input.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
    s_in = list(input._shape)
    s_ix = list(indices._shape)
    s_in[d] = 1
    s_ix[d] = 1
    b = U.broadcast_shapes(tuple(s_in), tuple(s_ix), "take_along_dim")
    xi = list(b)
    xi[d] = input._shape[d]
    ii = list(b)
    ii[d] = indices._shape[d]
    idx = check_bounds(indices, input._shape[d], "take_along_dim", d, True)
    r = gather(input.expand(xi), d, idx.expand(ii))
    return r if out is None else W.write_out(out, r, "take_along_dim")


# -- masked ops --------------------------------------------------------------------------------

def _mask_arg(mask, op):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._dtype is not D.bool:
        if mask._dtype is D.uint8:
            return mask.to(D.bool)
        raise RuntimeError(f"{op}: expected BoolTensor for mask")
    return mask


def masked_fill(input, mask, value):
    """``value`` where ``mask`` (broadcast) is True, else ``input``."""
    mask = _mask_arg(mask, "masked_fill")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {value.dim()} dimension(s).")
        if not value._requires_grad:
            value = value.item()
    if not isinstance(value, Tensor):
        value = CP.scalar_for(value, input._dtype, "masked_fill")
    U.broadcast_shapes(input._shape, mask._shape, "masked_fill")
    r = PW.where(mask, value, input)
    return r if r._dtype is input._dtype else r.to(input._dtype)


def masked_fill_(self, mask, value):
    """In-place :func:`masked_fill` (the mask broadcasts to ``self``)."""
    mask = _mask_arg(mask, "masked_fill_")
    if U.broadcast_shapes(self._shape, mask._shape, "masked_fill_") != self._shape:
        raise RuntimeError(f"masked_fill_: mask of shape {list(mask._shape)} can't be broadcast to self {list(self._shape)}")
    return self.copy_(masked_fill(self, mask, value))


def masked_select(input, mask, *, out=None):
    """The elements where ``mask`` (broadcast with input) is True, as a 1-D tensor."""
    mask = _mask_arg(mask, "masked_select")
    shape = U.broadcast_shapes(input._shape, mask._shape, "masked_select")
    r = getitem(input.expand(shape), mask.expand(shape))
    return r if out is None else W.write_out(out, r, "masked_select")


def masked_scatter(input, mask, source):
    """``input`` with the True positions of ``mask`` filled by consecutive elements of ``source``."""
    mask = _mask_arg(mask, "masked_scatter")
    shape = U.broadcast_shapes(input._shape, mask._shape, "masked_scatter")
    m = mask.expand(shape)
    n = int(m.sum().item())
    if source.numel() < n:
        raise RuntimeError(f"masked_scatter: expected source to have at least {n} elements, got {source.numel()}")
    out = input.expand(shape).clone()
    out[m] = source.reshape(-1)[:n]
    return out


def masked_scatter_(self, mask, source):
    """In-place :func:`masked_scatter`."""
    return self.copy_(masked_scatter(self, mask, source))


# -- nonzero, sort, topk ------------------------------------------------------------------------

_NONZERO = register_op("nonzero", group="index", differentiable=False)


def nonzero(input, *, out=None, as_tuple: bool = False):
    """Indices of the nonzero elements, as [n, ndim] (or a tuple of 1-D tensors)."""
    x = input
    if x.dim() == 0:
        x = x.reshape(1)
        r = dispatch(_NONZERO, x._device, (x,), ())
        if as_tuple:
            return (r[:, 0],)
        return r[:, :0]
    r = dispatch(_NONZERO, x._device, (x,), ())
    if as_tuple:
        return tuple(r[:, i] for i in range(x.dim()))
    return r if out is None else W.write_out(out, r, "nonzero")


def argwhere(input):
    """The indices of the nonzero elements, as an [n, ndim] tensor."""
    return nonzero(input)


def _sort_bw(ctx, g):
    x, d = ctx.args[0], ctx.args[1]
    gv = g[0]
    idx = ctx.out[1]
    if gv is None:
        return (None,)
    from . import zeros
    return (scatter_add(zeros(x.shape, dtype=gv._dtype, device=gv._device), d, idx, gv),)


_SORT = register_op("sort", group="index", backward=_sort_bw, saves=(), save_output=True)


def sort(input, dim: int = -1, descending: bool = False, stable: bool = False, *, out=None):
    """(values, indices) sorted along ``dim``; NaN sorts last (first when descending)."""
    x = input
    if isinstance(dim, bool):
        dim, descending = -1, dim
    if x.dim() == 0:
        from . import zeros
        return RT.sort(x.clone(), zeros((), dtype=_INT64, device=x._device))
    d = _wrap_dim(dim, x.dim(), "sort")
    if x._dtype is D.bool:
        v, i = sort(x.to(D.uint8), d, descending, stable)
        r = RT.sort(v.to(D.bool), i)
    else:
        v, i = dispatch(_SORT, x._device, (x, d, bool(descending), bool(stable)), (x,))
        r = RT.sort(v, i)
    if out is not None:
        return W.write_out_tuple(out, r, "sort")
    return r


def argsort(input, dim: int = -1, descending: bool = False, stable: bool = False):
    """Indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def msort(input, *, out=None):
    """``sort(input, 0).values``."""
    r = sort(input, 0).values
    return r if out is None else W.write_out(out, r, "msort")


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices."""
    r = _topk(input, k, dim, largest)
    if out is not None:
        return W.write_out_tuple(out, r, "topk")
    return r


def _topk(input, k, dim, largest):
    x = input
    d = _wrap_dim(dim, x.dim(), "topk") if x.dim() else 0
    n = x._shape[d] if x.dim() else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range (k={k}, size {n} along dim {d})")
    v, i = sort(x, d, descending=largest, stable=True)
    if x.dim() == 0:
        return RT.topk(v, i)
    return RT.topk(v.narrow(d, 0, k), i.narrow(d, 0, k))


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The ``k``-th smallest element along ``dim`` (1-based) and its index."""
    r = _kthvalue(input, k, dim, keepdim)
    if out is not None:
        return W.write_out_tuple(out, r, "kthvalue")
    return r


def _kthvalue(input, k, dim, keepdim):
    x = input
    d = _wrap_dim(dim, x.dim(), "kthvalue") if x.dim() else 0
    n = x._shape[d] if x.dim() else 1
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    v, i = sort(x, d, stable=True)
    if x.dim() == 0:
        return RT.kthvalue(v, i)
    v, i = v.narrow(d, k - 1, 1), i.narrow(d, k - 1, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return RT.kthvalue(v, i)


# -- unique, searchsorted, histograms -----------------------------------------------------------

def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """The distinct values (sorted), optionally with the inverse mapping and counts."""
    x = input.detach()
    if dim is not None:
        d = _wrap_dim(dim, x.dim(), "unique")
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
        inv = scatter(CR.zeros(n, dtype=_INT64, device=x._device), 0, perm, gid)
        res.append(inv.reshape(x._shape))
    if return_counts:
        pos = nonzero(flags).reshape(-1)
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
            _, o = sort(index_select(rows[:, j], 0, perm), stable=True)
            perm = index_select(perm, 0, o)
    srt = index_select(rows, 0, perm)
    first = CR.ones(min(n, 1), dtype=D.bool, device=x._device)
    flags = SH.cat([first, R.any(CMP.ne(srt[1:], srt[:-1]), 1)]) if n > 1 else first
    keep = nonzero(flags).reshape(-1)
    res = [index_select(x, d, index_select(perm, 0, keep))]
    if return_inverse:
        gid = R.cumsum(flags.to(_INT64), 0) - 1
        res.append(scatter(CR.zeros(n, dtype=_INT64, device=x._device), 0, perm, gid) if n else gid)
    if return_counts:
        ends = SH.cat([keep[1:], CR.tensor([n], device=x._device)]) if n else keep
        res.append(ends - keep)
    return res[0] if len(res) == 1 else tuple(res)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (or slices along ``dim``)."""
    if dim is not None:
        x = input.detach()
        return _unique_slices(x, _wrap_dim(dim, x.dim(), "unique_consecutive"), return_inverse, return_counts, True)
    flat = input.detach().reshape(-1)
    n = flat._shape[0]
    first = CR.ones(1, dtype=D.bool, device=input._device)
    flags = SH.cat([first, CMP.ne(flat[1:], flat[:-1])]) if n > 1 else first[:n]
    res = [flat[flags]]
    if return_inverse:
        res.append((R.cumsum(flags.to(_INT64), 0) - 1).reshape(input._shape))
    if return_counts:
        pos = nonzero(flags).reshape(-1)
        ends = SH.cat([pos[1:], CR.tensor([n], device=input._device)])
        res.append(ends - pos)
    return res[0] if len(res) == 1 else tuple(res)


def _searchsorted_decomp(seq, values, right):
    s = seq.unsqueeze(-2)          # [..., 1, n]
    v = values.unsqueeze(-1)       # [..., m, 1]
    cmp = CMP.le(s, v) if right else CMP.lt(s, v)
    return R.sum(cmp, -1)


_SEARCHSORTED = register_op("searchsorted", decomposition=_searchsorted_decomp, differentiable=False, group="index")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where ``input`` values would be inserted into the last dim of ``sorted_sequence``."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("side and right can't be set to opposites, got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        sorter = _index_arg(sorter, "searchsorted", seq._device, "sorter")
        if sorter._shape != seq._shape:
            raise RuntimeError(f"searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                               f"{list(seq._shape)} and got sorter tensor {list(sorter._shape)}")
        check_bounds(sorter, seq._shape[-1] if seq.dim() else 1, "searchsorted(): sorter", seq.dim() - 1, False)
        seq = gather(seq, -1, sorter)
    scalar = not isinstance(input, Tensor)
    vals = CR.tensor(input, dtype=seq._dtype, device=seq._device) if scalar else input
    if seq.dim() > 1:
        if vals.dim() != seq.dim() or vals._shape[:-1] != seq._shape[:-1]:
            raise RuntimeError(f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                               f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                               f"{list(seq._shape)} and input value tensor {list(vals._shape)}")
        r = dispatch(_SEARCHSORTED, seq._device, (seq, vals.to(seq._dtype), bool(right)), ())
    else:
        v = vals.reshape(1, -1) if vals.dim() else vals.reshape(1, 1)
        r = dispatch(_SEARCHSORTED, seq._device, (seq.reshape(1, -1), v.to(seq._dtype), bool(right)), ()).reshape(vals._shape)
    if out_int32:
        r = r.to(D.int32)
    return r if out is None else W.write_out(out, r, "searchsorted")


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """Bucket index of each value in ``boundaries`` (1-D, sorted)."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


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
        return scatter_add(z, 0, idx, CR.ones(n, dtype=_INT64, device=input._device))
    w = weights if weights._dtype is D.float32 else weights.to(D.float64)  # as PyTorch: float32 or double
    z = CR.zeros(size, dtype=w._dtype, device=input._device)
    return scatter_add(z, 0, idx, w)


def histc(input, bins: int = 100, min=0, max=0, *, out=None):
    """Histogram of values in ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    x = input.detach()
    if x._dtype.category != D._FLOAT:
        raise U.dtype_not_implemented("histogram_cpu", x._dtype)
    if bins <= 0:
        raise RuntimeError("bins must be > 0")
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(x.min().item()), float(x.max().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("max must be larger than min")
    flat = x.reshape(-1)
    keep = CMP.logical_and(CMP.ge(flat, lo), CMP.le(flat, hi))
    v = flat[keep]
    b = UN.floor((v - lo) * (bins / (hi - lo))).to(_INT64).clamp(0, bins - 1)
    z = CR.zeros(bins, dtype=x._dtype, device=x._device)
    r = scatter_add(z, 0, b, CR.ones(b._shape, dtype=x._dtype, device=x._device))
    return r if out is None else W.write_out(out, r, "histc")


# -- advanced indexing: index / index_put ---------------------------------------------------------

def _index_decomp(x, indices):
    """``x[indices]`` where ``indices`` holds an int64 tensor or None per leading dim."""
    adv = [i for i, t in enumerate(indices) if t is not None]
    idx = U.broadcast_all([indices[i]._shape for i in adv], "index")
    rest = [i for i in range(x.dim()) if i not in adv]
    xp = x.permute(adv + rest)
    sizes = [x._shape[i] for i in adv]
    lin = None
    mult = 1
    for i, s in zip(reversed(adv), reversed(sizes)):
        t = indices[i].expand(idx)
        lin = t * mult if lin is None else lin + t * mult
        mult *= s
    n = mult
    rshape = tuple(x._shape[i] for i in rest)
    flat = xp.reshape((n,) + rshape)
    r = index_select(flat, 0, lin.reshape(-1)).reshape(idx + rshape)
    consecutive = adv == list(range(adv[0], adv[0] + len(adv)))
    if consecutive and adv[0] > 0:
        k = len(idx)
        r = r.movedim(list(range(k)), list(range(adv[0], adv[0] + k)))
    return r


def _index_bw(ctx, g):
    x, indices = ctx.args
    from . import zeros
    z = zeros(x.shape, dtype=g._dtype, device=g._device)
    return (index_put(z, indices, g, accumulate=True),)


_INDEX = register_op("index", decomposition=_index_decomp, backward=_index_bw, saves=(), group="index")


def _index_put_decomp(x, indices, values, accumulate):
    adv = [i for i, t in enumerate(indices) if t is not None]
    idx = U.broadcast_all([indices[i]._shape for i in adv], "index_put")
    rest = [i for i in range(x.dim()) if i not in adv]
    sizes = [x._shape[i] for i in adv]
    lin = None
    mult = 1
    for i, s in zip(reversed(adv), reversed(sizes)):
        t = indices[i].expand(idx)
        lin = t * mult if lin is None else lin + t * mult
        mult *= s
    rshape = tuple(x._shape[i] for i in rest)
    consecutive = adv == list(range(adv[0], adv[0] + len(adv)))
    # values are laid out as x[indices] is: move the index dims first to match the flat layout
    target_shape = _index_result_shape(x._shape, adv, idx, consecutive)
    v = values.expand(target_shape) if values._shape != tuple(target_shape) else values
    if consecutive and adv[0] > 0:
        k = len(idx)
        v = v.movedim(list(range(adv[0], adv[0] + k)), list(range(k)))
    v = v.reshape((-1,) + rshape)
    out = x.permute(adv + rest).reshape((mult,) + rshape).clone()
    li = lin.reshape(-1)
    full_idx = li.reshape((-1,) + (1,) * len(rshape)).expand((li._shape[0],) + rshape)
    if accumulate:
        out = scatter_add(out, 0, full_idx, v)
    else:
        out = scatter(out, 0, full_idx, v)
    inv = [0] * x.dim()
    order = adv + rest
    for pos, dnum in enumerate(order):
        inv[dnum] = pos
    permuted_shape = tuple(x._shape[i] for i in order)
    return out.reshape(permuted_shape).permute(inv).contiguous()


def _index_result_shape(shape, adv, idx, consecutive):
    rest = [shape[i] for i in range(len(shape)) if i not in adv]
    if consecutive:
        before = [shape[i] for i in range(adv[0])]
        after = [shape[i] for i in range(adv[-1] + 1, len(shape))]
        return tuple(before) + tuple(idx) + tuple(after)
    return tuple(idx) + tuple(rest)


def _index_put_bw(ctx, g):
    x, indices, values, accumulate = ctx.args
    res = []
    if ctx.needs_input_grad[0]:  # written positions got no gradient to the old values
        res.append(g if accumulate else index_put(g, indices, _zeros_for(values, g)))
    else:
        res.append(None)
    if len(ctx.needs_input_grad) > 1:
        res.append(dispatch(_INDEX, g._device, (g, indices), (g,)) if ctx.needs_input_grad[1] else None)
    return tuple(res)


def _zeros_for(values, g):
    return CR.zeros(values.shape, dtype=g._dtype, device=g._device)


_INDEX_PUT = register_op("index_put", decomposition=_index_put_decomp, backward=_index_put_bw, saves=(), group="index")


def _norm_indices(x, indices, op):
    """Normalise a tuple of index tensors (or None) for x's leading dims: bool masks to long
    indices, negatives wrapped, bounds checked."""
    out = []
    d = 0
    for t in indices:
        if t is None:
            out.append(None)
            d += 1
            continue
        t = _as_index(t, op, x._device)
        if t._device is not x._device:
            if t._device._type == "cpu":
                t = t.to(x._device)
            else:
                U.common_device(op, x, t)
        if t._dtype is D.bool:
            if t.dim() == 0:
                raise IndexError(f"{op}: a 0-d bool index is only supported in x[...]")
            for j in range(t.dim()):
                if d + j >= x.dim() or t._shape[j] != x._shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(t._shape)} at index {j} does not match the shape of the "
                                     f"indexed tensor {list(x._shape)} at index {d + j}")
            nz = nonzero(t)
            for j in range(t.dim()):
                out.append(nz[:, j])
            d += t.dim()
            continue
        if d >= x.dim():
            raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
        out.append(check_bounds(t, x._shape[d], op, d, True))
        d += 1
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def _check_put_values(x, ind, values, op):
    """``values`` must broadcast to the shape of ``x[ind]`` (a RuntimeError as PyTorch, never a
    partial write)."""
    adv = [i for i, t in enumerate(ind) if t is not None]
    idx = U.broadcast_all([ind[i]._shape for i in adv], op)
    target = tuple(_index_result_shape(x._shape, adv, idx, adv == list(range(adv[0], adv[0] + len(adv)))))
    if values._shape == target:
        return values
    vs = values._shape
    while len(vs) > len(target) and vs[0] == 1:  # leading size-1 dims are dropped, as PyTorch
        vs = vs[1:]
    try:
        ok = U.broadcast_shapes(target, vs) == target
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"{op}: shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast "
                           f"to indexing result of shape {list(target)}")
    return values.reshape(vs) if vs != values._shape else values


def index_put(input, indices, values, accumulate: bool = False):
    """A copy of ``input`` with ``values`` at ``input[indices]`` (summed with ``accumulate``)."""
    ind = _norm_indices(input, tuple(indices), "index_put")
    values = _values_for(input, values, "index_put")
    if not ind:
        return input.clone().copy_(values) if not accumulate else input + values
    values = _check_put_values(input, ind, values, "index_put")
    return dispatch(_INDEX_PUT, input._device, (input, ind, values, bool(accumulate)), (input, values))


def index_put_(self, indices, values, accumulate: bool = False):
    """In-place :func:`index_put`."""
    ind = _norm_indices(self, tuple(indices), "index_put_")
    values = _values_for(self, values, "index_put_")
    if not ind:
        return self.copy_(values) if not accumulate else self.add_(values)
    values = _check_put_values(self, ind, values, "index_put_")
    return W.write_direct(_INDEX_PUT, self, self._device, (self, ind, values, bool(accumulate)), (self, values), 0)


def _values_for(x, values, op):
    if isinstance(values, Tensor):
        if values._dtype is not x._dtype:
            values = values.to(x._dtype)
        if values._device is not x._device:
            values = values.to(x._device)
        return values
    return CR.full((), values, dtype=x._dtype, device=x._device)


# -- __getitem__ / __setitem__ -------------------------------------------------------------------

def _list_as_tuple(key) -> bool:
    """PyTorch's (and old numpy's) rule: a short list holding a slice, None, Ellipsis, a sequence
    or a tensor is a tuple of indices, so ``x[[[0, 1], [1, 2]]]`` is ``x[[0, 1], [1, 2]]``."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    return any(k is None or k is Ellipsis or isinstance(k, (slice, list, tuple, Tensor, np.ndarray)) for k in key)


def _is_int_index(k) -> bool:
    return (isinstance(k, int) and not isinstance(k, bool)) or isinstance(k, np.integer)


def _parse(x, key):
    """Apply the basic part of ``key`` as views; return (view, advanced indices or None)."""
    if not isinstance(key, tuple):
        key = tuple(key) if _list_as_tuple(key) else (key,)
    consumed = 0
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, bool):
            continue
        if isinstance(k, Tensor) and k._dtype is D.bool:
            consumed += k.dim() if k.dim() else 0
        elif isinstance(k, np.ndarray) and k.dtype == np.bool_:
            consumed += k.ndim
        else:
            consumed += 1
    if consumed > x.dim():
        raise IndexError(f"too many indices for tensor of dimension {x.dim()}")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    v = x
    d = 0
    adv = {}
    for k in key:
        if k is None:
            v = V.unsqueeze(v, d)
            d += 1
        elif k is Ellipsis:
            d += x.dim() - consumed
        elif isinstance(k, bool):
            v = V.unsqueeze(v, d)
            if not k:
                v = V.slice_dim(v, d, 0, 0, 1)
            d += 1
        elif _is_int_index(k):
            v = V.select(v, d, int(k))
        elif isinstance(k, slice):
            step = 1 if k.step is None else _int_of(k.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            v = V.slice_dim(v, d, None if k.start is None else _int_of(k.start), None if k.stop is None else _int_of(k.stop), step)
            d += 1
        elif isinstance(k, (Tensor, list, np.ndarray, tuple)):
            t = k if isinstance(k, Tensor) else _as_index(np.asarray(k) if not isinstance(k, list) else k, "index", x._device)
            if t._dtype is D.bool and t.dim() == 0:
                v = V.unsqueeze(v, d)
                if not bool(t.item()):
                    v = V.slice_dim(v, d, 0, 0, 1)
                d += 1
                continue
            adv[d] = t
            d += t.dim() if t._dtype is D.bool else 1
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                             f"indices (got {type(k).__name__})")
    if not adv:
        return v, None
    n = max(adv) + 1
    ind = []
    dd = 0
    while dd < n:
        if dd in adv:
            t = adv[dd]
            ind.append(t)
            dd += t.dim() if t._dtype is D.bool else 1
        else:
            ind.append(None)
            dd += 1
    return v, tuple(ind)


def _int_of(v):
    if isinstance(v, Tensor):
        return int(v.item())
    return v.__index__()


def getitem(x: Tensor, key):
    """``x[key]``: views for ints, slices, None and Ellipsis; a copy with advanced indices."""
    if key.__class__ is int:
        if x.dim() == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                             "C++ to convert a 0-dim tensor to a number")
        return V.select(x, 0, key)
    v, ind = _parse(x, key)
    if ind is None:
        return v
    ind = _norm_indices(v, ind, "index")
    if not ind:
        return v
    return dispatch(_INDEX, v._device, (v, ind), (v,))


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` (broadcast; written through views, or ``index_put_`` for advanced keys)."""
    v, ind = _parse(x, key)
    if ind is None:
        if isinstance(value, Tensor):
            v.copy_(value)
        else:
            v.fill_(value)
        return
    ind = _norm_indices(v, ind, "index_put_")
    vals = _values_for(v, value, "index_put_")
    if not ind:
        v.copy_(vals)
        return
    vals = _check_put_values(v, ind, vals, "index_put_")
    W.write_direct(_INDEX_PUT, v, v._device, (v, ind, vals, False), (v, vals), 0)
