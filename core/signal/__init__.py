"""``ember.signal``: PyTorch's ``torch.signal`` (its ``windows`` submodule; docs/fft.md)."""
from __future__ import annotations

from . import windows

__all__ = ["windows"]
