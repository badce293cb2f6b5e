"""``ember.Tensor``: storage + shape + strides (in elements) + storage offset + dtype, plus
autograd fields. This module holds what needs nothing above the Tensor class: the metadata, host
conversions, dtype casts and the autograd fields; :mod:`ember._methods` binds the rest (the op
methods and operators, ``requires_grad``/``grad_fn``/hooks/``backward``, ``to``, ``repr``,
pickling, DLPack)."""
from __future__ import annotations

import math
import warnings
import weakref

import numpy as np

from . import _dtype as D
from . import _plugins
from . import _state
from ._device import device as _device_cls
from ._layout import SparseParts, sparse_coo, strided
from ._storage import UntypedStorage as _Storage

_new = object.__new__
_grad = _state.grad


class Tensor:
    """A multi-dimensional array on one device, with autograd.

    ``ember.Tensor(2, 3)`` and ``ember.Tensor([1, 2])`` are the legacy constructors (default
    dtype); prefer :func:`ember.tensor`, :func:`ember.zeros` and friends.
    """

    __slots__ = (
        "_storage", "_shape", "_stride", "_offset", "_dtype", "_device", "_native", "_version",
        "_base", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_retains_grad", "_hooks",
        "_accum", "_fn_version", "__dict__", "__weakref__",
    )

    # -- metadata -------------------------------------------------------------------------
    @property
    def shape(self) -> "Size":
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape as ``ember.Size``, or the length of one dimension."""
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, len(self._shape), "size")]

    def stride(self, dim: int | None = None):
        """Strides in elements, or the stride of one dimension."""
        if dim is None:
            return self._stride
        return self._stride[_wrap_dim(dim, len(self._shape), "stride")]

    def dim(self) -> int:
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return math.prod(self._shape)

    nelement = numel

    def storage_offset(self) -> int:
        return self._offset

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._dtype.itemsize

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device._type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device._type == "cpu"

    # PyTorch's predicates for the device types ember has no backend for: each is True only on a
    # tensor of that type (a plugin could serve one)
    is_meta = property(lambda self: self._device._type == "meta", doc="True on a ``meta`` tensor.")
    is_xpu = property(lambda self: self._device._type == "xpu", doc="True on an ``xpu`` tensor.")
    is_mps = property(lambda self: self._device._type == "mps", doc="True on an ``mps`` tensor.")
    is_ipu = property(lambda self: self._device._type == "ipu", doc="True on an ``ipu`` tensor.")
    is_maia = property(lambda self: self._device._type == "maia", doc="True on a ``maia`` tensor.")
    is_mtia = property(lambda self: self._device._type == "mtia", doc="True on an ``mtia`` tensor.")
    is_vulkan = property(lambda self: self._device._type == "vulkan", doc="True on a ``vulkan`` tensor.")
    is_xla = property(lambda self: self._device._type == "xla", doc="True on an ``xla`` tensor.")

    # ember's tensors are strided or sparse COO (is_sparse, below): never CSR, quantized,
    # mkldnn-laid-out or nested
    is_sparse_csr = property(lambda self: False, doc="False: ember has no compressed sparse layouts.")
    is_mkldnn = property(lambda self: False, doc="False: ember has no mkldnn layout.")
    is_quantized = property(lambda self: False, doc="False: ember has no quantized dtypes.")
    is_nested = property(lambda self: False, doc="False: ember has no nested tensors.")

    def is_conj(self) -> bool:
        """False: ember conjugates eagerly (``conj()`` returns a new tensor), so no tensor is a
        lazily conjugated view (see docs/complex.md)."""
        return False

    def is_neg(self) -> bool:
        """False: ember has no lazily negated views."""
        return False

    def is_distributed(self) -> bool:
        return False

    def is_same_size(self, other) -> bool:
        """Whether ``other`` has this tensor's shape."""
        if not isinstance(other, Tensor):
            raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        return self._shape == other._shape

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None or not self._requires_grad

    @property
    def layout(self):
        """``ember.strided``, or ``ember.sparse_coo`` for a sparse COO tensor."""
        return sparse_coo if self._storage.__class__ is SparseParts else strided

    @property
    def is_sparse(self) -> bool:
        return self._storage.__class__ is SparseParts

    def is_floating_point(self) -> bool:
        return self._dtype.category == D._FLOAT

    def is_complex(self) -> bool:
        return self._dtype.category == D._COMPLEX

    def is_signed(self) -> bool:
        return self._dtype.is_signed

    def get_device(self) -> int:
        """The device index, or -1 for cpu tensors (as PyTorch)."""
        return -1 if self._device._index is None else self._device._index

    def untyped_storage(self):
        if self._storage.__class__ is SparseParts:
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        return self._storage

    def storage(self):
        return self.untyped_storage()

    def data_ptr(self) -> int:
        """Address of the first element (storage address + offset in bytes)."""
        return self._device._backend.data_ptr(self._storage) + self._offset * self._dtype.itemsize

    @property
    def version(self) -> int:
        return self._version[0]

    def is_contiguous(self, memory_format=None) -> bool:
        """True when the strides are row-major; size-1 dimensions are ignored."""
        expected = 1
        shape, stride = self._shape, self._stride
        for i in range(len(shape) - 1, -1, -1):
            s = shape[i]
            if s == 0:
                return True
            if s != 1:
                if stride[i] != expected:
                    return False
                expected *= s
        return True

    def is_set_to(self, other: "Tensor") -> bool:
        return (self._storage is other._storage and self._offset == other._offset
                and self._shape == other._shape and self._stride == other._stride)

    def _is_view(self) -> bool:
        return self._base is not None

    # -- autograd attributes ----------------------------------------------------------------
    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place and return ``self``. On a non-leaf (which requires grad)
        True is a no-op, as PyTorch's (the ``requires_grad`` attribute refuses it)."""
        if requires_grad and self._grad_fn is not None and self._requires_grad:
            return self
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        if self._storage.__class__ is SparseParts:
            return self._storage.grad_of(self)
        if self._grad_fn is not None and self._requires_grad and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._device != self._device:
                raise RuntimeError(f"assigned grad has data located on {value._device} different from the tensor on "
                                   f"{self._device}")
            if value._dtype is not self._dtype:
                raise RuntimeError(f"assigned grad has data of type {value._dtype} different from the type of the "
                                   f"tensor {self._dtype}")
            if value._shape != self._shape:
                raise RuntimeError(f"assigned grad has data of a different size: {list(value._shape)} vs the tensor's "
                                   f"{list(self._shape)}")
        if self._storage.__class__ is SparseParts:
            self._storage.set_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self.grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during backward."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        fn = self.grad_fn
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    @property
    def data(self) -> "Tensor":
        """A tensor sharing storage but not history or version counter (unsafe; prefer ``detach()``)."""
        t = _alias(self, self._shape, self._stride, self._offset)
        t._version = [0]
        t._base = None
        return t

    @data.setter
    def data(self, other: "Tensor") -> None:
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(other).__name__}")
        if other._device is not self._device and other._device != self._device:
            pass  # PyTorch allows moving data across devices this way
        self._storage = other._storage
        self._shape = other._shape
        self._stride = other._stride
        self._offset = other._offset
        self._dtype = other._dtype
        self._device = other._device
        self._native = None

    def detach(self) -> "Tensor":
        """A tensor sharing storage and version counter, without history."""
        if self._storage.__class__ is SparseParts:
            return self._storage.detached(self)
        t = _alias(self, self._shape, self._stride, self._offset)
        t._base = None  # not a view for autograd: in-place ops on it never rebase self's graph
        return t

    def detach_(self) -> "Tensor":
        """Detach this tensor from its graph in place (it becomes a leaf)."""
        if self._base is not None and self._base._requires_grad and self._grad_fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    # -- conversions --------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A numpy array sharing memory with this cpu tensor (``force=True`` copies from any device)."""
        if force:
            return self._device._backend.to_numpy(self.detach()).copy()
        if self._storage.__class__ is SparseParts:
            raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")
        if self._device._type != "cpu":
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first.")
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._device._backend.to_numpy(self)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def _host(self) -> np.ndarray:
        """Values on the host (numpy), no autograd checks; may share memory."""
        return self._device._backend.to_numpy(self)

    def item(self):
        """The value of a one-element tensor as a python number."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        return self._host().reshape(()).item() if self._dtype is not D.bfloat16 else float(self._host().reshape(()))

    def tolist(self):
        """The values as (nested) python lists of numbers."""
        a = self._host()
        if self._dtype is D.bfloat16 or self._dtype is D.float16:
            a = a.astype(np.float64) if self._dtype is D.bfloat16 else a
        return a.tolist()

    def __float__(self):
        v = self.item()
        if isinstance(v, complex):
            raise RuntimeError("value cannot be converted to type double without overflow")
        return float(v)

    def __int__(self):
        v = self.item()
        if isinstance(v, complex):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return int(v)

    def __bool__(self):
        n = self.numel()
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __index__(self):
        if self._dtype.category > D._INT or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    def __contains__(self, element):
        if isinstance(element, (Tensor, int, float, bool)):
            return bool((self == element).any().item())
        raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element).__name__}.")

    def __format__(self, spec):
        if not self._shape:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    # -- devices and dtypes ---------------------------------------------------------------------
    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(dtype=other._dtype, device=other._device)

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> "Tensor":
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device, non_blocking=non_blocking)

    def opencl(self, device=None) -> "Tensor":
        return self.to("opencl" if device is None else f"opencl:{device}" if isinstance(device, int) else device)

    def float(self):
        return self.to(D.float32)

    def double(self):
        return self.to(D.float64)

    def half(self):
        return self.to(D.float16)

    def bfloat16(self):
        return self.to(D.bfloat16)

    def long(self):
        return self.to(D.int64)

    def int(self):
        return self.to(D.int32)

    def short(self):
        return self.to(D.int16)

    def char(self):
        return self.to(D.int8)

    def byte(self):
        return self.to(D.uint8)

    def bool(self):
        return self.to(D.bool)

    def pin_memory(self, device=None) -> "Tensor":
        """A copy in page-locked host memory, from which copies to an accelerator run
        asynchronously. Pinning is the accelerator backend's (``device``, default ``cuda``); where
        none is installed and available this returns ``self``."""
        be = _pinning_backend(self, device)
        return be.pin_memory(self) if be is not None else self

    def is_pinned(self, device=None) -> bool:
        be = _pinning_backend(self, device)
        return bool(be.is_pinned(self)) if be is not None else False

    def share_memory_(self) -> "Tensor":
        """Move the storage into shared memory (in place: views and the storage object stay the
        same); nothing when it is shared already. Backends without shared memory raise
        RuntimeError naming the device."""
        self._storage.share_memory_()
        return self

    def is_shared(self) -> bool:
        return self._storage.is_shared()

    def is_inference(self) -> bool:
        return bool(self.__dict__.get("_inference", False))

    def __torch_function__(self, *args, **kwargs):  # pragma: no cover - not supported
        return NotImplemented

    __array_priority__ = 1000


class Size(tuple):
    """The shape of a tensor: a tuple of ints (``ember.Size([2, 3])``)."""

    def __new__(cls, sizes=()):
        return tuple.__new__(cls, sizes)

    def __repr__(self):
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))


def _wrap_dim(dim, ndim: int, op: str = "") -> int:
    """Normalise a possibly negative dim, raising IndexError as PyTorch does."""
    if dim.__class__ is not int:
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}")
        dim = dim.__index__()
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(f"{op + ': ' if op else ''}Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _pinning_backend(t, device):
    """The backend that pins ``t``'s host memory: its own if it pins, else the accelerator's."""
    be = t._device._backend
    if be.supports_pinning:
        return be
    if t._device._type != "cpu":
        return None
    kind = "cuda" if device is None or device == "" else _device_cls(device)._type
    try:
        acc = _plugins.backend_for(kind)
    except RuntimeError:
        return None
    return acc if acc.supports_pinning and acc.availability()[0] else None


def _make(storage, shape, stride, offset, dtype, device, native=None) -> Tensor:
    """A tensor over ``storage`` (public as ``ember.backend.make_tensor``, how kernels return
    results). ``device`` must be the canonical device (``storage.device``); ``native`` is an
    optional backend object cached on the tensor as ``t._native`` (cpu_numpy keeps the numpy view
    there): it must describe exactly this tensor's elements, and stay valid as long as
    ``storage._data`` is the same object (a backend that rebinds ``_data`` checks that first)."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._device = device
    t._native = native
    t._version = [0]
    t._base = None
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._retains_grad = False
    t._hooks = None
    t._accum = None
    t._fn_version = 0
    return t


def _make_owning(data, nbytes, shape, stride, dtype, device, native=None) -> Tensor:
    """``_make(UntypedStorage(data, nbytes, device), shape, stride, 0, dtype, device, native)``
    in one call (public as ``ember.backend.make_owning_tensor``: a kernel's new result over a new
    storage; most results are made here, so neither constructor runs as a call of its own)."""
    s = _new(_Storage)
    s._data = data
    s._nbytes = nbytes
    s._device = device
    s.backend_state = None
    t = _new(Tensor)
    t._storage = s
    t._shape = shape
    t._stride = stride
    t._offset = 0
    t._dtype = dtype
    t._device = device
    t._native = native
    t._version = [0]
    t._base = None
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._retains_grad = False
    t._hooks = None
    t._accum = None
    t._fn_version = 0
    return t


def _alias(src: Tensor, shape, stride, offset, cls=Tensor) -> Tensor:
    """A view of ``src``'s storage sharing its version counter; no autograd history."""
    t = _new(cls)
    t._storage = src._storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = src._dtype
    t._device = src._device
    t._native = None
    t._version = src._version
    b = src._base
    t._base = src if b is None else b
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._retains_grad = False
    t._hooks = None
    t._accum = None
    t._fn_version = src._version[0]
    return t
