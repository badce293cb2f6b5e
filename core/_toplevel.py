"""Functions of the top-level namespace that belong to no op family: type predicates
(``is_tensor``...), ``typename``, the deterministic-algorithm switches,
``set_default_tensor_type`` and ``plugins``."""
from __future__ import annotations

from . import _dtype as D
from . import _legacy, _plugins
from ._storage import UntypedStorage
from ._tensor import Tensor

__all__ = ["is_tensor", "is_storage", "is_floating_point", "is_complex", "is_nonzero", "numel", "typename",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "set_default_tensor_type",
           "plugins"]


def is_tensor(obj) -> bool:
    """True for ember tensors (and Parameters)."""
    return isinstance(obj, Tensor)


def is_storage(obj) -> bool:
    """True for ember storages."""
    return isinstance(obj, UntypedStorage)


def is_floating_point(input) -> bool:
    """True when ``input``'s dtype is a floating-point dtype."""
    return input.is_floating_point()


def is_complex(input) -> bool:
    """True when ``input``'s dtype is complex (complex64 or complex128)."""
    return input.is_complex()


def is_nonzero(input) -> bool:
    """The truth value of a one-element tensor."""
    if input.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no' if input.numel() == 0 else 'more than one'} value"
                           f"{'s' if input.numel() != 1 else ''} is ambiguous")
    return input.item() != 0


def numel(input) -> int:
    """The number of elements of ``input``."""
    return input.numel()


def typename(obj) -> str:
    """The legacy type string of a tensor (``'ember.FloatTensor'``), else the qualified class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__module__ + "." + type(obj).__qualname__


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted for compatibility: ember's kernels are deterministic on cpu."""


def are_deterministic_algorithms_enabled() -> bool:
    """True: ember's cpu kernels are deterministic."""
    return True


def set_default_tensor_type(t) -> None:
    """Legacy: sets the default floating dtype from a tensor type such as ``ember.DoubleTensor``."""
    dt = _legacy.parse_type_string(t)[0] if isinstance(t, str) else t._legacy_dtype
    D.set_default_dtype(dt)


def plugins():
    """The plugins ember knows about (loading them if needed): name -> ``PluginInfo``."""
    _plugins.load()
    return dict(_plugins.plugins)
