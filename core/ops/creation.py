"""Creation ops: tensor, as_tensor, from_numpy, zeros/ones/empty/full (and ``_like``), arange,
linspace, logspace, eye, empty_strided, and the legacy ``Tensor(...)`` constructor."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _devices
from .. import _dtype as D
from .. import _state
from .._tensor import Tensor, _alias
from . import _args as U
from .writes import write_out
from . import copy as CP
from . import views as V

__all__ = ["arange", "as_tensor", "asarray", "empty", "empty_like", "empty_strided", "eye", "from_numpy", "full",
           "full_like", "linspace", "logspace", "ones", "ones_like", "scalar_tensor", "tensor", "zeros",
           "zeros_like", "get_default_device", "set_default_device"]

def set_default_device(device) -> None:
    """Device that factories use when ``device=`` is not given (``None``: cpu)."""
    _state.default_device.value = None if device is None else _devices.canonical(device)


def get_default_device():
    return _resolve_device(None)


def _resolve_device(device):
    if device is None:
        d = _state.default_device.current()
        return _devices.cpu() if d is None else _devices.canonical(d)
    return _devices.canonical(device)


def _finish(t: Tensor, requires_grad: bool, out: Tensor | None = None) -> Tensor:
    """A creation op's result: written into ``out`` when given, else ``t`` (requiring grad when
    asked)."""
    if out is not None:
        return write_out(out, t, "out")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _allocate(shape, dtype, device, op) -> Tensor:
    """An uninitialised tensor for a creation op (default dtype and device when None)."""
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = _resolve_device(device)
    dev._backend.check_dtype(dt, op)
    return dev._backend.empty(shape, dt, dev)


def from_host(arr: np.ndarray, dtype, dev) -> Tensor:
    be = dev._backend
    be.check_dtype(dtype)
    if arr.dtype != dtype.np:
        arr = arr.astype(dtype.np)
    return be.from_numpy(arr, dev)


def _to_numpy_data(data, op: str):
    """Python data (nested sequences of numbers and tensors, numpy arrays) as a numpy array."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, Tensor):
        return data.detach()._host()
    if isinstance(data, (list, tuple)) and _has_tensor(data):
        data = _untensor(data)
    try:
        arr = np.array(data)
    except (ValueError, OverflowError) as e:
        if isinstance(e, OverflowError):
            raise RuntimeError(f"{op}(): Overflow when unpacking long") from None
        raise ValueError(f"{op}(): {e}") from None
    if arr.dtype == object:
        raise TypeError(f"{op}(): could not infer dtype of the data ({type(data).__name__} of mixed or unsupported "
                        "element types, or a ragged nested sequence)")
    if arr.dtype.kind in "US":
        raise TypeError(f"{op}(): new(): invalid data type 'str'")
    return arr


def _has_tensor(seq) -> bool:
    for x in seq:
        if isinstance(x, Tensor):
            return True
        if isinstance(x, (list, tuple)) and _has_tensor(x):
            return True
    return False


def _untensor(seq):
    out = []
    for x in seq:
        if isinstance(x, Tensor):
            out.append(x.detach().tolist() if x.dim() else x.item())
        elif isinstance(x, (list, tuple)):
            out.append(_untensor(x))
        else:
            out.append(x)
    return out


def _infer_dtype(arr: np.ndarray, data):
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        return D.from_numpy_dtype(arr.dtype)
    k = arr.dtype.kind
    if k == "f":
        return D.get_default_dtype()
    if k == "b":
        return D.bool
    if k in "iu":
        return D.int64
    if k == "c":
        raise TypeError("complex tensors are not supported yet")
    return D.from_numpy_dtype(arr.dtype)


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested sequences, numpy arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() or "
                      "sourceTensor.clone().detach().requires_grad_(True), rather than ember.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        src = data.detach()
        out = src.to(device=_resolve_device(device) if device is not None else src._device,
                     dtype=src._dtype if dtype is None else D.to_dtype(dtype), copy=True)
        return _finish(out, requires_grad)
    arr = _to_numpy_data(data, "tensor")
    dt = _infer_dtype(arr, data) if dtype is None else D.to_dtype(dtype)
    dev = _resolve_device(device)
    arr = np.array(arr, dtype=dt.np, copy=True, order="C")
    return _finish(from_host(arr, dt, dev), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor` but shares memory with a tensor or a cpu numpy array when no
    conversion is needed."""
    dt = None if dtype is None else D.to_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(device=data._device if device is None else _devices.canonical(device),
                       dtype=data._dtype if dt is None else dt)
    dev = _resolve_device(device)
    if isinstance(data, np.ndarray) and dev._type == "cpu" and (dt is None or data.dtype == dt.np):
        try:
            return from_numpy(data)
        except (TypeError, ValueError):
            pass
    arr = _to_numpy_data(data, "as_tensor")
    dt = _infer_dtype(arr, data) if dt is None else dt
    if isinstance(data, np.ndarray) and arr.dtype == dt.np and dev._type != "cpu":
        return from_host(np.ascontiguousarray(arr), dt, dev)
    return from_host(np.array(arr, dtype=dt.np, copy=True, order="C"), dt, dev)


asarray = as_tensor


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A cpu tensor sharing memory with ``ndarray`` (writes show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = D.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative strides "
                         "are not currently supported. (You can probably work around this by making a copy of your "
                         "array  with array.copy().) ")
    if any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                         "to reallocate the memory.")
    dev = _devices.cpu()
    dev._backend.check_dtype(dt, "from_numpy")
    return dev._backend.from_numpy(ndarray, dev)


def _shape_args(size, op):
    shape = U.size_arg(size, op)
    U.check_sizes_nonneg(shape, op)
    return shape


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False, memory_format=None,
          layout=None) -> Tensor:
    """An uninitialised tensor of ``size``."""
    return _finish(_allocate(_shape_args(size, "empty"), dtype, device, "empty"), requires_grad, out)


def _filled(shape, value, dtype, device, op):
    t = _allocate(shape, dtype, device, op)
    t._device._kernels["fill_"](t, CP.scalar_for(value, t._dtype, op))
    return t


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False) -> Tensor:
    """A tensor of zeros."""
    t = _filled(_shape_args(size, "zeros"), 0, dtype, device, "zeros")
    return _finish(t, requires_grad, out)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False) -> Tensor:
    """A tensor of ones."""
    t = _filled(_shape_args(size, "ones"), 1, dtype, device, "ones")
    return _finish(t, requires_grad, out)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it when not given)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = D.scalar_dtype(fill_value)
    t = _filled(_shape_args((size,), "full"), fill_value, dtype, device, "full")
    return _finish(t, requires_grad, out)


def _like(input, dtype, device):
    return (input._dtype if dtype is None else D.to_dtype(dtype),
            input._device if device is None else _devices.canonical(device))


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _finish(dev._backend.empty(input._shape, dt, dev), requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _finish(_filled(input._shape, 0, dt, dev, "zeros_like"), requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return _finish(_filled(input._shape, 1, dt, dev, "ones_like"), requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None) -> Tensor:
    dt, dev = _like(input, dtype, device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _finish(_filled(input._shape, fill_value, dt, dev, "full_like"), requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False, pin_memory=False,
                  layout=None) -> Tensor:
    """An uninitialised tensor with explicit strides (its storage spans exactly what they reach)."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape ({len(stride)} vs {len(size)})")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = _resolve_device(device)
    n = 0 if 0 in size else 1 + sum((s - 1) * st for s, st in zip(size, stride))
    flat = dev._backend.empty((n,), dt, dev)
    t = _alias(flat, size, stride, flat._offset)
    t._base = None
    return _finish(t, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full((), s, dtype=D.get_default_dtype() if dtype is None else dtype, device=device,
                requires_grad=requires_grad)


def _num(x):
    if isinstance(x, Tensor):
        return x.item()
    return x


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a bound is a float."""
    if end is None:
        start, end = 0, start
    start, end, step = _num(start), _num(end), _num(step)
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange: unsupported range: {start} -> {end}")
    if dtype is None:
        dt = D.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else D.int64
    else:
        dt = D.to_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    if dt.category == D._INT and all(isinstance(v, int) for v in (start, end, step)):
        arr = np.arange(n, dtype=np.int64) * step + start
    else:
        arr = np.arange(n, dtype=np.float64) * step + start
    t = from_host(arr.astype(dt.np), dt, _resolve_device(device))
    return _finish(t, requires_grad, out)


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Deprecated ``torch.range``: like arange but includes ``end``; float by default."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    arr = np.arange(n, dtype=np.float64) * step + start
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    return _finish(from_host(arr.astype(dt.np), dt, _resolve_device(device)), requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    arr = np.linspace(start, end, steps, dtype=np.float64)
    if dt.category == D._INT:
        arr = np.trunc(arr)
    t = from_host(arr.astype(dt.np), dt, _resolve_device(device))
    return _finish(t, requires_grad, out)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    arr = np.power(float(base), np.linspace(_num(start), _num(end), steps, dtype=np.float64))
    return _finish(from_host(arr.astype(dt.np), dt, _resolve_device(device)), requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    """The ``n x m`` identity matrix."""
    if m is None:
        m = n
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got {n} and {m}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    t = _filled((n, m), 0, dt, device, "eye")
    if n and m:
        t._device._kernels["fill_"](V.diagonal(t), 1 if dt.category != D._FLOAT else 1.0)
    return _finish(t, requires_grad, out)



def legacy_new(cls, args, device, dtype):
    """``ember.Tensor(...)``: sizes, data, or another tensor; default dtype unless typed."""
    dt = D.to_dtype(dtype) if dtype is not None else getattr(cls, "_legacy_dtype", None) or D.get_default_dtype()
    dev = device if device is not None else getattr(cls, "_legacy_device", None)
    if len(args) == 0:
        t = empty(0, dtype=dt, device=dev)
    elif len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        t = src if src._dtype is dt else src.to(dt)
        t = _alias(t, t._shape, t._stride, t._offset)
        t._base = None
    elif all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        t = empty(*args, dtype=dt, device=dev)
    elif len(args) == 1 and isinstance(args[0], (tuple, list, np.ndarray)):
        t = tensor(args[0], dtype=dt, device=dev)
    elif len(args) == 1 and hasattr(args[0], "__len__"):
        t = tensor(list(args[0]), dtype=dt, device=dev)
    else:
        raise TypeError(f"new(): invalid arguments {tuple(type(a).__name__ for a in args)}; expected sizes (ints), a "
                        "sequence of numbers or a tensor")
    if cls is not Tensor and not getattr(cls, "_legacy_dtype", None):
        t.__class__ = cls
    return t
