"""``ember.nn.modules.fold``: PyTorch's module path of ``Fold`` and ``Unfold`` (defined with the
convolutions), which checkpoints and allow-lists name."""
from __future__ import annotations

from .conv import Fold, Unfold

__all__ = ["Fold", "Unfold"]
