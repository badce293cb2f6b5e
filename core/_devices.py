"""Canonical devices: the interned ``device`` objects tensors carry, bound to their backend.

Tensors on the same device share one device object, so dispatch compares devices by identity
and reaches the backend's kernel table in one attribute lookup (``t._device._kernels``).
"""
from __future__ import annotations

import threading

from ._device import device
from . import _plugins

_canon: dict = {}   # (type, index) and spec strings -> canonical device
_lock = threading.Lock()
#: called with each canonical device when it is first made (a running profiler times its kernels);
#: the slow path only: a device is made once
new_device_hooks: list = []


def canonical(d) -> device:
    """The canonical device for a device argument (str, device or int); loads its backend."""
    c = _canon.get(d) if d.__class__ is str else None
    if c is not None:
        return c
    if d.__class__ is not device:
        d = device(d)
    c = _canon.get((d._type, d._index))
    if c is not None:
        return c
    backend = _plugins.backend_for(d._type)
    index = d._index
    if d._type != "cpu":
        if index is None:
            index = backend.current_device()
        n = backend.device_count()
        if index >= n:
            raise RuntimeError(
                f"Invalid device {d._type}:{index}: backend '{backend.name}' sees {n} {d._type} device(s)"
                + ("" if n else f" ({backend.availability()[1]})"))
    elif index not in (None, 0):
        raise RuntimeError(f"Invalid device cpu:{index}: there is one cpu device (cpu or cpu:0)")
    else:
        index = None
    with _lock:
        key = (d._type, index)
        c = _canon.get(key)
        if c is None:
            c = device(d._type, index)
            c._backend = backend
            c._kernels = backend.kernels
            _canon[key] = c
            for hook in new_device_hooks:
                hook(c)
        # "cuda" without an index means the current device, which may change: not cached
        if d._index is not None or d._type == "cpu":
            _canon[(d._type, d._index)] = c
            _canon[str(d)] = c
    return c


def cpu() -> device:
    c = _canon.get("cpu")
    return c if c is not None else canonical("cpu")


def forget(device_type: str) -> None:
    """Drop canonical devices of a type (when its backend is unregistered)."""
    with _lock:
        for k in [k for k, v in _canon.items() if v._type == device_type]:
            del _canon[k]
