"""Creation ops: tensor, as_tensor, from_numpy, zeros/ones/empty/full (and ``_like``), arange,
linspace, logspace, eye, empty_strided, and the legacy ``Tensor(...)`` constructor."""
from __future__ import annotations

import contextlib
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


def _to_numpy_data(data, op: str, dtype=None):
    """Data (nested sequences of numbers and tensors, numpy arrays) as a numpy array. A numpy
    array converts unchecked, as PyTorch does; python numbers an integer ``dtype`` cannot hold
    raise (:func:`_check_fits`)."""
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
    if arr.dtype.kind in "US":
        raise TypeError(f"{op}(): new(): invalid data type 'str'")
    if _may_hold_big_ints(arr):
        arr = _big_ints(arr, data, dtype, op)
    if arr.dtype == object:
        raise TypeError(f"{op}(): could not infer dtype of the data ({type(data).__name__} of mixed or unsupported "
                        "element types, or a ragged nested sequence)")
    if dtype is not None:
        _check_fits(arr, dtype, op)
    return arr


_INT64_END = 2.0 ** 63


def _may_hold_big_ints(arr) -> bool:
    # numpy makes python ints past int64 uint64, object, or float64 when mixed with other ints
    if arr.dtype == np.uint64 or arr.dtype == object:
        return True
    if arr.dtype == np.float64 and arr.size:
        finite = np.abs(arr[np.isfinite(arr)])
        return bool(finite.size) and finite.max() >= _INT64_END
    return False


def _numbers(data):
    if isinstance(data, (list, tuple)):
        for x in data:
            yield from _numbers(x)
    elif isinstance(data, np.ndarray):
        yield from data.reshape(-1).tolist()
    else:
        yield data


def _big_ints(arr, data, dtype, op):
    """``arr`` when ``data``'s python ints all fit int64 or the tensor is not an integer one (a
    float among the data, or a floating or bool ``dtype``); else PyTorch's ValueError."""
    has_float = has_big = False
    for x in _numbers(data):
        if isinstance(x, (float, np.floating)):
            has_float = True
        elif isinstance(x, int) and not -_INT64_END <= x < _INT64_END:
            has_big = True
    fits = dtype.category != D._INT if dtype is not None else has_float  # a float or bool tensor takes them
    if has_big and not fits:
        raise ValueError(f"{op}(): Overflow when unpacking long long (a python int outside the int64 range)")
    if arr.dtype == object and has_big:
        try:
            return np.array(data, dtype=np.float64)
        except (ValueError, TypeError):
            return arr
    return arr


def _check_fits(arr, dtype, op) -> None:
    """PyTorch's refusal of python numbers integer ``dtype`` cannot hold: a float outside its range
    (NaN and infinities included), an integer outside it (uint8 takes -255..-1 as PyTorch does,
    wrapping them)."""
    if dtype.category != D._INT or not arr.size or arr.dtype.kind not in "iuf":
        return
    info = D.iinfo(dtype)
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            # as PyTorch: ``255.5`` overflows uint8 (above its max), as does anything past int64's
            bad = ~((arr >= info.min) & ((arr <= info.max) if info.max < 2 ** 53 else (arr < _INT64_END)))
    else:
        lo = -info.max if dtype is D.uint8 else info.min
        bad = (arr < lo) | (arr > info.max)
    if bad.any():
        v = arr[bad].reshape(-1)[0].item()
        raise RuntimeError(f"{op}(): value {v} cannot be converted to type {dtype.name} without overflow")


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
        return D.default_complex()
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
    dt = None if dtype is None else D.to_dtype(dtype)
    arr = _to_numpy_data(data, "tensor", dt)
    dt = _infer_dtype(arr, data) if dt is None else dt
    dev = _resolve_device(device)
    with np.errstate(over="ignore", invalid="ignore"):  # float overflow gives inf, as PyTorch
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
    arr = _to_numpy_data(data, "as_tensor", dt)
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


def _shape_args(size, op, size_kw=None):
    shape = U.size_arg(U.size_keyword(size, size_kw, op), op)
    U.check_sizes_nonneg(shape, op)
    return shape


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False,
          memory_format=None, layout=None) -> Tensor:
    """An uninitialised tensor of ``size``."""
    return _finish(_allocate(_shape_args(sizes, "empty", size), dtype, device, "empty"), requires_grad, out)


def _filled(shape, value, dtype, device, op):
    t = _allocate(shape, dtype, device, op)
    t._device._kernels["fill_"](t, CP.scalar_for(value, t._dtype, op))
    return t


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False) -> Tensor:
    """A tensor of zeros."""
    t = _filled(_shape_args(sizes, "zeros", size), 0, dtype, device, "zeros")
    return _finish(t, requires_grad, out)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    """A tensor of ones."""
    t = _filled(_shape_args(sizes, "ones", size), 1, dtype, device, "ones")
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
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless a bound is a float.
    For an integer dtype the bounds and step are first truncated to integers, as PyTorch does."""
    if end is None:
        start, end = 0, start
    start, end, step = _num(start), _num(end), _num(step)
    for v in (start, end, step):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange: unsupported range: {start} -> {end}")
    if dtype is None:
        dt = D.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else D.int64
    else:
        dt = D.to_dtype(dtype)
    integral = dt.category != D._FLOAT
    xstart, xend, xstep = (int(start), int(end), int(step)) if integral else (start, end, step)
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("arange: upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if xstep == 0 and dt is D.int64:  # PyTorch: other integer dtypes repeat start
        raise ValueError(f"arange: step must be nonzero (step {step} truncates to 0 for {dt.name})")
    if dt is D.int64:  # PyTorch counts in integers for int64 only
        sgn = 1 if xstep > 0 else -1
        n = _trunc_div(xend - xstart + xstep - sgn, xstep)
    else:
        size = math.ceil((end - start) / step)
        if not size < 2 ** 63:
            raise RuntimeError(f"arange: invalid size, possible overflow? ({start} -> {end} by {step})")
        n = max(0, size)
    with _host_memory("arange"):
        if integral:
            arr = np.arange(n, dtype=np.int64) * xstep + xstart
        else:
            arr = np.arange(n, dtype=np.float64) * step + start
        arr = arr.astype(dt.np)
    return _finish(from_host(arr, dt, _resolve_device(device)), requires_grad, out)


def _trunc_div(a: int, b: int) -> int:
    # C's integer division (toward zero)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@contextlib.contextmanager
def _host_memory(op):
    """PyTorch's RuntimeError for a result too large for memory (numpy raises MemoryError)."""
    try:
        yield
    except MemoryError as e:
        raise RuntimeError(f"{op}: can't allocate memory: {e}") from None


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Deprecated ``torch.range``: like arange but includes ``end``; float by default."""
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    arr = np.arange(n, dtype=np.float64) * step + start
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    return _finish(from_host(arr.astype(dt.np), dt, _resolve_device(device)), requires_grad)


def _spaced(start, end, steps: int, dt, op):
    """PyTorch's linspace values for ``dt`` (float64 for an integer dtype, else ``dt``): the first
    half counts up from ``start``, the second down from ``end``; an integer dtype truncates the
    bounds first (refusing ones it cannot hold) and computes the step in float64."""
    if steps == 0:
        return np.zeros(0)
    if dt.category == D._FLOAT:
        ct = np.dtype(np.float32) if dt is D.bfloat16 else dt.np
        s, e = ct.type(start), ct.type(end)
    else:
        ct = np.dtype(np.float64)
        s, e = (ct.type(_bound_to_int(v, dt, op)) for v in (start, end))
    if steps == 1:
        return np.array([s], dtype=ct)
    with np.errstate(over="ignore", invalid="ignore"):
        step = (e - s) / ct.type(steps - 1)
        half = steps // 2
        idx = np.arange(steps, dtype=np.int64)
        return np.concatenate([s + step * idx[:half].astype(ct), e - step * (steps - 1 - idx[half:]).astype(ct)])


def _bound_to_int(v, dt, op):
    # PyTorch's conversion of a bound: a float must fit; an int too, uint8 wrapping -255..-1
    if dt is D.bool:
        return int(bool(v))
    if isinstance(v, float):
        return U.float_to_int(v, dt, op)
    v = int(v)
    if dt is D.uint8 and -255 <= v < 0:
        return v + 256
    return U.int_in_range(v, dt, op)


def _from_spaced(vals, dt, device, requires_grad, out):
    if dt.category != D._FLOAT:
        vals = np.trunc(vals)
    with np.errstate(over="ignore", invalid="ignore"):
        vals = vals.astype(dt.np)
    return _finish(from_host(vals, dt, _resolve_device(device)), requires_grad, out)


def _steps_arg(steps, op):
    if isinstance(steps, Tensor):
        steps = steps.item()
    if isinstance(steps, bool) or not hasattr(steps, "__index__"):
        raise TypeError(f"{op}(): argument 'steps' must be int, not {type(steps).__name__}")
    steps = steps.__index__()
    if steps < 0:
        raise RuntimeError(f"{op}: number of steps must be non-negative, got {steps}")
    return steps


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    start, end = _num(start), _num(end)
    steps = _steps_arg(steps, "linspace")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    with _host_memory("linspace"):
        vals = _spaced(start, end, steps, dt, "linspace")
        return _from_spaced(vals, dt, device, requires_grad, out)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad=False,
             out=None, layout=None) -> Tensor:
    """``base ** linspace(start, end, steps)`` (for an integer dtype, PyTorch's integer linspace
    of the exponents, raised in float64 and truncated)."""
    start, end = _num(start), _num(end)
    steps = _steps_arg(steps, "logspace")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    with _host_memory("logspace"), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if dt.category == D._FLOAT:
            vals = np.power(float(base), np.linspace(start, end, steps, dtype=np.float64))
        elif steps == 1:  # PyTorch fills with base ** start, start untruncated
            vals = np.array([float(base) ** float(start)])
        else:
            vals = np.power(float(base), _spaced(start, end, steps, dt, "logspace"))
        return _from_spaced(vals, dt, device, requires_grad, out)


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
