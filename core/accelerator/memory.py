"""``ember.accelerator.memory``: PyTorch's device-neutral memory figures, read from the
accelerator backend's ``memory_stats`` (``allocated_bytes.all.current``...)."""
from __future__ import annotations

from collections import OrderedDict

from .. import _devices
from .._device import device as _device_cls
from ._current import accelerator_backend, device_index_of

__all__ = ["empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated", "max_memory_reserved",
           "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats"]


def _device(device_index):
    idx = device_index_of(device_index, optional=True)
    be = accelerator_backend(required=True)
    return be, _devices.canonical(_device_cls(be.device_type, idx))


def empty_cache() -> None:
    """Give the accelerator's cached free blocks back to its driver."""
    accelerator_backend(required=True).empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory; ember keeps none beyond the backend's own pool, so
    this only checks that an accelerator is there."""
    accelerator_backend(required=True)


def memory_stats(device_index=None, /) -> OrderedDict:
    """The backend's allocator counters for a device, sorted by name (PyTorch's flat keys, such as
    ``allocated_bytes.all.current``; a backend reports the ones it keeps)."""
    be, dev = _device(device_index)
    return OrderedDict(sorted(be.memory_stats(dev).items()))


def memory_allocated(device_index=None, /) -> int:
    """Bytes held by live tensors on the device."""
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /) -> int:
    """The peak of ``memory_allocated`` since the start or ``reset_peak_memory_stats``."""
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /) -> int:
    """Bytes the backend's allocator holds (live tensors and its cache)."""
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index=None, /) -> int:
    """The peak of ``memory_reserved``, where the backend keeps it."""
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device_index=None, /) -> None:
    """Restart the peak counters from the current values."""
    be, dev = _device(device_index)
    be.reset_peak_memory_stats(dev)


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    """Reset the historical totals; ember's backends keep none (current and peak only), so this
    only checks the device."""
    _device(device_index)


def get_memory_info(device_index=None, /) -> tuple:
    """``(free, total)`` bytes of the device, where its backend reports them (cuda)."""
    be, dev = _device(device_index)
    return tuple(be.memory_info(dev))
