"""The cpu_numpy backend: device ``cpu``, tensors in host memory as numpy arrays.

Storage data is a flat numpy array; each tensor caches its numpy view (``t._native``, see
:mod:`.arrays`). The kernel table is the kernel library (:mod:`ember_cpu_numpy.kernels`) built
over numpy, plus the numpy-only recurrent-layer kernels.
"""
from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

import numpy as np

from ember.backend import Backend, BackendGenerator, SharedSegment, UntypedStorage, contiguous_strides
from ember.backend import dtypes as D
from ember.backend import make_tensor as _make

from . import kernels
from . import fusion
from .arrays import ember_dtype, nd, wrap  # noqa: F401  (nd, wrap: the documented kernel helpers)
from .kernels import OUT_KERNELS  # noqa: F401
from .kernels import factorizations, rnn, spectral

NUMPY = kernels.numpy_namespace()


# -- malloc tuning (when the backend is first used, never on import) -----------------------------------

MALLOC_TUNED = None  # None: not tried yet; then whether mallopt took the settings


def keep_freed_memory() -> bool:
    """Ask glibc to serve large blocks from its heap and keep freed memory (as PyTorch's CPU
    allocator effectively does). numpy allocates every kernel's result afresh; with glibc's
    defaults each block over ~128 KiB is mmap'ed and unmapped again, so every training step
    re-faults its activations page by page: a third of a conv net's CPU time went to the kernel.
    Set ``EMBER_CPU_MALLOC_TUNING=0`` to keep the process's allocator settings."""
    if os.environ.get("EMBER_CPU_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 256 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        return False


class NumpyGenerator(BackendGenerator):
    """A seeded PCG64 stream; its state serialises to plain bytes (never a pickle): PCG64's
    state and increment (16 bytes each), the cached 32-bit half (flag byte, uint32) and the seed."""

    def reset(self, seed: int) -> None:
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def get_state(self) -> np.ndarray:
        st = self.rng.bit_generator.state
        s, inc = st["state"]["state"], st["state"]["inc"]
        raw = (s.to_bytes(16, "little") + inc.to_bytes(16, "little")
               + struct.pack("<BI", st["has_uint32"], st["uinteger"]) + self._seed.to_bytes(8, "little"))
        return np.frombuffer(raw, dtype=np.uint8).copy()

    def set_state(self, arr: np.ndarray) -> None:
        raw = bytes(np.asarray(arr, dtype=np.uint8))
        if len(raw) != 45:
            raise RuntimeError(f"set_state: expected a cpu generator state of 45 bytes, got {len(raw)}")
        s = int.from_bytes(raw[:16], "little")
        inc = int.from_bytes(raw[16:32], "little")
        has, uint = struct.unpack("<BI", raw[32:37])
        self._seed = int.from_bytes(raw[37:45], "little")
        bg = np.random.PCG64()
        bg.state = {"bit_generator": "PCG64", "state": {"state": s, "inc": inc}, "has_uint32": has, "uinteger": uint}
        self.rng = np.random.Generator(bg)


class NumpyBackend(Backend):
    """Device ``cpu``: numpy arrays in host memory."""

    #: written for ember's plugin API 1 (a literal: ember refuses the backend when its own differs)
    plugin_api_version = 1
    KERNELS = {**kernels.build_table(NUMPY), **rnn.KERNELS, **factorizations.KERNELS, **spectral.KERNELS}
    out_kernels = OUT_KERNELS
    dtypes = frozenset(d.name for d in D.ALL_DTYPES)

    def __init__(self) -> None:
        super().__init__()
        global MALLOC_TUNED
        if MALLOC_TUNED is None:  # the first use of the cpu device, once per process
            MALLOC_TUNED = keep_freed_memory()

    def availability(self):
        return True, ""

    def device_count(self) -> int:
        return 1

    def device_name(self, index) -> str:
        return platform.processor() or platform.machine() or "cpu"

    def empty(self, shape, dtype, device):
        try:
            a = np.empty(shape, dtype=dtype.np)
        except (MemoryError, ValueError) as e:  # ValueError: numpy's "array is too big"
            raise RuntimeError(f"can't allocate memory: you tried to allocate a {dtype.name} tensor of shape "
                               f"{list(shape)} ({e})") from None
        return wrap(a, device)

    def from_numpy(self, array, device, non_blocking: bool = False):
        """Shares memory with ``array`` (positive strides, multiples of the item size)."""
        dt = ember_dtype(array.dtype)
        isz = array.itemsize
        if array.flags.c_contiguous:
            flat = array.reshape(-1)
            st = contiguous_strides(array.shape)
            return _make(UntypedStorage(flat, array.nbytes, device), array.shape, st, 0, dt, device, array)
        if array.size == 0:
            return wrap(np.empty(array.shape, array.dtype), device)
        span = 1 + sum((s - 1) * (st // isz) for s, st in zip(array.shape, array.strides))
        flat = np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(isz,))
        st = tuple(s // isz for s in array.strides)
        return _make(UntypedStorage(flat, span * isz, device), array.shape, st, 0, dt, device, array)

    def to_numpy(self, tensor) -> np.ndarray:
        return nd(tensor).view()

    def data_ptr(self, storage) -> int:
        return storage._data.ctypes.data if storage._nbytes else 0

    def create_generator(self, device):
        return NumpyGenerator()

    # -- shared memory (ember.multiprocessing): the buffer moves into a SharedSegment ----------------
    supports_sharing = True

    def share_memory_(self, storage) -> None:
        """Copy the buffer into a new shared segment and rebind ``storage._data`` to it (the
        storage object, and so every view, stays; ``nd`` rebuilds the stale numpy views)."""
        if storage.backend_state is not None:
            return
        old = storage._data
        seg = SharedSegment.create(max(storage._nbytes, old.nbytes))
        new = np.frombuffer(seg.buffer, dtype=old.dtype, count=old.size)
        if old.size:
            np.copyto(new, old.reshape(-1))
        storage._data = new
        storage.backend_state = seg

    def is_shared(self, storage) -> bool:
        return storage.backend_state is not None

    def shared_segment(self, storage):
        if storage.backend_state is None:
            self.share_memory_(storage)
        return storage.backend_state

    def storage_from_segment(self, segment, nbytes: int, device):
        s = UntypedStorage(np.frombuffer(segment.buffer, dtype=np.uint8, count=nbytes), nbytes, device)
        s.backend_state = segment
        return s

    def synchronize(self, device=None) -> None:
        return None

    def fuse_elementwise(self, chain):
        """One numexpr expression per chain when numexpr is installed (:mod:`.fusion`), else None."""
        return fusion.fuse_elementwise(chain)

    def set_num_threads(self, n: int) -> None:
        """Limit numpy's BLAS (and OpenMP) thread pools to ``n`` threads (threadpoolctl)."""
        from threadpoolctl import threadpool_limits
        self._thread_limits = threadpool_limits(limits=n)

    def get_num_threads(self) -> int:
        from threadpoolctl import threadpool_info
        counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        return max(counts) if counts else 1
