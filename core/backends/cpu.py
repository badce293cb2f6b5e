"""``ember.backends.cpu``: what the cpu backend was built for."""
from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """``"DEFAULT"``: the cpu backend runs numpy's kernels, with no vector-ISA dispatch of its own."""
    return "DEFAULT"
