"""``ember.backends.mkldnn``: oneDNN switches, accepted so scripts that set them run; ember uses
no oneDNN, so ``is_available()`` is False and the flags change nothing."""
from __future__ import annotations

__all__ = ["is_available", "enabled", "deterministic", "allow_tf32"]

enabled = True
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: ember's backends do not use oneDNN (MKL-DNN)."""
    return False
