"""``ember.backends.cusparselt``: ember uses no cuSPARSELt."""
from __future__ import annotations

__all__ = ["is_available", "version"]


def is_available() -> bool:
    return False


def version():
    """None: cuSPARSELt is not used."""
    return None
