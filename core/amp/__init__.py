"""``ember.amp``: automatic mixed precision, as ``torch.amp``: :class:`autocast` regions (ops
on PyTorch's lists run in float16/bfloat16 or float32), :func:`custom_fwd`/:func:`custom_bwd`
for ``autograd.Function``, and :class:`GradScaler` (dynamic loss scaling). See docs/amp.md."""
from __future__ import annotations

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
