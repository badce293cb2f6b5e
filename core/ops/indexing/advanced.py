"""Advanced indexing: ``Tensor.__getitem__`` / ``__setitem__`` (:func:`getitem`, :func:`setitem`):
parsing a key into views (ints, slices, None, Ellipsis) and index tensors, and the ops those
index tensors run: ``index`` (``x[indices]``) and ``index_put`` (``x[indices] = values``).

index and index_put are kernel ops that decompose into index_select and scatter/scatter_add.
Index tensors are bounds-checked (negative ones wrapped) before any kernel runs; bool masks
become the long indices of their True elements.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor
from .. import _args as U
from .. import creation as CR
from .. import views as V
from .. import writes as W
from ..declare import defop
from ..registry import dispatch
from . import masked as MK
from . import scatter_gather as SG

__all__ = ["index_put", "index_put_"]


# -- index tensors ----------------------------------------------------------------------------------

def _norm_indices(x, indices, op):
    """Normalise a tuple of index tensors (or None) for x's leading dims: bool masks to long
    indices, negatives wrapped, bounds checked."""
    out = []
    d = 0
    dev = x._device
    xs = x._shape
    nx = len(xs)
    for t in indices:
        if t is None:
            out.append(None)
            d += 1
            continue
        t = SG._as_index(t, op, dev)
        if t._device is not dev:
            if t._device._type == "cpu":
                t = t.to(dev)
            else:
                U.common_device(op, x, t)
        if t._dtype is D.bool:
            ts = t._shape
            if not ts:
                raise IndexError(f"{op}: a 0-d bool index is only supported in x[...]")
            for j in range(len(ts)):
                if d + j >= nx or ts[j] != xs[d + j]:
                    raise IndexError(f"The shape of the mask {list(ts)} at index {j} does not match the shape of the "
                                     f"indexed tensor {list(xs)} at index {d + j}")
            nz = MK.nonzero(t)
            for j in range(len(ts)):
                out.append(nz[:, j])
            d += len(ts)
            continue
        if d >= nx:
            raise IndexError(f"too many indices for tensor of dimension {nx}")
        out.append(SG.check_bounds(t, xs[d], op, d, True))
        d += 1
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


def _index_result_shape(shape, adv, idx, consecutive):
    rest = [shape[i] for i in range(len(shape)) if i not in adv]
    if consecutive:
        before = [shape[i] for i in range(adv[0])]
        after = [shape[i] for i in range(adv[-1] + 1, len(shape))]
        return tuple(before) + tuple(idx) + tuple(after)
    return tuple(idx) + tuple(rest)


# -- index: x[indices] --------------------------------------------------------------------------------

def _linear_index(x, indices, opname):
    """The advanced dims of ``x`` flattened into one: returns (adv, idx, rest, lin, n) where
    ``adv`` are the indexed dims, ``idx`` the broadcast index shape, ``rest`` the other dims,
    ``lin`` the row-major position of each indexed element among the ``n`` positions of the
    indexed dims (what indexes ``x.permute(adv + rest).reshape(n, *rest)``)."""
    adv = [i for i, t in enumerate(indices) if t is not None]
    idx = U.broadcast_all([indices[i]._shape for i in adv], opname)
    rest = [i for i in range(x.dim()) if i not in adv]
    lin = None
    n = 1
    for i in reversed(adv):
        t = indices[i].expand(idx)
        lin = t * n if lin is None else lin + t * n
        n *= x._shape[i]
    return adv, idx, rest, lin, n


def _index_decomp(x, indices):
    """``x[indices]`` where ``indices`` holds an int64 tensor or None per leading dim."""
    adv, idx, rest, lin, n = _linear_index(x, indices, "index")
    rshape = tuple(x._shape[i] for i in rest)
    flat = x.permute(adv + rest).reshape((n,) + rshape)
    r = SG.index_select(flat, 0, lin.reshape(-1)).reshape(idx + rshape)
    consecutive = adv == list(range(adv[0], adv[0] + len(adv)))
    if consecutive and adv[0] > 0:
        k = len(idx)
        r = r.movedim(list(range(k)), list(range(adv[0], adv[0] + k)))
    return r


def _index_bw(ctx, g):
    x, indices = ctx.args
    z = CR.zeros(x.shape, dtype=g._dtype, device=g._device)
    return (index_put(z, indices, g, accumulate=True),)


@defop("index", decomposition=_index_decomp, backward=_index_bw, saves=(), out=False, method=False, group="index")
def index(input, indices):
    """``input[indices]`` for a tuple of index tensors (or None) over its leading dims (what
    ``x[key]`` runs for the advanced part of ``key``)."""
    ind = _norm_indices(input, tuple(indices), "index")
    if not ind:
        return None, input, None
    return input._device, (input, ind), (input,)


# -- index_put: x[indices] = values ------------------------------------------------------------------

def _index_put_decomp(x, indices, values, accumulate):
    adv, idx, rest, lin, mult = _linear_index(x, indices, "index_put")
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
        out = SG.scatter_add(out, 0, full_idx, v)
    else:
        out = SG.scatter(out, 0, full_idx, v)
    order = adv + rest
    permuted_shape = tuple(x._shape[i] for i in order)
    return out.reshape(permuted_shape).permute(U.inverse_permutation(order)).contiguous()


def _index_put_bw(ctx, g):
    x, indices, values, accumulate = ctx.args
    res = []
    if ctx.needs_input_grad[0]:  # written positions got no gradient to the old values
        res.append(g if accumulate else index_put(g, indices, _zeros_for(values, g)))
    else:
        res.append(None)
    if len(ctx.needs_input_grad) > 1:
        # the indices are normalised already: the kernel op, without its front's checks
        res.append(dispatch(index.op, g._device, (g, indices), (g,)) if ctx.needs_input_grad[1] else None)
    return tuple(res)


def _zeros_for(values, g):
    return CR.zeros(values.shape, dtype=g._dtype, device=g._device)


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


def _values_for(x, values, op):
    if isinstance(values, Tensor):
        if values._dtype is not x._dtype:
            values = values.to(x._dtype)
        if values._device is not x._device:
            values = values.to(x._device)
        return values
    return CR.full((), values, dtype=x._dtype, device=x._device)


def _put_plan(x, indices, values, accumulate, op):
    """The plan of ``index_put`` (and of ``x[key] = values``, which names ``op`` index_put_)."""
    ind = _norm_indices(x, tuple(indices), op)
    values = _values_for(x, values, op)
    if not ind:
        return None, (x.clone().copy_(values) if not accumulate else x + values), None
    values = _check_put_values(x, ind, values, op)
    return x._device, (x, ind, values, bool(accumulate)), (x, values)


@defop("index_put", decomposition=_index_put_decomp, backward=_index_put_bw, saves=(), result="first", inplace=True,
       out=False, group="index")
def index_put(input, indices, values, accumulate: bool = False):
    """A copy of ``input`` with ``values`` at ``input[indices]`` (summed with ``accumulate``)."""
    return _put_plan(input, indices, values, accumulate, "index_put")


index_put_ = index_put.inplace


# -- __getitem__ / __setitem__ -------------------------------------------------------------------

def _list_as_tuple(key) -> bool:
    """PyTorch's (and old numpy's) rule: a short list holding a slice, None, Ellipsis, a sequence
    or a tensor is a tuple of indices, so ``x[[[0, 1], [1, 2]]]`` is ``x[[0, 1], [1, 2]]``."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    return any(k is None or k is Ellipsis or isinstance(k, (slice, list, tuple, range, Tensor, np.ndarray))
               for k in key)


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
    nx = x.dim()
    if consumed > nx:
        raise IndexError(f"too many indices for tensor of dimension {nx}")
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
            d += nx - consumed
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
            v = V.slice_dim(v, d, None if k.start is None else _int_of(k.start),
                            None if k.stop is None else _int_of(k.stop), step)
            d += 1
        elif isinstance(k, (Tensor, list, np.ndarray, tuple, range)):
            if k.__class__ is range:  # as PyTorch: a range is the list of its ints
                k = list(k)
            t = k if isinstance(k, Tensor) else SG._as_index(np.asarray(k) if not isinstance(k, list) else k, "index",
                                                             x._device)
            if t._dtype is D.bool and t.dim() == 0:
                v = V.unsqueeze(v, d)
                if not bool(t.item()):
                    v = V.slice_dim(v, d, 0, 0, 1)
                d += 1
                continue
            adv[d] = t
            d += t.dim() if t._dtype is D.bool else 1
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(k).__name__})")
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
    return index(v, ind)


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` (broadcast; written through views, or ``index_put_`` for advanced keys)."""
    v, ind = _parse(x, key)
    if ind is None:
        if isinstance(value, Tensor):
            v.copy_(value)
        else:
            v.fill_(value)
        return
    # the in-place index_put_ (its plan named for the user's x[key] = value)
    W.inplace(index_put.op, v, _put_plan(v, ind, value, False, "index_put_"), "index_put_")
