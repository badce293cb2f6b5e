"""``ember.accelerator``: PyTorch's device-neutral accelerator API, answered by the installed
backends.

PyTorch's accelerator is the one device type it was built for (cuda, xpu, mps...). ember's is
chosen among the installed backends that serve a device type other than ``cpu``: the first that
sees a device, in the order ``cuda``, ``opencl``, then the other types by name; when none sees a
device, the first installed one (as a PyTorch built for CUDA on a machine without a GPU:
``current_accelerator()`` names it, ``is_available()`` is False). With no such backend installed
every call answers as PyTorch does on a CPU-only build: ``current_accelerator()`` is None,
``device_count()`` is 0, and the calls that need a device raise ``RuntimeError``.
"""
from __future__ import annotations

from .. import _devices
from .. import _dtype as D
from .._device import device as _device_cls
from . import memory
from .memory import (empty_cache, empty_host_cache, get_memory_info, max_memory_allocated, max_memory_reserved,
                     memory_allocated, memory_reserved, memory_stats, reset_accumulated_memory_stats,
                     reset_peak_memory_stats)
from ._current import accelerator_backend as _backend
from ._current import accelerator_type as _accelerator_type
from ._current import device_index_of as _device_index_of

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "get_device_capability",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache", "get_memory_info",
           "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize", "memory"]


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as ``ember.device`` (index None: see
    ``current_device_index``), or None; with ``check_available``, None unless it sees a device.
    An OpenCL machine answers ``device(type='opencl')``."""
    typ = _accelerator_type()
    if typ is None or (check_available and not is_available()):
        return None
    return _device_cls(typ)


def is_available() -> bool:
    """True when the accelerator's backend loads and sees at least one device."""
    be = _backend()
    return be is not None and bool(be.availability()[0]) and be.device_count() > 0


def device_count() -> int:
    """The number of devices of the accelerator (0 without one)."""
    be = _backend()
    return be.device_count() if be is not None and be.availability()[0] else 0


def current_device_index() -> int:
    """The index of the accelerator's current device."""
    return _backend(required=True).current_device()


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, ``'opencl:1'``, a device) the accelerator's current device; a
    negative index does nothing, as in PyTorch."""
    idx = _device_index_of(device, optional=False)
    if idx < 0:
        return
    _backend(required=True).set_device(idx)


current_device_idx = current_device_index  # PyTorch's deprecated spellings
set_device_idx = set_device_index


class device_index:
    """``with ember.accelerator.device_index(1):`` makes device 1 current inside the block and
    restores the previous one after it; ``device_index(None)`` changes nothing."""

    def __init__(self, device, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def synchronize(device=None, /) -> None:
    """Wait until the work queued on ``device`` (default: the current device) has finished."""
    idx = _device_index_of(device, optional=True)
    be = _backend(required=True)
    be.synchronize(_devices.canonical(_device_cls(be.device_type, idx)))


def get_device_capability(device=None, /) -> dict:
    """``{"supported_dtypes": set of dtypes}`` the accelerator's backend can allocate."""
    _device_index_of(device, optional=True)
    be = _backend(required=True)
    return {"supported_dtypes": {d for d in D.ALL_DTYPES if d.name in be.dtypes}}


def _stream_api(name: str):
    be = _backend(required=True)
    if be.cuda_api is None:
        raise NotImplementedError(f"ember.accelerator.{name}: backend '{be.name}' (device type "
                                  f"'{be.device_type}') has no stream API; its work runs in order on one queue")
    return be.cuda_api


def current_stream(device=None, /):
    """The current stream of ``device`` (backends with a stream API: cuda)."""
    idx = _device_index_of(device, optional=True)
    return _stream_api("current_stream").current_stream(idx)


def set_stream(stream, /) -> None:
    """Make ``stream`` current (backends with a stream API: cuda)."""
    _stream_api("set_stream").set_stream(stream)

