"""``ember.backends.cudnn``: PyTorch's cuDNN switches, accepted so scripts that set them run;
the cuda backend reads ``allow_tf32`` for convolutions (True by default, as PyTorch)."""
from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None


def is_acceptable(tensor) -> bool:
    """False: no ember backend runs cuDNN."""
    return False
