"""``ember.backends.mps``: Apple's Metal backend, which ember does not have (no ``mps`` device
type is installed): every query answers False, as PyTorch on a machine without MPS."""
from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos13_or_newer", "is_macos_or_newer"]


def is_built() -> bool:
    """False: no ember backend serves ``mps``."""
    return False


def is_available() -> bool:
    """False: no ember backend serves ``mps``."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    """False, as PyTorch answers where MPS is not available."""
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    """False, as PyTorch answers where MPS is not available."""
    return False
