"""Scatter and gather: gather, scatter / scatter_add / scatter_reduce, index_select, the index_*
family (add, copy, fill, reduce), take, put and take_along_dim; and the index-argument helpers
the other indexing modules share (:func:`check_bounds`).

gather, scatter_add, scatter, scatter_reduce and index_select are kernel ops (gather and
scatter_add are primitives; the others decompose into them); the rest are written in them.
"""
from __future__ import annotations

from ... import _dtype as D
from ..._hoststep import host_step
from ..._tensor import Tensor, _wrap_dim
from .. import _args as U
from .. import arithmetic as A
from .. import comparison as CMP
from .. import copy as CP
from .. import creation as CR
from .. import pointwise as PW
from .. import reduction as R
from ..declare import composite, defop
from . import advanced as AD

__all__ = ["gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
           "index_select", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_",
           "index_reduce", "index_reduce_", "take", "put", "put_", "take_along_dim"]

_INT64 = D.int64


# -- index arguments ----------------------------------------------------------------------------

def _as_index(idx, op, dev=None) -> Tensor:
    """An index given as a tensor, list or array, as an int64 or bool tensor (int32/16/8 are
    widened, byte masks become bool; floats are refused with IndexError)."""
    if isinstance(idx, Tensor):
        dt = idx._dtype
        if dt is _INT64 or dt is D.bool:
            return idx
        if dt is D.uint8:  # legacy byte masks
            return idx.to(D.bool)
        if dt is D.int32 or dt is D.int16 or dt is D.int8:
            return idx.to(_INT64)
        if dt is not _INT64:
            raise IndexError(f"{op}(): tensors used as indices must be long, int, byte or bool tensors "
                             f"(got {idx._dtype})")
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
    if index._device is not dev and index._device != dev:
        if index._device._type != "cpu" or index._shape:
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at least two "
                               f"devices, {dev} and {index._device}! (when checking argument '{what}': "
                               f"{U.desc(index)})")
        index = index.to(dev)  # a cpu 0-d index goes along, as PyTorch
    dt = index._dtype
    if dt is _INT64:
        return index
    if dt is D.int32 or dt is D.int16 or dt is D.int8 or dt is D.uint8:
        return index.to(_INT64)
    raise RuntimeError(f"{op}(): Expected dtype int32/int64 for {what}, got {dt.name} ({U.desc(index)})")


@host_step
def check_bounds(idx: Tensor, size: int, op: str, dim: int, allow_negative: bool) -> Tensor:
    """Wrap negative indices (when allowed) and refuse out-of-range ones with
    :class:`~ember.backend.IndexOutOfRangeError` (an IndexError and a RuntimeError). A backend
    declaring ``deferred_errors`` gets the negative indices wrapped on the device and no host-side
    check (which would wait for the device): its kernels report an index out of range."""
    if idx.numel() == 0:
        return idx
    if idx._device._backend.deferred_errors:
        return PW.where(CMP.lt(idx, 0), A.add(idx, size), idx) if allow_negative else idx
    lo = int(R.amin(idx).item())
    hi = int(R.amax(idx).item())
    lim_lo = -size if allow_negative else 0
    if lo < lim_lo or hi >= size:
        bad = hi if hi >= size else lo
        raise U.index_error(op, bad, dim, size)
    if lo < 0:
        idx = PW.where(CMP.lt(idx, 0), A.add(idx, size), idx)
    return idx


# -- gather -------------------------------------------------------------------------------------

def _gather_bw(ctx, g):
    x, d, index = ctx.args
    return (scatter_add(CR.zeros(x.shape, dtype=g._dtype, device=g._device), d, index, g),)


def _check_gather_shapes(x, d, index, op, src=None):
    xs, ixs = x._shape, index._shape
    nx, ni = len(xs), len(ixs)
    if ni != nx and not (ni <= 1 and nx <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(ixs)}, input {list(xs)})")
    for i in range(ni):
        if i != d and ixs[i] > (xs[i] if nx else 1):
            raise RuntimeError(f"{op}(): Size does not match at dimension {i} expected index {list(ixs)} to be "
                               f"smaller than self {list(xs)} apart from dimension {d}")
        if src is not None and ixs[i] > (src._shape[i] if src._shape else 1):
            raise RuntimeError(f"{op}(): Expected index {list(ixs)} to be smaller than self {list(xs)} "
                               f"apart from dimension {d} and to be smaller size than src {list(src._shape)}")


@defop("gather", backward=_gather_bw, saves=(), group="index")
def gather(input, dim, index, *, sparse_grad=False):
    """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (indices must be in range)."""
    x = input
    nd = x.dim()
    d = _wrap_dim(dim, nd, "gather") if nd else 0
    index = _index_arg(index, "gather", x._device)
    U.common_device("gather", x, index)
    _check_gather_shapes(x, d, index, "gather")
    if nd == 0:
        r = gather(x.reshape(1), 0, index.reshape(-1) if index.dim() else index.reshape(1))
        return None, r.reshape(input._shape if index.numel() == 1 and input.dim() == 0 else r._shape), None
    return x._device, (x, d, index), (x,)


# -- scatter, scatter_add, scatter_reduce ----------------------------------------------------------

def _src_region(src, index):
    if src._shape == index._shape:
        return src
    r = src
    for i, n in enumerate(index._shape):
        if r._shape[i] != n:
            r = r.narrow(i, 0, n)
    return r


def _scatter_prep(x, dim, index, src, op):
    nd = x.dim()
    d = _wrap_dim(dim, nd, op) if nd else 0
    index = _index_arg(index, op, x._device)
    if isinstance(src, Tensor):
        U.common_device(op, x, index, src)
        if src._dtype is not x._dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype "
                               f"(got {x._dtype.name} and {src._dtype.name})")
        _check_gather_shapes(x, d, index, op, src)
        src = _src_region(src, index)
    else:
        _check_gather_shapes(x, d, index, op)
    return d, index, src


def _scatter_add_bw(ctx, g):
    x, d, index, src = ctx.args
    res = []
    i = 0
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        res.append(g if ctx.needs_input_grad[0] else None)
        i = 1
    res.append(gather(g, d, index) if ctx.needs_input_grad[i] else None)
    return tuple(res)


@defop("scatter_add", backward=_scatter_add_bw, saves=(), result="first", inplace=True, out=False, group="index")
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (duplicates accumulate)."""
    d, index, src = _scatter_prep(input, dim, index, src, "scatter_add")
    return input._device, (input, d, index, src), (input, src)


scatter_add_ = scatter_add.inplace


def _scatter_decomp(x, d, index, src):
    if not isinstance(src, Tensor):
        src = CR.full(index._shape, src, dtype=x._dtype, device=x._device)
    hit = scatter_add(CR.zeros_like(x, dtype=D.int32), d, index, CR.ones_like(index, dtype=D.int32))
    vals = scatter_add(CR.zeros_like(x), d, index, src)
    if x._dtype.category == D._FLOAT:
        vals = vals / PW.where(CMP.gt(hit, 1), hit, 1).to(x._dtype)  # duplicate indices: unspecified in PyTorch
    return PW.where(CMP.gt(hit, 0), vals, x)


def _scatter_bw(ctx, g):
    x, d, index, src = ctx.args
    res = [g.scatter(d, index, 0.0) if ctx.needs_input_grad[0] else None]
    if isinstance(src, Tensor) or hasattr(src, "shape"):
        res.append(gather(g, d, index) if ctx.needs_input_grad[1] else None)
    return tuple(res)


@defop("scatter", decomposition=_scatter_decomp, backward=_scatter_bw, saves=(), result="first", inplace=True,
       out=False, group="index")
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
        return None, scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod"), None
    d, index, src = _scatter_prep(input, dim, index, src, "scatter")
    if not isinstance(src, Tensor):
        return input._device, (input, d, index, CP.scalar_for(src, input._dtype, "scatter")), (input,)
    return input._device, (input, d, index, src), (input, src)


scatter_ = scatter.inplace


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
    region = full  # written at the end; the formulas read x's same region (a saved view of full
    old = x        # would be modified by that write)
    for i in range(x.dim()):
        if i != d and region._shape[i] != acc._shape[i]:
            region = region.narrow(i, 0, acc._shape[i])
            old = old.narrow(i, 0, acc._shape[i])
    hit = cnt > 0
    if reduce == "sum":
        newv = acc + old if include_self else acc
    elif reduce == "prod":
        newv = acc * old if include_self else acc
    elif reduce == "mean":
        tot = acc + old if include_self else acc
        c = cnt + (1 if include_self else 0)
        newv = tot / c if x._dtype.category == D._FLOAT else tot // c
    elif reduce == "amax":
        newv = A.maximum(acc, old) if include_self else acc
    else:
        newv = A.minimum(acc, old) if include_self else acc
    region.copy_(PW.where(hit, newv.to(x._dtype), old))
    return full


# no result="first": the op has no backward node of its own (it is differentiated through its
# decomposition), which a direct write into a view would need; the in-place form writes back
@defop("scatter_reduce", decomposition=_scatter_reduce_decomp, inplace=True, out=False, group="index")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce ``src`` into ``input`` at ``index`` with 'sum', 'prod', 'mean', 'amax' or 'amin'."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, index, src = _scatter_prep(input, dim, index, src, "scatter_reduce")
    index = check_bounds(index, input._shape[d] if input.dim() else 1, "scatter_reduce", d, False)
    return input._device, (input, d, index, src, reduce, bool(include_self)), (input, src)


scatter_reduce_ = scatter_reduce.inplace


# -- index_select ---------------------------------------------------------------------------------

def _index_select_decomp(x, d, index):
    shape = [1] * x.dim()
    shape[d] = index._shape[0]
    full = list(x._shape)
    full[d] = index._shape[0]
    return gather(x, d, index.reshape(shape).expand(full))


def _index_select_bw(ctx, g):
    x, d, index = ctx.args
    return (index_add(CR.zeros(x.shape, dtype=g._dtype, device=g._device), d, index, g),)


@defop("index_select", decomposition=_index_select_decomp, backward=_index_select_bw, saves=(), group="index")
def index_select(input, dim, index):
    """The entries of ``input`` at ``index`` (1-D, indices in range) along ``dim``."""
    x = input
    index = _index_arg(index, "index_select", x._device)
    if len(index._shape) > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got {index.dim()}-D")
    nd = x.dim()
    if nd == 0:  # a scalar: one index, and a 0-d result
        _wrap_dim(dim, nd, "index_select")
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        index = check_bounds(index, 1, "index_select", 0, False)
        return None, index_select(x.reshape(1), 0, index.reshape(-1)).reshape(()), None
    d = _wrap_dim(dim, nd, "index_select")
    index = check_bounds(index.reshape(-1), x._shape[d], "index_select", d, False)
    return x._device, (x, d, index), (x,)


# -- index_add, index_copy, index_fill, index_reduce ----------------------------------------------

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


def _index_add_(self, dim, index, source, *, alpha=1):
    # scatter_add_ writes straight into self (a 0-d self through its 1-element view)
    d, index = _index_source_args(self, dim, index, source, "index_add_")
    src = _as_1d(source if alpha == 1 else source * alpha)
    scatter_add_(_as_1d(self), d, _expand_index(self, d, index, src._shape), src)
    return self


@composite("index_add", inplace=_index_add_, group="index")
def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``."""
    d, index = _index_source_args(input, dim, index, source, "index_add")
    src = _as_1d(source if alpha == 1 else source * alpha)
    return scatter_add(_as_1d(input), d, _expand_index(input, d, index, src._shape), src).reshape(input._shape)


index_add_ = index_add.inplace


def _index_copy_(self, dim, index, source):
    d, index = _index_source_args(self, dim, index, source, "index_copy_")
    src = _as_1d(source)
    scatter_(_as_1d(self), d, _expand_index(self, d, index, src._shape), src)
    return self


@composite("index_copy", inplace=_index_copy_, group="index")
def index_copy(input, dim, index, source):
    """A copy of ``input`` with ``source`` written at ``index`` along ``dim``."""
    d, index = _index_source_args(input, dim, index, source, "index_copy")
    src = _as_1d(source)
    return scatter(_as_1d(input), d, _expand_index(input, d, index, src._shape), src).reshape(input._shape)


index_copy_ = index_copy.inplace


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


def _index_fill_(self, dim, index, value):
    d, idx, value = _index_fill_args(self, dim, index, value, "index_fill_")
    scatter_(_as_1d(self), d, idx, value)
    return self


@composite("index_fill", inplace=_index_fill_, out=False, group="index")
def index_fill(input, dim, index, value):
    """A copy of ``input`` with ``value`` written at ``index`` (negative counts from the end) along ``dim``."""
    d, idx, value = _index_fill_args(input, dim, index, value, "index_fill")
    return scatter(_as_1d(input), d, idx, value=value).reshape(input._shape)


index_fill_ = index_fill.inplace


@composite("index_reduce", inplace=True, group="index")
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """Reduce rows of ``source`` into ``input`` at ``index`` along ``dim`` ('prod', 'mean', 'amax', 'amin')."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, index = _index_source_args(input, dim, index, source, "index_reduce")
    src = _as_1d(source)
    return scatter_reduce(_as_1d(input), d, _expand_index(input, d, index, src._shape), src, reduce,
                          include_self=include_self).reshape(input._shape)


index_reduce_ = index_reduce.inplace


# -- take, put, take_along_dim --------------------------------------------------------------------

@composite("take", group="index")
def take(input, index):
    """``input.flatten()[index]`` (negative indices count from the end)."""
    index = _index_arg(index, "take", input._device)
    flat = input.reshape(-1)
    idx = check_bounds(index, flat._shape[0], "take", 0, True)
    return index_select(flat, 0, idx.reshape(-1)).reshape(index._shape)


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


@composite("put", inplace=True, out=False, group="index")
def put(input, index, source, accumulate: bool = False):
    """A copy of ``input`` with ``source`` written at flat positions ``index`` (summed with
    ``accumulate``; negative indices count from the end)."""
    idx, src = _put_args(input, index, source, "put")
    return AD.index_put(input.reshape(-1), (idx,), src, accumulate).reshape(input._shape)


put_ = put.inplace


@composite("take_along_dim", group="index")
def take_along_dim(input, indices, dim=None):
    """``gather`` with broadcasting between ``input`` and ``indices`` (negative indices count
    from the end; PyTorch reads out-of-range ones unchecked, ember refuses them)."""
    indices = _index_arg(indices, "take_along_dim", input._device, "indices")
    if dim is None:
        return take(input, indices.reshape(-1))
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
    return gather(input.expand(xi), d, idx.expand(ii))
