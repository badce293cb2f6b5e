"""Binds op front ends to ``Tensor`` as methods and operators (``x.exp()``, ``x + y``, ``x[i]``)."""
from __future__ import annotations

from . import _dtype as D
from . import ops
from ._tensor import Tensor, Size, _alias
from .ops import _args as U
from .ops import arithmetic as A
from .ops import random as _random
from .ops.registry import dispatch

# op functions that are not Tensor methods (they take no tensor first, or torch has no method)
_NOT_METHODS = {
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack", "meshgrid",
    "einsum", "broadcast_tensors", "broadcast_shapes", "block_diag", "tril_indices", "triu_indices", "where",
    "atleast_1d", "atleast_2d", "atleast_3d", "tensordot",
}


def _bind_methods() -> None:
    skip = set(ops.creation.__all__) | set(ops.random.__all__) | _NOT_METHODS
    for name in ops.__all__:
        fn = getattr(ops, name)
        op = getattr(fn, "op", None)
        if op is not None:
            if not op.method:
                continue
        elif name in skip:
            continue
        if name in Tensor.__dict__:
            continue
        setattr(Tensor, name, fn)


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
    else:
        def method(self, other):
            if not isinstance(other, Tensor) and not U.is_scalar(other):
                return NotImplemented
            dev, args, inputs = meta(self, other)
            return dispatch(op, dev, args, inputs) if dev is not None else args
    return method


def _varargs_dims(fn):
    def method(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        return fn(self, dims)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _cmp(fn):
    def method(self, other):
        if not isinstance(other, Tensor) and not U.is_scalar(other):
            return NotImplemented
        return fn(self, other)
    method.__name__ = fn.__name__
    return method


def _reflected(fn):
    def method(self, other):
        if not isinstance(other, Tensor) and not U.is_scalar(other):
            return NotImplemented
        return fn(other, self)
    return method


def _forward(fn):
    def method(self, other):
        if not isinstance(other, Tensor) and not U.is_scalar(other):
            return NotImplemented
        return fn(self, other)
    return method


def _tensor_only(fn, reflected=False):
    """``@`` takes tensors only: anything else gives NotImplemented (python raises TypeError)."""
    def method(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = fn.__name__
    return method


def _invert(self):
    if self._dtype.category == D._FLOAT:
        raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type tensors (got "
                        f"{U.desc(self)})")
    return ops.bitwise_not(self)


def _new_like(kind):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        if kind == "full":
            size, value = size[0], size[1]
        shape = U.size_arg(size, "new_" + kind)
        dt = self._dtype if dtype is None else D.to_dtype(dtype)
        dev = self._device if device is None else device
        if kind == "empty":
            return ops.empty(shape, dtype=dt, device=dev, requires_grad=requires_grad)
        if kind == "zeros":
            return ops.zeros(shape, dtype=dt, device=dev, requires_grad=requires_grad)
        if kind == "ones":
            return ops.ones(shape, dtype=dt, device=dev, requires_grad=requires_grad)
        return ops.full(shape, value, dtype=dt, device=dev, requires_grad=requires_grad)
    method.__name__ = "new_" + kind
    method.__doc__ = f"A new tensor of ``size`` ({kind}) with this tensor's dtype and device unless given."
    return method


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    """A new uninitialised tensor with ``size`` and ``stride``, this tensor's dtype and device
    unless given."""
    return ops.empty_strided(size, stride, dtype=self._dtype if dtype is None else dtype,
                             device=self._device if device is None else device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor from ``data`` with this tensor's dtype and device unless given."""
    if isinstance(data, Tensor):
        data = data.detach()
    return ops.tensor(data, dtype=self._dtype if dtype is None else dtype,
                      device=self._device if device is None else device, requires_grad=requires_grad)


def resize_(self, *sizes, memory_format=None):
    """Change the shape in place; storage grows when needed (its old contents are kept)."""
    shape = U.size_arg(sizes, "resize_")
    U.check_sizes_nonneg(shape, "resize_")
    if self._requires_grad and self._grad_fn is None:
        from ._state import grad
        if grad.enabled:
            raise RuntimeError("cannot resize variables that require grad")
    from .backend import contiguous_strides
    n = 1
    for s in shape:
        n *= s
    need = (self._offset + n) * self._dtype.itemsize
    if need > self._storage._nbytes:
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
    return resize_(self, other._shape)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Point this tensor at ``source``'s storage (a tensor or an UntypedStorage)."""
    from ._storage import UntypedStorage
    from .backend import contiguous_strides
    if source is None:
        fresh = self._device._backend.empty((0,), self._dtype, self._device)
        self._storage, self._shape, self._stride, self._offset = fresh._storage, (0,), (1,), 0
    elif isinstance(source, Tensor):
        self._storage, self._shape, self._stride, self._offset = source._storage, source._shape, source._stride, source._offset
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
    u = ops.rand(self._shape, dtype=self._dtype, device=self._device, generator=generator)
    return self.copy_(ops.neg(ops.log1p(ops.neg(u))) / lambd)


def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
    z = ops.randn(self._shape, dtype=self._dtype, device=self._device, generator=generator)
    return self.copy_(ops.exp(z * std + mean))


def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
    import math
    u = ops.rand(self._shape, dtype=self._dtype, device=self._device, generator=generator)
    return self.copy_(ops.tan((u - 0.5) * math.pi) * sigma + median)


def geometric_(self, p: float, *, generator=None):
    import math
    u = ops.rand(self._shape, dtype=D.float32 if self._dtype.category != D._FLOAT else self._dtype,
                 device=self._device, generator=generator)
    return self.copy_(ops.ceil(ops.log1p(ops.neg(u)) / math.log1p(-p)))


def _T(self):
    if self.dim() <= 2:
        return ops.t(self) if self.dim() == 2 else self
    return ops.permute(self, tuple(range(self.dim() - 1, -1, -1)))


def _mT(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return ops.transpose(self, -2, -1)


def tensor_where(self, condition, other):
    return ops.where(condition, self, other)


def _bool_or_bitwise(bitwise, logical):
    def f(self, other):
        if not isinstance(other, Tensor) and not U.is_scalar(other):
            return NotImplemented
        return bitwise(self, other)
    return f


def install() -> None:
    _bind_methods()
    T = Tensor
    # varargs forms
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
    from .ops import random as _random
    T.uniform_ = _random.uniform_
    T.normal_ = _random.normal_
    T.random_ = _random.random_
    T.bernoulli_ = _random.bernoulli_
    T.bernoulli = lambda self, p=None, *, generator=None: _random.bernoulli(self, p, generator=generator)
    T.multinomial = _random.multinomial
    T.where = tensor_where
    T.T = property(_T)
    T.mT = property(_mT)
    T.H = property(_T)
    T.mH = property(_mT)
    T.contiguous = ops.contiguous
    T.clone = ops.clone
    T.copy_ = ops.copy_
    T.fill_ = ops.fill_
    T.zero_ = ops.zero_
    T.__getitem__ = ops.indexing.getitem
    T.__setitem__ = ops.indexing.setitem
    # arithmetic operators
    T.__add__ = T.__radd__ = _operator(A.add.op, A.add_operands)
    T.__iadd__ = A.add_
    T.__sub__ = _operator(A.sub.op, A.sub_operands)
    T.__rsub__ = _operator(A.sub.op, A.sub_operands, reflected=True)
    T.__isub__ = A.sub_
    T.__mul__ = T.__rmul__ = _operator(A.mul.op, A.mul.op.meta)
    T.__imul__ = A.mul_
    T.__truediv__ = _operator(A.div.op, A.div_operands)
    T.__rtruediv__ = _operator(A.div.op, A.div_operands, reflected=True)
    T.__itruediv__ = A.div_
    for name, fn in (("floordiv", ops.floor_divide), ("mod", ops.remainder), ("pow", ops.pow),
                     ("lshift", ops.bitwise_left_shift), ("rshift", ops.bitwise_right_shift)):
        setattr(T, f"__{name}__", _forward(fn))
        setattr(T, f"__r{name}__", _reflected(fn))
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
        setattr(T, f"__{name}__", _operator(fn.op, fn.op.meta))
    T.__hash__ = lambda self: id(self)
