"""``ember.backends.nnpack``: ember uses no NNPACK; ``is_available()`` is False and the flags change
nothing."""
from __future__ import annotations

import contextlib

__all__ = ["is_available", "flags", "set_flags"]

_enabled = [False]


def is_available() -> bool:
    """False: ember's convolutions do not use NNPACK."""
    return False


def set_flags(_enabled_nnpack: bool):
    """Set the NNPACK flag (kept, unused); returns the previous flags, as PyTorch."""
    prev = (_enabled[0],)
    _enabled[0] = bool(_enabled_nnpack)
    return prev


@contextlib.contextmanager
def flags(enabled: bool = False):
    """``with flags(enabled=...):`` sets the flag inside the block."""
    prev = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(*prev)
