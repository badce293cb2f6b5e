"""The device-specific spellings ``torch.cuda.amp`` and ``torch.cpu.amp`` keep: ``autocast``,
``GradScaler`` and (cuda) ``custom_fwd``/``custom_bwd``, with PyTorch's FutureWarnings."""
from __future__ import annotations

import functools
import warnings

from .autocast_mode import autocast as _autocast
from .autocast_mode import custom_bwd as _custom_bwd
from .autocast_mode import custom_fwd as _custom_fwd
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["device_autocast", "device_grad_scaler", "cuda_custom_fwd", "cuda_custom_bwd"]


def _warn(what: str, new: str) -> None:
    warnings.warn(f"`torch.{what}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


def device_autocast(device_type: str, default_dtype):
    """The ``torch.<device_type>.amp.autocast`` class (``autocast(enabled=True, dtype=...,
    cache_enabled=True)``)."""
    class autocast(_autocast):
        __doc__ = (f"See :class:`ember.autocast`. ``torch.{device_type}.amp.autocast(args...)`` is deprecated: use "
                   f"``torch.amp.autocast('{device_type}', args...)``.")

        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True):
            _warn(f"{device_type}.amp.autocast", f"torch.amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
    autocast.__module__ = f"ember.{device_type}.amp"
    return autocast


def device_grad_scaler(device_type: str):
    """The ``torch.<device_type>.amp.GradScaler`` class."""
    class GradScaler(_GradScaler):
        __doc__ = (f"See :class:`ember.amp.GradScaler`. ``torch.{device_type}.amp.GradScaler(args...)`` is "
                   f"deprecated: use ``torch.amp.GradScaler('{device_type}', args...)``.")

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            _warn(f"{device_type}.amp.GradScaler", f"torch.amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    GradScaler.__module__ = f"ember.{device_type}.amp"
    return GradScaler


def cuda_custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.cuda.amp.custom_fwd``: :func:`ember.amp.custom_fwd` with ``device_type='cuda'``
    (deprecated)."""
    _warn("cuda.amp.custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return functools.partial(_custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def cuda_custom_bwd(bwd):
    """``torch.cuda.amp.custom_bwd``: :func:`ember.amp.custom_bwd` with ``device_type='cuda'``
    (deprecated)."""
    _warn("cuda.amp.custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return functools.partial(_custom_bwd, device_type="cuda")(bwd)

