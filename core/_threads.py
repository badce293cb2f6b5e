"""Thread counts: ``ember.set_num_threads`` reaches every backend's pools (cpu_numpy: its BLAS
threads), for backends loaded now and later; the inter-op count is recorded only (ops run on
the calling thread)."""
from __future__ import annotations

import os

from . import _plugins, _state

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads"]


def _positive_int(n, fn: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{fn} expects a positive integer, got {n!r}")
    return n


def set_num_threads(n: int) -> None:
    """Threads each backend may use inside one op (cpu_numpy: its BLAS threads); applies to
    backends loaded now and later. DataLoader workers set 1, as in PyTorch."""
    _state.threads.n = _positive_int(n, "set_num_threads")
    for be in _plugins.loaded_backends():
        be.set_num_threads(n)


def get_num_threads() -> int:
    """The thread count set with :func:`set_num_threads`, or what the cpu backend uses."""
    if _state.threads.n is not None:
        return _state.threads.n
    for be in _plugins.loaded_backends():
        n = be.get_num_threads() if be.device_type == "cpu" else None
        if n is not None:
            return n
    return os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Accepted for compatibility: ember runs ops on the calling thread, there is no inter-op
    pool to size. The value is checked and reported back by :func:`get_num_interop_threads`."""
    _state.threads.interop = _positive_int(n, "set_num_interop_threads")


def get_num_interop_threads() -> int:
    """The inter-op thread count set with :func:`set_num_interop_threads` (1 by default)."""
    return _state.threads.interop
