"""Helpers for op front ends: argument normalisation and user-facing errors."""
from __future__ import annotations

import numbers

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim

_SCALARS = (int, float, bool)


from ..backend import IndexOutOfRangeError  # noqa: E402  (both IndexError and RuntimeError)


def index_error(op: str, bad: int, dim: int, size: int) -> IndexOutOfRangeError:
    return IndexOutOfRangeError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


def dtype_not_implemented(op: str, dtype, hint: str = "") -> NotImplementedError:
    """PyTorch's refusal of a dtype an op has no kernel for (``NotImplementedError``, which is a
    ``RuntimeError``)."""
    from .elementwise import _tname
    return NotImplementedError(f"\"{op}\" not implemented for '{_tname(dtype)}'" + (f": {hint}" if hint else ""))


def desc(t) -> str:
    """``float32[2, 3] on cpu`` for error messages."""
    if isinstance(t, Tensor):
        return f"{t._dtype.name}[{', '.join(str(s) for s in t._shape)}] on {t._device}"
    return f"{type(t).__name__} {t!r}"


def is_scalar(x) -> bool:
    return isinstance(x, _SCALARS) or isinstance(x, numbers.Number)


def broadcast_shapes(a: tuple, b: tuple, op: str = "") -> tuple:
    if a == b:
        return a
    la, lb = len(a), len(b)
    n = la if la > lb else lb
    out = []
    for i in range(n):
        da = a[i - n + la] if i - n + la >= 0 else 1
        db = b[i - n + lb] if i - n + lb >= 0 else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            _broadcast_error(a, b, op)
    return tuple(out)


def _broadcast_error(a, b, op):
    # name the innermost mismatching dim, as PyTorch does
    n = max(len(a), len(b))
    for i in range(n - 1, -1, -1):
        da = a[i - n + len(a)] if i - n + len(a) >= 0 else 1
        db = b[i - n + len(b)] if i - n + len(b) >= 0 else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(
                f"{op + ': ' if op else ''}The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                f"non-singleton dimension {i} (shapes {list(a)} and {list(b)})")


def broadcast_all(shapes, op: str = "") -> tuple:
    out = ()
    for s in shapes:
        out = broadcast_shapes(out, tuple(s), op)
    return out


def dims_arg(dim, ndim: int, op: str) -> tuple:
    """Normalise ``dim`` (None, int, or a sequence) to a sorted tuple of non-negative dims;
    None means every dim. A 0-d tensor accepts dim 0 and -1 and has no dims to reduce: ()."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        out = []
        for d in dim:
            d = _wrap_dim(d, ndim, op)
            if d in out:
                raise RuntimeError(f"{op}: dim {d} appears multiple times in the list of dims")
            out.append(d)
        return tuple(sorted(out)) if ndim else ()
    d = _wrap_dim(dim, ndim, op)
    return (d,) if ndim else ()


def wrap_dim(dim, ndim, op=""):
    return _wrap_dim(dim, ndim, op)


def size_arg(size, op: str) -> tuple:
    """Sizes given as ``f(2, 3)`` or ``f((2, 3))`` or ``f([2, 3])`` or an ``ember.Size``."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type {type(s).__name__}")
        s = s.__index__()
        out.append(s)
    return tuple(out)


def check_sizes_nonneg(shape, op):
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {s}: {list(shape)}")


def common_device(op: str, *tensors):
    """The one device of ``tensors``; cpu 0-d tensors go along with any device (as PyTorch)."""
    dev = None
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        d = t._device
        if dev is None or dev is d:
            dev = d
            continue
        if d == dev:
            continue
        if d._type == "cpu" and not t._shape:
            continue
        if dev._type == "cpu" and _cpu_scalar_seen(tensors, dev):
            dev = d
            continue
        raise RuntimeError(
            f"{op}: Expected all tensors to be on the same device, but found at least two devices, {dev} and {d}! "
            f"({', '.join(desc(x) for x in tensors if isinstance(x, Tensor))})")
    return dev


def _cpu_scalar_seen(tensors, dev):
    # dev came only from cpu 0-d tensors: the other device wins
    return all(not isinstance(t, Tensor) or t._device is not dev or not t._shape for t in tensors)


def sum_to_shape(g, shape, op: str = ""):
    """Sum ``g`` over broadcast dimensions so that it has ``shape``."""
    from . import sum as _sum
    shape = tuple(shape)
    gs = g._shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0:
        raise RuntimeError(f"{op}: gradient of shape {list(gs)} can't be reduced to shape {list(shape)}")
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gs[lead + i] != 1:
            dims.append(lead + i)
        elif s != gs[lead + i] and gs[lead + i] != 1:
            raise RuntimeError(f"{op}: gradient of shape {list(gs)} can't be reduced to shape {list(shape)}")
    if dims:
        g = _sum(g, tuple(dims), keepdim=True)
    if lead:
        g = g.reshape(shape)
    elif g._shape != shape:
        g = g.expand(shape)
    return g


def float_dtype_for(t_dtype):
    """The dtype float-only ops compute in: floats keep theirs, others get the default."""
    return t_dtype if t_dtype.category == D._FLOAT else D.get_default_dtype()


def check_index_dtype(index, op: str, what: str = "index"):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(index).__name__}")
    if index._dtype is not D.int64 and index._dtype is not D.int32:
        raise RuntimeError(f"{op}(): Expected dtype int64 for {what}, got {index._dtype}")
