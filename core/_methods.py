"""Binds op front ends to ``Tensor`` as methods and operators (``x.exp()``, ``x + y``, ``x[i]``)."""
from __future__ import annotations

from . import _dtype as D
from . import ops
from ._tensor import Tensor, Size, _alias
from .ops import _args as U
from .ops import elementwise as E

# op functions that are not Tensor methods (they take no tensor first, or torch has no method)
_NOT_METHODS = {
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack", "meshgrid",
    "einsum", "broadcast_tensors", "broadcast_shapes", "block_diag", "tril_indices", "triu_indices", "where",
    "atleast_1d", "atleast_2d", "atleast_3d", "tensordot",
}


def _bind_methods() -> None:
    for name in ops.__all__:
        if name in _NOT_METHODS or name in ops._FACTORY_NAMES or name in ops._RANDOM_NAMES:
            continue
        if name in Tensor.__dict__:
            continue
        setattr(Tensor, name, getattr(ops, name))


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
    from . import _random
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
    T.__getitem__ = ops.getitem
    T.__setitem__ = ops.setitem
    # arithmetic operators
    T.__add__ = _forward(E._add)
    T.__radd__ = _forward(E._add)
    T.__iadd__ = E.add_inplace
    T.__sub__ = _forward(ops.sub)
    T.__rsub__ = _reflected(ops.sub)
    T.__isub__ = ops.sub_
    T.__mul__ = _forward(E.mul)
    T.__rmul__ = _forward(E.mul)
    T.__imul__ = E.mul_
    T.__truediv__ = _forward(E._true_div)
    T.__rtruediv__ = _reflected(E._true_div)
    T.__itruediv__ = E._true_div_
    T.__floordiv__ = _forward(ops.floor_divide)
    T.__rfloordiv__ = _reflected(ops.floor_divide)
    T.__ifloordiv__ = ops.floor_divide_
    T.__mod__ = _forward(ops.remainder)
    T.__rmod__ = _reflected(ops.remainder)
    T.__imod__ = ops.remainder_
    T.__pow__ = _forward(ops.pow)
    T.__rpow__ = _reflected(ops.pow)
    T.__ipow__ = ops.pow_
    T.__matmul__ = _tensor_only(ops.matmul)
    T.__rmatmul__ = _tensor_only(ops.matmul, reflected=True)
    T.__neg__ = ops.neg
    T.__pos__ = ops.positive
    T.__abs__ = ops.abs
    T.__invert__ = _invert
    T.__and__ = _forward(ops.bitwise_and)
    T.__rand__ = _forward(ops.bitwise_and)
    T.__iand__ = ops.bitwise_and_
    T.__or__ = _forward(ops.bitwise_or)
    T.__ror__ = _forward(ops.bitwise_or)
    T.__ior__ = ops.bitwise_or_
    T.__xor__ = _forward(ops.bitwise_xor)
    T.__rxor__ = _forward(ops.bitwise_xor)
    T.__ixor__ = ops.bitwise_xor_
    T.__lshift__ = _forward(ops.bitwise_left_shift)
    T.__rshift__ = _forward(ops.bitwise_right_shift)
    T.__rlshift__ = _reflected(ops.bitwise_left_shift)
    T.__rrshift__ = _reflected(ops.bitwise_right_shift)
    T.__ilshift__ = ops.bitwise_left_shift_
    T.__irshift__ = ops.bitwise_right_shift_
    T.__eq__ = _cmp(ops.eq)
    T.__ne__ = _cmp(ops.ne)
    T.__lt__ = _cmp(ops.lt)
    T.__le__ = _cmp(ops.le)
    T.__gt__ = _cmp(ops.gt)
    T.__ge__ = _cmp(ops.ge)
    T.__hash__ = lambda self: id(self)
