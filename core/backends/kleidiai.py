"""``ember.backends.kleidiai``: ember uses no KleidiAI kernels."""
from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    return False
