"""``ember.cuda.amp``: PyTorch's deprecated cuda spellings of :mod:`ember.amp` (each warns with
PyTorch's FutureWarning and forwards to ``ember.amp`` with ``device_type='cuda'``)."""
from __future__ import annotations

from .. import _dtype as D
from ..amp import _deprecated

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler"]

autocast = _deprecated.device_autocast("cuda", D.float16)
GradScaler = _deprecated.device_grad_scaler("cuda")
custom_fwd = _deprecated.cuda_custom_fwd
custom_bwd = _deprecated.cuda_custom_bwd
