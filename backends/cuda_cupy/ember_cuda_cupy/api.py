"""``ember.cuda``'s functions and classes (the core's ``ember.cuda`` forwards unknown names to
``backend.cuda_api``, an instance of :class:`CudaAPI`)."""
from __future__ import annotations

from collections import namedtuple

from . import _cupy

_DeviceProperties = namedtuple("_CudaDeviceProperties", "name total_memory major minor multi_processor_count")


def _cp():
    return _cupy.module()


def _index(device=None) -> int:
    """A device index from None (current), an int, a string or an ember.device."""
    if device is None:
        return _cp().cuda.runtime.getDevice()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    import ember
    d = ember.device(device) if not hasattr(device, "_type") else device
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index if d.index is not None else _cp().cuda.runtime.getDevice()


class Stream:
    """A CUDA stream (``ember.cuda.Stream()``): work queued under ``with ember.cuda.stream(s)``
    runs on it, in order, concurrently with other streams."""

    def __init__(self, device=None, priority: int = 0, _cupy_stream=None):
        cp = _cp()
        self.device_index = _index(device)
        with cp.cuda.Device(self.device_index):
            self._s = _cupy_stream if _cupy_stream is not None else cp.cuda.Stream(non_blocking=True)

    @property
    def device(self):
        import ember
        return ember.device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        return self._s.ptr

    def synchronize(self) -> None:
        self._s.synchronize()

    def query(self) -> bool:
        return bool(self._s.done)

    def wait_event(self, event: "Event") -> None:
        self._s.wait_event(event._e)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and other._s.ptr == self._s.ptr

    def __hash__(self):
        return hash(self._s.ptr)

    def __enter__(self):
        self._ctx = _StreamContext(self)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self._s.ptr:#x}>"


class Event:
    """A CUDA event: ``record`` on a stream, ``synchronize``, ``elapsed_time`` (milliseconds)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self._e = _cp().cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        self._e.record(stream._s if stream is not None else _cp().cuda.get_current_stream())
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        (stream._s if stream is not None else _cp().cuda.get_current_stream()).wait_event(self._e)

    def synchronize(self) -> None:
        self._e.synchronize()

    def query(self) -> bool:
        return bool(self._e.done)

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("elapsed_time: both events must be recorded first")
        end_event._e.synchronize()
        return float(_cp().cuda.get_elapsed_time(self._e, end_event._e))

    def __repr__(self):
        return f"<ember.cuda.Event enable_timing={self.enable_timing}>"


class _StreamContext:
    """``with ember.cuda.stream(s):`` makes ``s`` the current stream of its device."""

    def __init__(self, stream: Stream | None):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return None
        cp = _cp()
        self._dev = cp.cuda.Device(self.stream.device_index)
        self._dev.__enter__()
        self._s = self.stream._s
        self._s.__enter__()
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        self._s.__exit__(*exc)
        self._dev.__exit__(*exc)
        return False


class _DeviceContext:
    """``with ember.cuda.device(1):`` makes device 1 current, then restores the previous one."""

    def __init__(self, device):
        self.idx = -1 if device is None or (isinstance(device, int) and device < 0) else _index(device)

    def __enter__(self):
        if self.idx < 0:
            return self
        cp = _cp()
        self.prev = cp.cuda.runtime.getDevice()
        if self.idx != self.prev:
            cp.cuda.runtime.setDevice(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev:
            _cp().cuda.runtime.setDevice(self.prev)
        return False


class CudaAPI:
    """What ``ember.cuda`` offers beyond ``is_available``/``device_count`` (which the core
    answers itself)."""

    Stream = Stream
    Event = Event

    def __init__(self, backend):
        self._backend = backend
        self._peak_reserved: dict = {}

    # -- devices ---------------------------------------------------------------------------------
    def is_available(self) -> bool:
        return self._backend.availability()[0]

    def device_count(self) -> int:
        return self._backend.device_count()

    def is_initialized(self) -> bool:
        return self._backend.availability()[0]

    def init(self) -> None:
        ok, reason = self._backend.availability()
        if not ok:
            raise RuntimeError(reason)

    def _require(self):
        ok, reason = self._backend.availability()
        if not ok:
            raise RuntimeError(f"ember.cuda: {reason}")
        return _cp()

    def current_device(self) -> int:
        self._require()
        return self._backend.current_device()

    def set_device(self, device) -> None:
        self._require()
        idx = _index(device)
        if idx >= 0:
            self._backend.set_device(idx)

    def device(self, device) -> _DeviceContext:
        self._require()
        return _DeviceContext(device)

    def device_of(self, obj) -> _DeviceContext:
        return _DeviceContext(obj.get_device() if obj.is_cuda else -1)

    def synchronize(self, device=None) -> None:
        cp = self._require()
        import ember
        self._backend.synchronize(None if device is None else ember.device("cuda", _index(device)))
        _ = cp

    def get_device_name(self, device=None) -> str:
        self._require()
        return self._backend.device_name(_index(device))

    def get_device_properties(self, device=None):
        cp = self._require()
        p = cp.cuda.runtime.getDeviceProperties(_index(device))
        name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
        return _DeviceProperties(name, int(p["totalGlobalMem"]), int(p["major"]), int(p["minor"]),
                                 int(p["multiProcessorCount"]))

    def get_device_capability(self, device=None) -> tuple:
        p = self.get_device_properties(device)
        return (p.major, p.minor)

    # -- random ----------------------------------------------------------------------------------
    def _gen(self, idx):
        """The default generator of device ``cuda:idx`` (an ``ember.Generator``)."""
        import ember
        from ember.ops.random import default_generator
        return default_generator(ember.device("cuda", idx))

    def manual_seed(self, seed: int) -> None:
        """Seed the current device's default generator."""
        self._require()
        self._gen(self._backend.current_device()).manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        """Seed every cuda device's default generator."""
        self._require()
        for i in range(self._backend.device_count()):
            self._gen(i).manual_seed(seed)

    def seed(self) -> None:
        self._require()
        self._gen(self._backend.current_device()).seed()

    def seed_all(self) -> None:
        import secrets
        self.manual_seed_all(secrets.randbits(63))

    def initial_seed(self) -> int:
        self._require()
        return self._gen(self._backend.current_device()).initial_seed()

    def get_rng_state(self, device="cuda"):
        self._require()
        return self._gen(_index(device)).get_state()

    def set_rng_state(self, new_state, device="cuda") -> None:
        self._require()
        self._gen(_index(device)).set_state(new_state)

    def get_rng_state_all(self) -> list:
        return [self.get_rng_state(i) for i in range(self._backend.device_count())]

    def set_rng_state_all(self, new_states) -> None:
        for i, s in enumerate(new_states):
            self.set_rng_state(s, i)

    # -- streams -----------------------------------------------------------------------------------
    def current_stream(self, device=None) -> Stream:
        cp = self._require()
        idx = _index(device)
        with cp.cuda.Device(idx):
            return Stream(idx, _cupy_stream=cp.cuda.get_current_stream())

    def default_stream(self, device=None) -> Stream:
        cp = self._require()
        return Stream(_index(device), _cupy_stream=cp.cuda.Stream.null)

    def stream(self, stream: Stream | None) -> _StreamContext:
        self._require()
        return _StreamContext(stream)

    def set_stream(self, stream: Stream) -> None:
        cp = self._require()
        with cp.cuda.Device(stream.device_index):
            stream._s.use()

    # -- memory ------------------------------------------------------------------------------------
    def _pool(self):
        return self._require().get_default_memory_pool()

    def memory_allocated(self, device=None) -> int:
        """Bytes held by live tensors (and other cupy arrays) on the device."""
        cp = self._require()
        with cp.cuda.Device(_index(device)):
            return int(self._pool().used_bytes())

    def max_memory_allocated(self, device=None) -> int:
        """The peak of :meth:`memory_allocated` since the start or the last
        :meth:`reset_peak_memory_stats` (sampled whenever a kernel returns a tensor)."""
        from .arrays import _Peak
        idx = _index(device)
        now = self.memory_allocated(idx)
        peak = max(_Peak.peak.get(idx, 0), now)
        _Peak.peak[idx] = peak
        return peak

    def memory_reserved(self, device=None) -> int:
        """Bytes the caching allocator holds from the driver (in use plus cached)."""
        cp = self._require()
        idx = _index(device)
        with cp.cuda.Device(idx):
            r = int(self._pool().total_bytes())
        self._peak_reserved[idx] = max(self._peak_reserved.get(idx, 0), r)
        return r

    def max_memory_reserved(self, device=None) -> int:
        idx = _index(device)
        self.memory_reserved(idx)
        return self._peak_reserved[idx]

    def reset_peak_memory_stats(self, device=None) -> None:
        from .arrays import _Peak
        idx = _index(device)
        _Peak.peak[idx] = self.memory_allocated(idx)
        self._peak_reserved[idx] = self.memory_reserved(idx)

    reset_max_memory_allocated = reset_peak_memory_stats

    def empty_cache(self) -> None:
        """Give cached, unused blocks back to the driver (cupy's device and pinned pools)."""
        cp = self._require()
        for i in range(self._backend.device_count()):
            with cp.cuda.Device(i):
                cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()

    def mem_get_info(self, device=None) -> tuple:
        cp = self._require()
        with cp.cuda.Device(_index(device)):
            return tuple(int(v) for v in cp.cuda.runtime.memGetInfo())

    def memory_stats(self, device=None) -> dict:
        idx = _index(device)
        return {"allocated_bytes.all.current": self.memory_allocated(idx),
                "allocated_bytes.all.peak": self.max_memory_allocated(idx),
                "reserved_bytes.all.current": self.memory_reserved(idx),
                "reserved_bytes.all.peak": self.max_memory_reserved(idx)}

    def memory_summary(self, device=None, abbreviated: bool = False) -> str:
        s = self.memory_stats(device)
        return "\n".join(f"{k}: {v}" for k, v in s.items())
