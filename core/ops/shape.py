"""Shape ops that copy: cat/stack and friends, flip, roll, rot90, repeat, repeat_interleave, tile,
tril/triu, meshgrid, broadcast_tensors."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Size, Tensor, _wrap_dim
from . import _args as U
from .declare import composite, defop
from . import comparison as CMP
from . import copy as CP
from . import creation as CR
from . import indexing as IX
from . import pointwise as PW
from . import views as V

__all__ = ["block_diag", "broadcast_shapes", "broadcast_tensors", "cat", "column_stack", "concat", "concatenate",
           "dstack", "flip", "fliplr", "flipud", "hstack", "meshgrid", "repeat", "repeat_interleave", "roll",
           "rot90", "row_stack", "stack", "tile", "tril", "tril_", "tril_indices", "triu", "triu_", "triu_indices",
           "vstack"]


def _cat_decomp(tensors, dim):
    t0 = tensors[0]
    shape = list(t0._shape)
    shape[dim] = 0
    for t in tensors:
        shape[dim] += t._shape[dim]
    out = t0._device._backend.empty(tuple(shape), t0._dtype, t0._device)
    off = 0
    copy = t0._device._kernels["copy_"]
    for t in tensors:
        n = t._shape[dim]
        if n:
            copy(V.narrow(out, dim, off, n), t)
        off += n
    return out


def _cat_bw(ctx, g):
    tensors, dim = ctx.args
    res = []
    off = 0
    for i, t in enumerate(tensors):
        n = t.shape[dim]
        res.append(g.narrow(dim, off, n) if ctx.needs_input_grad[i] else None)
        off += n
    return tuple(res)


@defop("cat", decomposition=_cat_decomp, backward=_cat_bw, saves=(), method=False, group="shape")
def cat(tensors, dim: int = 0):
    """Concatenate along an existing ``dim`` (dtypes promoted; empty 1-D tensors skipped)."""
    tensors = tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    # legacy empty 1-D tensors are skipped for the shape checks but take part in dtype promotion
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not dt:
            dt = D.promote_types(dt, t._dtype)
    keep = [t for t in tensors if not (t.dim() == 1 and t._shape[0] == 0)] or list(tensors)  # all empty: (0,)
    ref = keep[0]
    if ref.dim() == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, ref.dim(), "cat")
    dev = U.common_device("cat", *keep)
    for i, t in enumerate(keep):
        if t.dim() != ref.dim():
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.dim()} and {t.dim()}")
        for j in range(ref.dim()):
            if j != d and t._shape[j] != ref._shape[j]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref._shape[j]} but got size {t._shape[j]} for tensor number "
                                   f"{next(k for k, u in enumerate(tensors) if u is t)} in the list.")
    if any(t._requires_grad and t.dim() == 1 and not t._shape[0] for t in tensors):
        # a skipped empty tensor that requires grad joins as an empty piece, so that the result has its history
        empty = ref._shape[:d] + (0,) + ref._shape[d + 1:]
        keep = [t if not (t.dim() == 1 and not t._shape[0]) else t.reshape(empty)
                for t in tensors if t._requires_grad or not (t.dim() == 1 and not t._shape[0])]
    keep = [t if t._dtype is dt else CP.cast(t, dt) for t in keep]
    if len(keep) == 1:
        return None, keep[0].clone(), None
    return dev, (keep, d), tuple(keep)


concat = cat


@composite("concatenate", method=False)
def concatenate(tensors, dim: int = 0, *, axis=None):
    """Alias of :func:`cat`; ``axis`` (numpy's name) may stand for ``dim``."""
    return cat(tensors, dim if axis is None else axis)


def tensor_list(tensors, op: str, nonempty: bool = False) -> list:
    """``tensors`` (a list or tuple of tensors) as a list, else PyTorch's TypeError naming the
    argument or the element at fault (and its RuntimeError for none when ``nonempty``)."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            ty = type(t)
            name = ty.__name__ if ty.__module__ == "builtins" else f"{ty.__module__}.{ty.__qualname__}"
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {name}")
    if nonempty and not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return list(tensors)


@composite("stack", method=False)
def stack(tensors, dim: int = 0):
    """Join tensors of equal shape along a new ``dim``."""
    tensors = tensor_list(tensors, "stack", nonempty=True)
    s0 = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and "
                               f"{list(t._shape)} at entry {i}")
    d = _wrap_dim(dim, len(s0) + 1, "stack")
    return cat([t.unsqueeze(d) for t in tensors], d)


@composite("hstack", method=False)
def hstack(tensors):
    """Concatenate column-wise (along dim 1; along dim 0 for 1-D tensors)."""
    ts = tensor_list(tensors, "hstack", nonempty=True)
    ts = [t if t.dim() else t.reshape(1) for t in ts]
    return cat(ts, 0 if ts[0].dim() == 1 else 1)


@composite("vstack", method=False)
def vstack(tensors):
    """Concatenate row-wise (1-D tensors become rows)."""
    return cat([V.atleast_2d(t) for t in tensor_list(tensors, "vstack", nonempty=True)], 0)


row_stack = vstack


@composite("dstack", method=False)
def dstack(tensors):
    """Concatenate along a third dim (tensors are made at least 3-D)."""
    return cat([V.atleast_3d(t) for t in tensor_list(tensors, "dstack", nonempty=True)], 2)


@composite("column_stack", method=False)
def column_stack(tensors):
    """Stack 1-D tensors as columns (and concatenate 2-D ones) along dim 1."""
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensor_list(tensors, "column_stack", nonempty=True)]
    return cat(ts, 1)


def _flip_decomp(x, dims):
    r = x
    for d in dims:
        n = x._shape[d]
        idx = CR.arange(n - 1, -1, -1, device=x._device)
        r = IX.index_select(r, d, idx)
    return r


# Tensor.flip takes the dims as varargs too: ember._methods binds that form
@defop("flip", decomposition=_flip_decomp, backward=lambda ctx, g: (flip(g, ctx.args[1]),), saves=(), out=False,
       method=False, group="shape")
def flip(input, dims):
    """Reverse the order of elements along ``dims`` (a copy)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dd = U.dims_arg(dims, input.dim(), "flip") if dims else ()
    if not dd:
        return None, input.clone(), None
    return input._device, (input, dd), (input,)


@composite("fliplr", out=False)
def fliplr(input):
    """Reverse the columns (dim 1) of a tensor of at least 2 dims."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@composite("flipud", out=False)
def flipud(input):
    """Reverse the rows (dim 0)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


@composite("roll", out=False)
def roll(input, shifts, dims=None):
    """Shift elements cyclically along ``dims`` (or the flattened tensor)."""
    if dims is None:
        flat = input.reshape(-1)
        s = shifts if isinstance(shifts, int) else shifts[0]
        return roll(flat, s, 0).reshape(input._shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    r = input
    for s, d in zip(shifts, dims):
        d = _wrap_dim(d, input.dim(), "roll")
        n = r._shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            r = cat([r.narrow(d, n - s, s), r.narrow(d, 0, n - s)], d)
    return r if r is not input else input.clone()


@composite("rot90", out=False)
def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (_wrap_dim(d, input.dim(), "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    return input.clone()


@composite("repeat", out=False)
def repeat(input, *sizes):
    """Tile the tensor ``sizes`` times along each dimension (leading sizes add dims)."""
    sizes = U.size_arg(sizes, "repeat")
    if len(sizes) < input.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    x = input.reshape((1,) * (len(sizes) - input.dim()) + input._shape)
    inter, exp = [], []
    for r, s in zip(sizes, x._shape):
        inter += [1, s]
        exp += [r, s]
    out = x.reshape(inter).expand(exp)
    return out.reshape([r * s for r, s in zip(sizes, x._shape)])


# Tensor.tile takes the dims as varargs too: ember._methods binds that form
@composite("tile", out=False, method=False)
def tile(input, dims):
    """Repeat the tensor ``dims`` times per dim (missing leading dims count as 1)."""
    dims = tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return repeat(input, dims)


@composite("repeat_interleave", out=False)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int or a per-element tensor) along ``dim``."""
    if repeats is None:  # repeat_interleave(repeats_tensor): indices repeated by themselves
        reps = input
        return repeat_interleave(CR.arange(reps._shape[0], device=reps._device), reps, 0)
    x = input
    if dim is None:
        x = x.reshape(-1)
        dim = 0
    d = _wrap_dim(dim, x.dim(), "repeat_interleave")
    n = x._shape[d]
    if isinstance(repeats, int) or (isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.dim() == 0):
        r = int(repeats) if not isinstance(repeats, int) else repeats
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(x._shape)
        y = x.unsqueeze(d + 1)
        exp = list(y._shape)
        exp[d + 1] = r
        shape[d] = n * r
        return y.expand(exp).reshape(shape)
    reps = repeats.to(D.int64) if isinstance(repeats, Tensor) else CR.tensor(list(repeats), device=x._device)
    if reps.dim() != 1 or reps._shape[0] != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{reps._shape[0] if reps.dim() else 1} and input.size({d}) = {n}")
    if bool((reps < 0).any()):
        raise RuntimeError("repeats can not be negative")
    counts = reps.tolist()
    idx = [i for i, c in enumerate(counts) for _ in range(c)]
    return IX.index_select(x, d, CR.tensor(idx, dtype=D.int64, device=x._device))


def _tri_mask(x, diagonal, upper):
    r, c = x._shape[-2], x._shape[-1]
    rows = CR.arange(r, device=x._device).unsqueeze(1)
    cols = CR.arange(c, device=x._device).unsqueeze(0)
    d = cols - rows
    return CMP.ge(d, diagonal) if upper else CMP.le(d, diagonal)


def _triangle(input, diagonal, upper, op):
    if input.dim() < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    zero = False if input._dtype is D.bool else (0.0 if input._dtype.category == D._FLOAT else 0)
    return PW.where(_tri_mask(input, diagonal, upper), input, zero)


@composite("tril", inplace=True)
def tril(input, diagonal: int = 0):
    """The lower triangle (on and below ``diagonal``); the rest zero."""
    return _triangle(input, diagonal, False, "tril")


@composite("triu", inplace=True)
def triu(input, diagonal: int = 0):
    """The upper triangle (on and above ``diagonal``); the rest zero."""
    return _triangle(input, diagonal, True, "triu")


tril_, triu_ = tril.inplace, triu.inplace


def _tri_indices(row, col, offset, upper, dtype, device, op):
    """The [2, n] indices of a row x col matrix's triangle, computed per row at once: row i holds
    columns [0, i + offset] (lower) or [i + offset, col) (upper), clipped to the matrix."""
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{op}: {name} must be non-negative, got{v}")
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    if dt is not D.int64 and dt is not D.int32:
        raise U.dtype_not_implemented(op, dt)
    i = np.arange(row, dtype=np.int64)
    if upper:
        first = np.clip(i + offset, 0, col)
        counts = col - first
    else:
        first = np.zeros(row, dtype=np.int64)
        counts = np.clip(i + offset + 1, 0, col)
    starts = np.cumsum(counts) - counts
    n = int(counts.sum()) if row else 0
    rows = np.repeat(i, counts)
    cols = np.arange(n, dtype=np.int64) - np.repeat(starts - first, counts)
    return CR.from_host(np.stack([rows, cols]).astype(dt.np), dt, CR._resolve_device(device))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The [2, n] indices of the lower triangle of a row x col matrix (on and below ``offset``)."""
    return _tri_indices(row, col, offset, False, dtype, device, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The [2, n] indices of the upper triangle of a row x col matrix (on and above ``offset``)."""
    return _tri_indices(row, col, offset, True, dtype, device, "triu_indices")


@composite("meshgrid", out=False, method=False)
def meshgrid(*tensors, indexing: str = "ij"):
    """Coordinate grids from 1-D tensors (``indexing='ij'`` or ``'xy'``), as expanded views."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = [t.reshape(-1) if t.dim() == 0 else t for t in tensors]
    for t in ts:
        if t.dim() != 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t._shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        s = [1] * len(ts)
        s[i] = shape[i]
        out.append(t.reshape(s).expand(shape))
    if swap:  # computed for (y, x, ...) in 'ij' order: the grids come out with shape (len(y), len(x), ...)
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@composite("broadcast_tensors", out=False, method=False)
def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = U.broadcast_all([t._shape for t in tensors], "broadcast_tensors")
    return tuple(t.expand(shape) for t in tensors)


def broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to, as an ``ember.Size``."""
    return Size(U.broadcast_all([(s,) if isinstance(s, int) else tuple(s) for s in shapes], "broadcast_shapes"))


@composite("block_diag", out=False, method=False)
def block_diag(*tensors):
    """A block-diagonal matrix of the given tensors."""
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    ts = [t.reshape(1, -1) if t.dim() == 1 else t.reshape(1, 1) if t.dim() == 0 else t for t in tensors]
    R = sum(t._shape[0] for t in ts)
    C = sum(t._shape[1] for t in ts)
    dt = D.result_type(*tensors)  # 0-d tensors count less, as in PyTorch
    out = CR.zeros((R, C), dtype=dt, device=ts[0]._device)
    r = c = 0
    for t in ts:
        out[r:r + t._shape[0], c:c + t._shape[1]] = t
        r += t._shape[0]
        c += t._shape[1]
    return out
