"""``ember.cpu``: the cpu device module PyTorch has (``torch.cpu``): availability, a no-op
``synchronize``, and :mod:`ember.cpu.amp`."""
from __future__ import annotations

from . import amp

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    """Always True: the cpu is always there."""
    return True


def device_count() -> int:
    """1, as PyTorch's."""
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: cpu ops finish before they return."""
