"""``ember.backends.mha``: PyTorch's switch for the fused ``nn.MultiheadAttention`` inference
path. ember has one path; the flag is kept so scripts that set it run."""
from __future__ import annotations

__all__ = ["get_fastpath_enabled", "set_fastpath_enabled"]

_fastpath = [True]


def get_fastpath_enabled() -> bool:
    return _fastpath[0]


def set_fastpath_enabled(value: bool) -> None:
    _fastpath[0] = bool(value)
