"""``ember._inductor``: ember has no Inductor; ``config`` accepts the settings scripts tuned for
PyTorch's set (``torch._inductor.config.coordinate_descent_tuning = True``) and none of them has
an effect (docs/compile.md)."""
from __future__ import annotations

from . import config

__all__ = ["config"]
