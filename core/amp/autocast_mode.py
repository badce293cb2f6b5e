"""``ember.autocast`` / ``ember.amp.autocast``: mixed-precision regions, their per-thread state
(``ember.is_autocast_enabled``...) and ``custom_fwd``/``custom_bwd`` for ``autograd.Function``.

The casting itself happens at the op fronts (:mod:`ember.ops.autocast`, which holds PyTorch's op
lists); this module switches it on and off. The state is per thread, as in PyTorch.
"""
from __future__ import annotations

import collections.abc
import functools
import warnings

import numpy as np

from .. import _dtype as D
from .. import _plugins, _state
from .._tensor import Tensor
from ..ops import autocast as AC

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "is_autocast_enabled",
           "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype"]

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


def _supported_dtypes(device_type: str) -> list:
    if device_type in ("cpu", "cuda"):
        return [D.bfloat16, D.float16]
    names = _plugins.backend_for(device_type).dtypes
    return [d for d in (D.bfloat16, D.float16) if d.name in names]


def _cuda_available() -> bool:
    try:
        return _plugins.backend_for("cuda").device_count() > 0
    except RuntimeError:
        return False


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context manager
    or decorator inside which the ops on PyTorch's autocast lists run in ``dtype`` (matmul,
    linear, convolutions) or float32 (losses, reductions...) on ``device_type``, whatever their
    inputs' floating-point dtypes (see docs/amp.md). ``dtype`` defaults to
    :func:`get_autocast_dtype` (bfloat16 on cpu, float16 on cuda and opencl); an unsupported
    one warns and disables the region, as in PyTorch. Regions nest; the state is per thread.
    ``cache_enabled`` (default :func:`is_autocast_cache_enabled`) casts each float32 weight
    that requires grad once per outermost region."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        name = device_type.upper()
        if enabled:
            if device_type == "cuda" and not _cuda_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            else:
                supported = _supported_dtypes(device_type)
                if self.fast_dtype not in supported:
                    warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                                  f"{name} Autocast only supports dtypes of "
                                  f"{', '.join(str(d) for d in supported) or 'none'} currently.", stacklevel=2)
                    enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use "
                            f"autocast as a context manager? For example:\n    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value, device_type: str, dtype):
    """Floating-point tensors (not float64) on ``device_type`` in ``value`` (nested containers)
    cast to ``dtype``."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not D.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def _check_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of an ``autograd.Function``: records the autocast state for
    :func:`custom_bwd`; with ``cast_inputs``, inside an autocast region the floating-point tensor
    arguments are cast to it and ``forward`` runs with autocast disabled."""
    _check_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        used = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if used:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of an ``autograd.Function``: it runs with the autocast
    state its ``forward`` (decorated with :func:`custom_fwd`) ran with."""
    _check_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
