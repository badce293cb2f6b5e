"""``ember.backends.mkl``: ember calls no MKL itself (numpy may, underneath the cpu backend), so
``is_available()`` is False and ``verbose`` does nothing."""
from __future__ import annotations

__all__ = ["is_available", "verbose", "VERBOSE_OFF", "VERBOSE_ON"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """False: ember is not built against MKL."""
    return False


class verbose:
    """``with ember.backends.mkl.verbose(VERBOSE_ON):``: accepted and does nothing (no MKL)."""

    def __init__(self, enable) -> None:
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False
