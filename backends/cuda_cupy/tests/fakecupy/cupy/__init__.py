"""A test-only stand-in for cupy, built on numpy (ember-cuda-cupy's tests put its folder first on
``sys.path``). It is *not* a GPU simulator: it gives the backend the parts of cupy's API it uses,
with cupy's refusals where they catch real bugs:

* ``ndarray`` is its own class (not a numpy subclass): ``numpy.asarray(a)`` raises as cupy's does,
  ``isinstance(a, numpy.ndarray)`` is False, and cupy functions refuse numpy arrays (only
  ``asarray``/``array`` copy host data in); reductions return 0-d arrays, not scalars;
* no bfloat16 (cupy has none): an ml_dtypes bfloat16 dtype is refused;
* ``ufunc.at`` exists only for the ufuncs and dtypes cupy's atomics cover;
* an array belongs to the device current when it was made; an op mixing devices, or run while
  another device is current, raises as cupy does;
* memory comes from a pool with cupy's ``used_bytes``/``total_bytes``/``free_all_blocks`` and real
  host addresses as device pointers (the fake NCCL and cuRAND read and write through them).

``ElementwiseKernel``/``RawKernel`` can't run CUDA C here: calling one runs the numpy twin
registered under its name in :data:`TWINS` (tests register them), or raises.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as _np

from . import cuda  # noqa: F401  (cupy.cuda)
from .cuda import Device, _current_device, _check_devices, memory as _memory

__version__ = "14.0.0-fake"
__fake__ = True

TWINS: dict = {}  # kernel name -> python function over fake arrays (tests fill it)
inf, nan, pi, e, newaxis = _np.inf, _np.nan, _np.pi, _np.e, _np.newaxis
dtype, iinfo, finfo = _np.dtype, _np.iinfo, _np.finfo
bool_ = _np.bool_
for _n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
           "float64", "complex64", "complex128", "intp"):
    globals()[_n] = getattr(_np, _n)

_AT_UFUNCS = {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"}
_AT_ADD_DTYPES = {_np.dtype(t) for t in ("float16", "float32", "float64", "int32", "int64", "uint32", "uint64")}


def _np_dtype(dt):
    if dt is None:
        return None
    d = _np.dtype(dt)
    if d.name == "bfloat16" or d.kind == "V":
        raise TypeError(f"Unsupported type {d}")  # cupy has no bfloat16
    return d


class _Flags:
    def __init__(self, a):
        self.c_contiguous = a.flags.c_contiguous
        self.f_contiguous = a.flags.f_contiguous
        self.owndata = a.base is None

    def __getitem__(self, k):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous}[k]


class ndarray:
    """A device array: numpy memory owned by a fake allocation on one device."""

    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        dt = _np_dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if memptr is None:
            n = int(_np.prod(shape, dtype=_np.int64)) * dt.itemsize
            memptr = _memory.alloc(n)
        buf = memptr.mem.buffer
        self._a = _np.ndarray(shape, dt, buf, memptr.offset, strides)
        self._mem = memptr.mem
        self.device = memptr.mem.device

    @classmethod
    def _of(cls, a, mem, device=None):
        self = object.__new__(cls)
        self._a = a
        self._mem = mem
        self.device = mem.device if mem is not None else (device or _current_device())
        return self

    # -- metadata
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    T = property(lambda self: self.transpose())

    @property
    def base(self):
        return None

    @property
    def data(self):
        mem = self._mem
        return _memory.MemoryPointer(mem, self._a.ctypes.data - mem.ptr)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._a.ctypes.data, False),
                "strides": self.strides, "version": 3}

    def __len__(self):
        return len(self._a)

    def __repr__(self):
        return f"fakecupy.array({self._a!r})"

    # -- host transfers
    def get(self, stream=None, order="C", out=None, blocking=True):
        r = _np.array(self._a, copy=True)
        if out is not None:
            out[...] = r
            return out
        return r

    def set(self, arr, stream=None):
        if not isinstance(arr, _np.ndarray):
            raise TypeError("set() needs a numpy array")
        if arr.shape != self.shape:
            raise ValueError("Shape mismatch")
        self._a[...] = arr

    def __array__(self, *a, **k):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def tolist(self):
        return self._a.tolist()

    def item(self):
        return self._a.item()

    def __bool__(self):
        return bool(self._a)

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __index__(self):
        return self._a.__index__()

    # -- methods that become functions below
    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        return _call(lambda a: a.astype(_np_dtype(dtype), order=order, copy=copy), (self,), {})

    def copy(self, order="C"):
        return _call(lambda a: a.copy(order=order), (self,), {})

    def view(self, dtype=None):
        return _call(lambda a: a.view(_np_dtype(dtype)) if dtype is not None else a.view(), (self,), {})

    def fill(self, value):
        _check_devices((self,))
        self._a.fill(value)

    def __getitem__(self, key):
        return _call(lambda a, k: a[k], (self, key), {})

    def __setitem__(self, key, value):
        if isinstance(value, _np.ndarray) and value.ndim:
            raise TypeError("fake cupy: setitem with a numpy array value (use cupy.asarray first)")
        _check_devices((self, key, value))
        self._a[_unwrap(key)] = _unwrap(value)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def _unwrap(x):
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    return x


def _refuse_numpy(args, kwargs, allow=False):
    if allow:
        return
    for v in list(args) + list(kwargs.values()):
        vs = v if isinstance(v, (list, tuple)) else (v,)
        for w in vs:
            if isinstance(w, _np.ndarray) and not isinstance(w, _np.generic):
                raise TypeError(f"Unsupported type {type(w)}")


def _wrap_result(r, inputs):
    if isinstance(r, tuple):
        return tuple(_wrap_result(x, inputs) for x in r)
    if isinstance(r, list):
        return [_wrap_result(x, inputs) for x in r]
    if isinstance(r, _np.generic):
        r = _np.asarray(r)
    if isinstance(r, _np.ndarray):
        _np_dtype(r.dtype)
        for x in inputs:  # a view of an input keeps that input's allocation
            if isinstance(x, ndarray) and _np.may_share_memory(r, x._a):
                return ndarray._of(r, x._mem)
        return ndarray._of(r, _memory.adopt(r))
    return r


def _flat_inputs(args, kwargs):
    out = []
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, ndarray):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(w for w in v if isinstance(w, ndarray))
    return out


def _call(fn, args, kwargs, allow_numpy=False):
    _refuse_numpy(args, kwargs, allow_numpy)
    ins = _flat_inputs(args, kwargs)
    _check_devices(ins)
    for k in ("dtype",):
        if k in kwargs:
            kwargs[k] = _np_dtype(kwargs[k])
    r = fn(*_unwrap(tuple(args)), **{k: _unwrap(v) for k, v in kwargs.items()})
    out = kwargs.get("out")
    if isinstance(out, ndarray):
        return out
    return _wrap_result(r, ins)


class ufunc:
    def __init__(self, f):
        self._f = f
        self.__name__ = f.__name__
        self.nin, self.nout = f.nin, f.nout

    def __call__(self, *args, **kwargs):
        return _call(self._f, args, kwargs)

    def reduce(self, *args, **kwargs):
        return _call(self._f.reduce, args, kwargs)

    def at(self, a, indices, b=None):
        if self.__name__ not in _AT_UFUNCS:
            raise NotImplementedError(f"fake cupy: {self.__name__}.at is not supported (as in cupy)")
        if self.__name__ == "add" and a.dtype not in _AT_ADD_DTYPES:
            raise TypeError(f"fake cupy: add.at does not support {a.dtype} (cupy's atomics don't)")
        _check_devices((a, indices, b))
        self._f.at(a._a, _unwrap(indices), _unwrap(b))


_NOT_FAKED = {"lib", "random", "linalg", "fft", "testing", "ma", "polynomial", "ctypeslib", "char", "rec"}
_HOST_IN = {"asarray", "array", "asanyarray", "ascontiguousarray"}
_cache: dict = {}


def __getattr__(name):
    f = _cache.get(name)
    if f is not None:
        return f
    target = getattr(_np, name, None)
    if target is None or name.startswith("_") or name in _NOT_FAKED:
        raise AttributeError(f"module 'cupy' (fake) has no attribute {name!r}")
    if isinstance(target, _np.ufunc):
        f = ufunc(target)
    elif isinstance(target, type):
        return target
    elif callable(target):
        def f(*args, _t=target, _name=name, **kwargs):
            return _call(_t, args, kwargs, allow_numpy=_name in _HOST_IN)
        f.__name__ = name
    else:
        return target
    _cache[name] = f
    return f


def _binop(name, reflected=False):
    def op(self, other):
        if isinstance(other, _np.ndarray) and other.ndim:
            raise TypeError(f"Unsupported type {type(other)}")
        f = getattr(_np, name)
        return _call(lambda a, b: f(b, a) if reflected else f(a, b), (self, other), {})
    return op


def _iop(name):
    def op(self, other):
        f = getattr(_np, name)
        _call(lambda a, b: f(a, b, out=a), (self, other), {})
        return self
    return op


for _nm, _f in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift"),
                ("matmul", "matmul")):
    setattr(ndarray, f"__{_nm}__", _binop(_f))
    setattr(ndarray, f"__r{_nm}__", _binop(_f, True))
    setattr(ndarray, f"__i{_nm}__", _iop(_f))
for _nm, _f in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                ("ge", "greater_equal")):
    setattr(ndarray, f"__{_nm}__", _binop(_f))
ndarray.__neg__ = lambda self: __getattr__("negative")(self)
ndarray.__abs__ = lambda self: __getattr__("absolute")(self)
ndarray.__invert__ = lambda self: __getattr__("invert")(self)
ndarray.__hash__ = None
for _m in ("sum", "prod", "max", "min", "argmax", "argmin", "mean", "var", "std", "any", "all", "cumsum", "cumprod",
           "reshape", "ravel", "transpose", "swapaxes", "squeeze", "flatten", "nonzero", "clip", "round", "dot",
           "argsort", "sort", "take", "repeat", "diagonal", "conj", "trace"):
    def _meth(self, *args, _m=_m, **kwargs):
        if _m == "sort":
            _call(lambda a, *x, **k: a.sort(*x, **k), (self,) + args, kwargs)
            return None
        return _call(lambda a, *x, **k: getattr(a, _m)(*x, **k), (self,) + args, kwargs)
    setattr(ndarray, _m, _meth)


def empty(shape, dtype=float, order="C"):
    """From the memory pool (recycled blocks are not zeroed), as cupy's."""
    return ndarray(shape, dtype)


def empty_like(a, dtype=None, order="K", shape=None):
    return ndarray(a.shape if shape is None else shape, a.dtype if dtype is None else dtype)


def get_array_module(*args):
    return __import__(__name__)


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    return a.get(out=out) if isinstance(a, ndarray) else _np.asarray(a)


def get_default_memory_pool():
    return _memory.default_pool


def get_default_pinned_memory_pool():
    return cuda.pinned_memory.default_pool


class _FakeKernel:
    def __init__(self, *args, name=None, **kwargs):
        self.name = name or (args[-1] if args and isinstance(args[-1], str) else None)
        self.args, self.kwargs = args, kwargs

    def __call__(self, *args, **kwargs):
        twin = TWINS.get(self.name)
        if twin is None:
            raise NotImplementedError(f"fake cupy can't run CUDA kernel {self.name!r} (no numpy twin registered)")
        return twin(*args, **kwargs)


class ElementwiseKernel(_FakeKernel):
    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        super().__init__(in_params, out_params, operation, name=name, **kwargs)


class ReductionKernel(_FakeKernel):
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 **kwargs):
        super().__init__(name=name)


class RawKernel(_FakeKernel):
    def __init__(self, code, name, **kwargs):
        super().__init__(name=name)


class RawModule:
    def __init__(self, code=None, **kwargs):
        self.code = code

    def get_function(self, name):
        return RawKernel(self.code, name)


import cupy.lib.stride_tricks  # noqa: E402,F401  (a submodule, not numpy.lib)
