"""``ember.backends.openmp``: ember's backends run no OpenMP of their own."""
from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember is not built with OpenMP (``ember.set_num_threads`` sizes the backends' own pools)."""
    return False
