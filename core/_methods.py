"""The ``Tensor`` methods that need the layers above the Tensor class (:mod:`ember._tensor` holds
the metadata and conversions that need nothing above it).

:func:`install` (run once by ``import ember``) binds:

* the op front ends: every op declared with ``method=True`` (``x.exp()``, ``x.add_(y)``...) and
  the plain functions listed in :data:`PLAIN_METHODS` (``x.allclose(y)``...);
* the operators (``x + y``, ``x[i]``, ``x @ y``...);
* methods with a signature of their own (varargs ``x.flip(0, 1)``, ``x.new_zeros(...)``,
  ``x.where(c, y)``, the random fills);
* autograd's attributes (``requires_grad``, ``grad_fn``, hooks, ``backward``) and the
  protocols (``to``/``type``, ``repr``, pickling, ``deepcopy``, DLPack, the legacy constructor).

``tests/test_public_names.py`` pins the resulting list of Tensor methods.
"""
from __future__ import annotations

import math

import numpy as np

from . import _devices
from . import _dtype as D
from . import _dlpack
from . import _legacy
from . import _repr
from . import _state
from . import ops
from ._device import device as _device_cls
from ._graph import RemovableHandle, grad_fn_of, view_requires_grad
from ._layout import SparseParts
from ._storage import UntypedStorage
from ._tensor import Tensor
from .autograd import engine
from .backend import contiguous_strides
from .ops import _args as U
from .ops import arithmetic as A
from .ops import creation
from .ops import random as _random
from .ops import sparse as SP
from .ops.registry import OPS, dispatch

_grad = _state.grad
_vmap_open = _state.vmap_open

#: functions of ``ember.ops`` that are Tensor methods without being declared ops
PLAIN_METHODS = ("allclose", "equal")


def bind_op(op) -> None:
    """Make ``op``'s front end and its in-place form ``Tensor`` methods under their own names,
    where those names are free (core ops at import, plugin ops declared with ``method=True``)."""
    for fn in (op.fn, op.inplace_fn):
        if fn is not None and fn.__name__ not in Tensor.__dict__:
            setattr(Tensor, fn.__name__, fn)


def _bind_ops() -> None:
    for op in OPS.values():  # every op declared with method=True
        if op.method and op.fn is not None:
            bind_op(op)
    for name in ops.__all__:  # the other names ember.ops gives them (multiply for mul...), and PLAIN_METHODS
        fn = getattr(ops, name)
        op = getattr(fn, "op", None)
        if (op.method if op is not None else name in PLAIN_METHODS) and name not in Tensor.__dict__:
            setattr(Tensor, name, fn)


# -- operators ----------------------------------------------------------------------------------

def _operator(op, meta, reflected: bool = False):
    """``Tensor.__add__`` and friends: ``meta(self, other)`` (or ``(other, self)``) straight to
    dispatch; anything but a tensor or a number gives NotImplemented (python then tries the
    other operand)."""
    if reflected:
        def method(self, other):
            if not isinstance(other, Tensor) and not U.is_scalar(other):
                return NotImplemented
            dev, args, inputs = meta(other, self)
            return dispatch(op, dev, args, inputs) if dev is not None else args
    elif getattr(meta, "same", None) is not None:
        # the meta's plain case inline (two tensors of one dtype, device and shape that the op takes
        # as they are: ``same[category]``), and dispatch's kernel path when neither operand can
        # take part in autograd: one frame around the kernel instead of three
        same = meta.same
        name = op.name

        def method(self, other):
            if other.__class__ is Tensor:
                dt = self._dtype
                dev = self._device
                if dt is other._dtype and dev is other._device and self._shape == other._shape and same[dt.category]:
                    args = (self, other)
                    if (self._requires_grad or other._requires_grad or self._base is not None
                            or other._base is not None or _vmap_open[0]):
                        return dispatch(op, dev, args, args)
                    k = dev._kernels.get(name)
                    if k is None:
                        return dispatch(op, dev, args, args)
                    try:
                        return k(self, other)
                    except MemoryError as e:
                        raise RuntimeError(f"{name}: can't allocate memory: {e}") from None
            elif not isinstance(other, Tensor) and not U.is_scalar(other):
                return NotImplemented
            dev, args, inputs = meta(self, other)
            return dispatch(op, dev, args, inputs) if dev is not None else args
    else:
        def method(self, other):
            if not isinstance(other, Tensor) and not U.is_scalar(other):
                return NotImplemented
            dev, args, inputs = meta(self, other)
            return dispatch(op, dev, args, inputs) if dev is not None else args
    return method


def _rtruediv(self, other):
    """``number / tensor`` is ``reciprocal(tensor) * number``, as PyTorch's (its backward reads
    the reciprocal, not the tensor, which may then change in place: ``c[:, 2] = 1 / c[:, 2]``)."""
    if isinstance(other, Tensor):
        dev, args, inputs = A.div_operands(other, self)
        return dispatch(A.div.op, dev, args, inputs) if dev is not None else args
    if not U.is_scalar(other):
        return NotImplemented
    return ops.reciprocal(self) * other


def _number_operator(fn, reflected=False):
    """An operator through the front end ``fn`` (``//``, ``%``, ``**``, shifts): anything but a
    tensor or a number gives NotImplemented."""
    def method(self, other):
        if not isinstance(other, Tensor) and not U.is_scalar(other):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    return method


def _tensor_only(fn, reflected=False):
    """``@`` takes tensors only: anything else gives NotImplemented (python raises TypeError)."""
    def method(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = fn.__name__
    return method


def _comparison(op, meta):
    """``tensor == other`` and the other comparisons: as :func:`_operator`, and a numpy array on
    either side is compared elementwise as a tensor (a Tensor of bools, as PyTorch's ``==``; python
    would otherwise fall back to identity)."""
    plain = _operator(op, meta)

    def method(self, other):
        if isinstance(other, np.ndarray):
            other = creation.as_tensor(other)
        return plain(self, other)
    return method


def _array_wrap(self, array, context=None, return_scalar=False):
    """numpy's result of a ufunc over a tensor (``tensor + ndarray``, ``np.sin(tensor)``) comes
    back as a (cpu) Tensor, as PyTorch's."""
    return creation.from_numpy(array if array.flags.c_contiguous else array.copy())


def _invert(self):
    if self._dtype.category >= D._FLOAT:
        raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type tensors (got "
                        f"{U.desc(self)})")
    return ops.bitwise_not(self)


# -- methods with signatures of their own ---------------------------------------------------------

def _varargs_dims(fn):
    def method(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        return fn(self, dims)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _new_like(kind):
    def method(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, **kw):
        if kind == "full":  # new_full(size, fill_value), either by keyword
            args = sizes + ((size,) if size is not None else ())
            args += (kw.pop("fill_value"),) if "fill_value" in kw else ()
            if len(args) != 2:
                raise TypeError(f"new_full() takes 2 arguments (size, fill_value) ({len(args)} given)")
            sizes, size, value = (args[0],), None, args[1]
        unknown = set(kw) - {"layout", "pin_memory"}
        if unknown:
            raise TypeError(f"new_{kind}() got an unexpected keyword argument '{sorted(unknown)[0]}'")
        shape = U.size_arg(U.size_keyword(sizes, size, "new_" + kind), "new_" + kind)
        dt = self._dtype if dtype is None else D.to_dtype(dtype)
        dev = self._device if device is None else device
        if kind == "empty":
            return creation.empty(shape, dtype=dt, device=dev, requires_grad=requires_grad)
        if kind == "zeros":
            return creation.zeros(shape, dtype=dt, device=dev, requires_grad=requires_grad)
        if kind == "ones":
            return creation.ones(shape, dtype=dt, device=dev, requires_grad=requires_grad)
        return creation.full(shape, value, dtype=dt, device=dev, requires_grad=requires_grad)
    method.__name__ = "new_" + kind
    method.__doc__ = f"A new tensor of ``size`` ({kind}) with this tensor's dtype and device unless given."
    return method


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    """A new uninitialised tensor with ``size`` and ``stride``, this tensor's dtype and device
    unless given."""
    return creation.empty_strided(size, stride, dtype=self._dtype if dtype is None else dtype,
                                  device=self._device if device is None else device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor from ``data`` with this tensor's dtype and device unless given."""
    if isinstance(data, Tensor):
        data = data.detach()
    return creation.tensor(data, dtype=self._dtype if dtype is None else dtype,
                           device=self._device if device is None else device, requires_grad=requires_grad)


def resize_(self, *sizes, memory_format=None):
    """Change the shape in place; storage grows when needed (its old contents are kept)."""
    shape = U.size_arg(sizes, "resize_")
    U.check_sizes_nonneg(shape, "resize_")
    if self._requires_grad and self._grad_fn is None and _grad.enabled:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(shape)
    need = (self._offset + n) * self._dtype.itemsize
    if need > self._storage._nbytes:
        if self._storage.is_shared():  # other processes map it: it cannot grow (PyTorch's error)
            raise RuntimeError("Trying to resize storage that is not resizable")
        old = self.detach().reshape(-1) if self.is_contiguous() else None
        fresh = self._device._backend.empty((self._offset + n,), self._dtype, self._device)
        if old is not None and old.numel():
            fresh.narrow(0, self._offset, min(old.numel(), n)).copy_(old[:min(old.numel(), n)])
        self._storage = fresh._storage
    self._shape = shape
    self._stride = contiguous_strides(shape)
    self._native = None
    self._version[0] += 1
    return self


def resize_as_(self, other, memory_format=None):
    """:meth:`resize_` to ``other``'s shape."""
    return resize_(self, other._shape)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Point this tensor at ``source``'s storage (a tensor or an UntypedStorage)."""
    if source is None:
        fresh = self._device._backend.empty((0,), self._dtype, self._device)
        self._storage, self._shape, self._stride, self._offset = fresh._storage, (0,), (1,), 0
    elif isinstance(source, Tensor):
        self._storage, self._shape, self._stride, self._offset = (source._storage, source._shape, source._stride,
                                                                  source._offset)
        self._dtype, self._device = source._dtype, source._device
    elif isinstance(source, UntypedStorage):
        n = source._nbytes // self._dtype.itemsize
        shape = (n,) if size is None else tuple(size)
        self._storage = source
        self._device = source._device
        self._shape = shape
        self._stride = contiguous_strides(shape) if stride is None else tuple(stride)
        self._offset = storage_offset
    else:
        raise TypeError(f"set_(): expected a Tensor or an UntypedStorage, got {type(source).__name__}")
    self._native = None
    self._version[0] += 1
    return self


def fill_diagonal_(self, fill_value, wrap: bool = False):
    """Fill the main diagonal (of a 2-D tensor, or all-equal-dims N-D) in place; with ``wrap``
    a tall matrix's diagonal restarts below each square block, as numpy's ``fill_diagonal``."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self._shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(self._shape)
    if self.dim() == 2 and wrap and self._shape[0] > self._shape[1] + 1 and self.is_contiguous():
        rows, cols = self._shape
        n = -(-(rows * cols) // (cols + 1))  # every (cols+1)-th element of the flat matrix
        ops.as_strided(self, (n,), (cols + 1,), self._offset).fill_(fill_value)
        return self
    ops.as_strided(self, (n,), (sum(self._stride),), self._offset).fill_(fill_value)
    return self


def exponential_(self, lambd: float = 1.0, *, generator=None):
    """Fill with samples from Exp(lambd)."""
    _random.check_continuous(self, "Exponential")
    _random.check_positive(lambd, "lambda", "exponential_")
    u = _random.rand(self._shape, dtype=self._dtype, device=self._device, generator=generator)
    return self.copy_(ops.neg(ops.log1p(ops.neg(u))) / lambd)


def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
    """Fill with samples whose logarithm is N(mean, std^2)."""
    if self._dtype.category != D._FLOAT:
        raise NotImplementedError(f"\"log_normal_\" not implemented for '{self._dtype.name}'")
    _random.check_positive(std, "std", "log_normal_")
    z = _random.randn(self._shape, dtype=self._dtype, device=self._device, generator=generator)
    return self.copy_(ops.exp(z * std + mean))


def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
    """Fill with samples from the Cauchy distribution."""
    _random.check_continuous(self, "Cauchy")
    _random.check_positive(sigma, "sigma", "cauchy_")
    u = _random.rand(self._shape, dtype=self._dtype, device=self._device, generator=generator)
    return self.copy_(ops.tan((u - 0.5) * math.pi) * sigma + median)


def geometric_(self, p: float, *, generator=None):
    """Fill with samples from the geometric distribution (trials until the first success)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _random.rand(self._shape, dtype=D.float32 if self._dtype.category != D._FLOAT else self._dtype,
                     device=self._device, generator=generator)
    return self.copy_(ops.ceil(ops.log1p(ops.neg(u)) / math.log1p(-p)))


def _bernoulli(self, p=None, *, generator=None):
    return _random.bernoulli(self, p, generator=generator)


def _T(self):
    if self.dim() <= 2:
        return ops.t(self) if self.dim() == 2 else self
    return ops.permute(self, tuple(range(self.dim() - 1, -1, -1)))


def _mT(self):
    if self.dim() < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return ops.transpose(self, -2, -1)


def tensor_where(self, condition, other):
    """``self`` where ``condition`` holds, else ``other``."""
    return ops.where(condition, self, other)


# -- autograd's attributes --------------------------------------------------------------------

def _get_requires_grad(self) -> bool:
    if self._base is not None and not self._requires_grad:
        return view_requires_grad(self)
    return self._requires_grad


def _set_requires_grad(self, value: bool) -> None:
    value = bool(value)
    if self._grad_fn is not None and self._requires_grad:
        if not value:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        # the attribute refuses even True (PyTorch's seed rule; requires_grad_() lets it pass)
        raise RuntimeError("you can only change requires_grad flags of leaf variables.")
    if value and self._dtype.category < D._FLOAT:
        raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients (got "
                           f"{self._dtype})")
    if self._storage.__class__ is SparseParts:  # a sparse leaf: its values are the leaf autograd sees
        self._storage.values.requires_grad_(value)
    self._requires_grad = value


def _grad_fn(self):
    if self._base is not None:
        return grad_fn_of(self)
    return self._grad_fn


def register_hook(self, hook):
    """Call ``hook(grad)`` when the gradient of this tensor is computed; it may return a
    replacement gradient. Returns a handle with ``remove()``."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if not self.is_leaf:  # runs on the gradient flowing into this output of its grad_fn
        return self.grad_fn._add_tensor_hook(self._output_nr, hook)
    if self._hooks is None:
        self._hooks = {}
    handle = RemovableHandle(self._hooks)
    self._hooks[handle.id] = hook
    return handle


def register_post_accumulate_grad_hook(self, hook):
    """For leaves: call ``hook(tensor)`` after its ``.grad`` has been accumulated."""
    if not self.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = self.__dict__.setdefault("_post_accumulate_hooks", {})
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Compute gradients of this tensor with respect to graph leaves (see ``ember.autograd.backward``)."""
    engine.backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph, inputs)


# -- conversions and protocols ------------------------------------------------------------------

def parse_to(args, kwargs) -> tuple:
    """``(device, dtype, non_blocking, copy)`` of a ``to(...)`` call (``Tensor.to`` and
    ``Module.to``): ``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``; device and dtype
    are None where not given. ``kwargs`` is consumed."""
    dev = dtype = None
    copy = kwargs.pop("copy", False)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    kwargs.pop("memory_format", None)
    if "device" in kwargs:
        dev = kwargs.pop("device")
    if "dtype" in kwargs:
        dtype = kwargs.pop("dtype")
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dev, dtype = a._device, a._dtype
        elif isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            if isinstance(a, str) and (a.startswith("ember.") or a.startswith("torch.")):
                dtype = D.to_dtype(a)
            else:
                dev = a
        elif a is None:
            continue
        elif isinstance(a, bool):
            non_blocking = a  # legacy positional non_blocking
        elif a in (float, int, bool):
            dtype = D.to_dtype(a)
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return dev, (None if dtype is None else D.to_dtype(dtype)), non_blocking, copy


def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``, with ``copy`` and ``non_blocking``."""
    dev, dtype, non_blocking, copy = parse_to(args, kwargs)
    dtype = self._dtype if dtype is None else dtype
    dev = self._device if dev is None else _devices.canonical(dev)
    if dev is self._device and dtype is self._dtype and not copy:
        return self
    if self._storage.__class__ is SparseParts:
        return SP.sparse_to(self, dtype, dev, copy)
    return ops.copy.to_copy(self, dtype, dev, non_blocking)


def _type(self, dtype=None, non_blocking: bool = False, **kwargs):
    """With no argument, the legacy type string (``'ember.FloatTensor'``); otherwise a cast."""
    if dtype is None:
        return _legacy.type_string(self)
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        dt, dev = _legacy.parse_type_string(dtype)
        return self.to(device=dev if dev is not None else self._device, dtype=dt)
    if isinstance(dtype, type) and hasattr(dtype, "_legacy_dtype"):
        return self.to(dtype._legacy_dtype)
    return self.to(D.to_dtype(dtype))


def _repr_tensor(self, *, tensor_contents=None):
    if self._storage.__class__ is SparseParts:
        return _repr.sparse_repr(self)
    return _repr.tensor_repr(self)


def _rebuild_tensor(array: np.ndarray, dtype_name: str, device: str, requires_grad: bool):
    """The inverse of ``Tensor.__reduce_ex__`` (plain pickle, copy and multiprocessing of one
    tensor, outside ``ember.save``)."""
    t = creation.from_host(np.asarray(array, order="C"), D.to_dtype(dtype_name), _devices.canonical(device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_sparse(indices, values, size, coalesced: bool, requires_grad: bool):
    """The inverse of ``Tensor.__reduce_ex__`` for a sparse tensor."""
    t = SP.make_sparse(indices, values, size, coalesced)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(self, proto=None):
    if self._storage.__class__ is SparseParts:
        p = self._storage
        return (_rebuild_sparse, (p.indices, p.values.detach(), tuple(self._shape), p.coalesced,
                                  self._requires_grad and self._grad_fn is None))
    arr = self.detach()._host()
    return (_rebuild_tensor, (np.array(arr, copy=True), self._dtype.name, str(self._device), self._requires_grad))


def _deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.")
    with _state.grad_disabled():
        new = ops.clone(self)
    cls = self.__class__
    if cls is not Tensor:
        new = cls._from_alias(new, self._requires_grad) if hasattr(cls, "_from_alias") else new
    new._requires_grad = self._requires_grad
    if self._grad is not None:
        new._grad = self._grad.__deepcopy__(memo)
    new.__dict__.update({k: v for k, v in self.__dict__.items()})
    memo[id(self)] = new
    return new


def _new_tensor(cls, *args, device=None, dtype=None):
    # the legacy constructor: ember.Tensor(2, 3), ember.Tensor([1, 2])
    return creation.legacy_new(cls, args, device, dtype)


def _dlpack_export(self, stream=None, **kwargs):
    return _dlpack.to_dlpack(self, stream, **kwargs)


def _dlpack_device(self):
    return _dlpack.dlpack_device(self)


def install() -> None:
    """Bind everything above to ``Tensor`` (once, from ``ember/__init__``)."""
    T = Tensor
    _bind_ops()
    # methods with signatures of their own
    T.flip = _varargs_dims(ops.flip)
    T.tile = _varargs_dims(ops.tile)
    T.new_empty = _new_like("empty")
    T.new_zeros = _new_like("zeros")
    T.new_ones = _new_like("ones")
    T.new_full = _new_like("full")
    T.new_tensor = new_tensor
    T.new_empty_strided = new_empty_strided
    T.resize_ = resize_
    T.resize_as_ = resize_as_
    T.set_ = set_
    T.fill_diagonal_ = fill_diagonal_
    T.exponential_ = exponential_
    T.log_normal_ = log_normal_
    T.cauchy_ = cauchy_
    T.geometric_ = geometric_
    T.uniform_ = _random.uniform_
    T.normal_ = _random.normal_
    T.random_ = _random.random_
    T.bernoulli_ = _random.bernoulli_
    T.bernoulli = _bernoulli
    T.multinomial = _random.multinomial
    T.where = tensor_where
    T.polygamma, T.polygamma_ = ops.special_gamma.tensor_polygamma, ops.special_gamma.tensor_polygamma_
    T.T = property(_T)
    T.mT = property(_mT)
    T.H = property(_T)
    T.mH = property(_mT)
    T.copy_ = ops.copy_
    T.fill_ = ops.fill_
    T.zero_ = ops.zero_
    T.__getitem__ = ops.indexing.getitem
    T.__setitem__ = ops.indexing.setitem
    # autograd
    T.requires_grad = property(_get_requires_grad, _set_requires_grad)
    T.grad_fn = property(_grad_fn)
    T.register_hook = register_hook
    T.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    T.backward = backward
    # conversions and protocols
    T.__new__ = staticmethod(_new_tensor)
    T.to = to
    T.type = _type
    T.__repr__ = _repr_tensor
    T.__reduce_ex__ = _reduce_tensor
    T.__deepcopy__ = _deepcopy
    T.__dlpack__ = _dlpack_export
    T.__dlpack_device__ = _dlpack_device
    T.__array_wrap__ = _array_wrap
    # arithmetic operators
    T.__add__ = T.__radd__ = _operator(A.add.op, A.add_operands)
    T.__iadd__ = A.add_
    T.__sub__ = _operator(A.sub.op, A.sub_operands)
    T.__rsub__ = _operator(A.sub.op, A.sub_operands, reflected=True)
    T.__isub__ = A.sub_
    T.__mul__ = T.__rmul__ = _operator(A.mul.op, A.mul.op.meta)
    T.__imul__ = A.mul_
    T.__truediv__ = _operator(A.div.op, A.div_operands)
    T.__rtruediv__ = _rtruediv
    T.__itruediv__ = A.div_
    for name, fn in (("floordiv", ops.floor_divide), ("mod", ops.remainder), ("pow", ops.pow),
                     ("lshift", ops.bitwise_left_shift), ("rshift", ops.bitwise_right_shift)):
        setattr(T, f"__{name}__", _number_operator(fn))
        setattr(T, f"__r{name}__", _number_operator(fn, reflected=True))
        setattr(T, f"__i{name}__", fn.inplace)
    T.__matmul__ = _tensor_only(ops.matmul)
    T.__rmatmul__ = _tensor_only(ops.matmul, reflected=True)
    T.__neg__ = ops.neg
    T.__pos__ = ops.positive
    T.__abs__ = ops.abs
    T.__invert__ = _invert
    for name, fn in (("and", ops.bitwise_and), ("or", ops.bitwise_or), ("xor", ops.bitwise_xor)):
        setattr(T, f"__{name}__", _operator(fn.op, fn.op.meta))
        setattr(T, f"__r{name}__", _operator(fn.op, fn.op.meta, reflected=True))
        setattr(T, f"__i{name}__", fn.inplace)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        fn = getattr(ops, name)
        setattr(T, f"__{name}__", _comparison(fn.op, fn.op.meta))
    T.__hash__ = lambda self: id(self)
    # sparse COO (ember.ops.sparse)
    T.to_dense = SP.to_dense
    T.to_sparse = T.to_sparse_coo = SP.to_sparse
    T.coalesce = SP.coalesce
    T.is_coalesced = SP.is_coalesced
    T.indices = SP.indices
    T.values = SP.values
    T._indices = SP.raw_indices
    T._values = SP.raw_values
    T._nnz = SP.nnz
    T.sparse_dim = SP.sparse_dim
    T.dense_dim = SP.dense_dim
