"""The per-thread autocast state, PyTorch's ``torch.is_autocast_enabled`` family (public as
``ember.<name>``). The state itself is ``ember._state.autocast``, read by the op fronts."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from .. import _plugins, _state
from ..ops import autocast as AC

__all__ = ["is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting", "is_autocast_cpu_enabled",
           "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype"]

_ac = _state.autocast


def _known(device_type) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"expected a device type string such as 'cpu' or 'cuda', got {type(device_type).__name__}")
    if device_type != "cuda" and device_type not in _plugins.device_types():
        raise RuntimeError(f"Expected one of {', '.join(sorted(set(_plugins.device_types()) | {'cuda'}))} device "
                           f"type at start of device string: {device_type}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used on ``device_type`` (every device type with an ember backend)."""
    return isinstance(device_type, str) and (device_type == "cuda" or device_type in _plugins.device_types())


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is enabled for ``device_type`` in this thread (no argument: cuda, deprecated
    in PyTorch)."""
    return bool(_ac.enabled.get(_known(device_type), False))


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Enable or disable autocast for ``device_type`` in this thread (``set_autocast_enabled(True)``:
    cuda)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}")
    _ac.enabled[_known(device_type)] = enabled
    _ac.refresh()


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on ``device_type`` in this thread (bfloat16 on cpu, float16
    elsewhere, until :func:`set_autocast_dtype`)."""
    return AC.autocast_dtype(_known(device_type))


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the dtype autocast casts to on ``device_type`` in this thread."""
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' must be ember.dtype, not {type(dtype).__name__}")
    _ac.dtype[_known(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the low-precision casts of weights in this thread."""
    return _ac.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_cache_enabled(): argument 'enabled' must be bool, not {type(enabled).__name__}")
    _ac.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Drop this thread's cached weight casts (done when the outermost autocast region exits)."""
    AC.clear_cache()


def autocast_increment_nesting() -> int:
    _ac.nesting += 1
    return _ac.nesting


def autocast_decrement_nesting() -> int:
    _ac.nesting -= 1
    return _ac.nesting


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
