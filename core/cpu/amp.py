"""``ember.cpu.amp``: PyTorch's deprecated cpu spellings of :mod:`ember.amp` (each warns with
PyTorch's FutureWarning and forwards to ``ember.amp`` with ``device_type='cpu'``)."""
from __future__ import annotations

from .. import _dtype as D
from ..amp import _deprecated

__all__ = ["autocast", "GradScaler"]

autocast = _deprecated.device_autocast("cpu", D.bfloat16)
GradScaler = _deprecated.device_grad_scaler("cpu")
