"""``nn.Parameter`` (a leaf tensor a Module registers as learnable) and ``nn.Buffer``."""
from __future__ import annotations

from .. import _state
from .. import ops
from .._tensor import Tensor, _alias
from ..ops import creation as _factory


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> "Parameter":
    return Parameter(data, requires_grad)


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a Module attribute registers it.

    It shares storage (and the version counter) with ``data``, is always a leaf, and requires
    grad by default.

    >>> p = ember.nn.Parameter(ember.ones(2))
    >>> p.requires_grad
    True
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = _factory.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        t = _alias(data, data._shape, data._stride, data._offset, cls=cls)
        t._base = None  # a leaf of its own, never a view for autograd
        t._native = data._native
        if requires_grad:
            t.requires_grad_(True)  # refuses integer dtypes, as PyTorch
        return t

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    @classmethod
    def _from_alias(cls, t: Tensor, requires_grad: bool) -> "Parameter":
        return cls(t, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (Tensor.detach(self), self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with _state.grad_disabled():
            data = ops.clone(self)
        new = type(self)(data, self._requires_grad)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new


class Buffer(Tensor):
    """Marks a tensor as a buffer: ``module.x = nn.Buffer(t, persistent=False)`` registers it
    (the module stores a plain tensor sharing ``t``'s storage)."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = _factory.empty(0)
        t = _alias(data, data._shape, data._stride, data._offset, cls=cls)
        t._base = None
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent: bool = True):
        pass


class UninitializedTensorMixin:
    """An uninitialised parameter or buffer of a lazy module: it has a device, a dtype and
    ``requires_grad`` but no shape until ``materialize(shape)`` gives it storage and turns it into
    its ``cls_to_become``. Reading ``shape`` raises RuntimeError, as PyTorch's. (PyTorch also
    refuses every op on it with a ValueError through ``__torch_function__``; ember has no such
    dispatch, so an op sees a 0-element tensor and fails on the shape.)"""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor uninitialised storage of ``shape`` (on ``device``, of ``dtype``)."""
        device = self._device if device is None else device
        dtype = self._dtype if dtype is None else dtype
        with _state.grad_disabled():
            new = _factory.empty(tuple(shape), device=device, dtype=dtype)
        self._storage, self._shape, self._stride, self._offset = new._storage, new._shape, new._stride, new._offset
        self._dtype, self._device, self._native, self._version = new._dtype, new._device, new._native, new._version
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call `forward` "
            "to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self._requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, self._device, self._dtype)
        return memo[id(self)]


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of a lazy module before its first forward (becomes a :class:`Parameter`)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return Parameter.__new__(cls, _factory.empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy module before its first forward (becomes a plain tensor)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        data = _factory.empty(0, device=device, dtype=dtype)
        t = _alias(data, data._shape, data._stride, data._offset, cls=cls)
        t._base = None
        t.persistent = persistent
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        pass


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialised parameter or buffer of a lazy module."""
    return isinstance(param, UninitializedTensorMixin)
