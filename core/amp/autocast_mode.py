"""``ember.autocast`` / ``ember.amp.autocast``: mixed-precision regions (their per-thread state
is :mod:`ember.amp.state`) and ``custom_fwd``/``custom_bwd`` for ``autograd.Function``.

The casting itself happens at the op fronts (:mod:`ember.ops.autocast`, which holds PyTorch's op
lists); this module switches it on and off. The state is per thread, as in PyTorch.
"""
from __future__ import annotations

import collections.abc
import functools
import warnings

import numpy as np

from .. import _dtype as D
from .. import _plugins
from .._tensor import Tensor
from .state import (autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,
                    get_autocast_dtype, is_autocast_available, is_autocast_cache_enabled, is_autocast_enabled,
                    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled)

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]


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
