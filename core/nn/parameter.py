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


def is_lazy(param) -> bool:
    """ember has no lazy (uninitialised) parameters."""
    return False
