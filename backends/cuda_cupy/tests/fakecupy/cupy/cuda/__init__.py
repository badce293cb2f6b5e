"""fake ``cupy.cuda``: devices, the current device, streams and events (host-synchronous: work
is done when a call returns, so synchronize is a no-op that records that it was called)."""
from __future__ import annotations

import os
import threading
import time

from . import runtime  # noqa: F401
from .runtime import CUDARuntimeError  # noqa: F401

_tls = threading.local()
calls = {"synchronize": 0, "stream_synchronize": 0}


def _current_device() -> "Device":
    d = getattr(_tls, "device", None)
    if d is None:
        d = _tls.device = Device(0)
    return d


def _check_devices(xs) -> None:
    """cupy refuses arrays of another device than the current one."""
    cur = _current_device().id
    for x in xs if isinstance(xs, (list, tuple)) else (xs,):
        if isinstance(x, (list, tuple)):
            _check_devices(x)
            continue
        dev = getattr(x, "device", None)
        if dev is not None and hasattr(x, "_a") and dev.id != cur:
            raise ValueError(f"The device where the array resides ({dev.id}) is different from the current device "
                             f"({cur}). Peer access has been activated?")


class Device:
    def __init__(self, device=None):
        if device is None:
            device = runtime.getDevice()
        self.id = int(device)
        self._prev = []

    def __int__(self):
        return self.id

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"

    def use(self):
        runtime.setDevice(self.id)

    def __enter__(self):
        self._prev.append(_current_device())
        runtime.setDevice(self.id)
        return self

    def __exit__(self, *exc):
        runtime.setDevice(self._prev.pop().id)
        return False

    def synchronize(self):
        calls["synchronize"] += 1

    @property
    def compute_capability(self):
        return "90"

    @property
    def mem_info(self):
        return runtime.memGetInfo()


class Stream:
    null = None

    def __init__(self, null=False, non_blocking=False, ptr=None):
        self.ptr = 0 if null else id(self)
        self.device_id = _current_device().id
        self._prev = []

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self):
        return hash(self.ptr)

    def synchronize(self):
        calls["stream_synchronize"] += 1

    @property
    def done(self):
        return True

    def use(self):
        _tls.stream = self
        return self

    def __enter__(self):
        self._prev.append(get_current_stream())
        _tls.stream = self
        return self

    def __exit__(self, *exc):
        _tls.stream = self._prev.pop()
        return False

    def record(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event):
        self.waited = getattr(self, "waited", []) + [event]


Stream.null = Stream(null=True)
ExternalStream = Stream


def get_current_stream(device_id=None):
    s = getattr(_tls, "stream", None)
    return s if s is not None else Stream.null


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.disable_timing = disable_timing
        self.t = None
        self.stream = None

    def record(self, stream=None):
        self.stream = stream or get_current_stream()
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    @property
    def done(self):
        return self.t is not None


def get_elapsed_time(start, end):
    if start.disable_timing or end.disable_timing:
        raise RuntimeError("cudaErrorInvalidResourceHandle: events created with disable_timing")
    if start.t is None or end.t is None:
        raise RuntimeError("cudaErrorInvalidResourceHandle: event not recorded")
    return (end.t - start.t) * 1000.0


from . import memory, pinned_memory, curand, nccl, cublas, device  # noqa: E402,F401
from .memory import MemoryPointer, alloc, set_allocator  # noqa: E402,F401
from .pinned_memory import alloc_pinned_memory, PinnedMemoryPointer  # noqa: E402,F401


def is_available():
    try:
        return runtime.getDeviceCount() > 0
    except CUDARuntimeError:
        return False


_ = os
