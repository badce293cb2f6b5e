"""fake ``cupy.cuda.memory``: a pool of host buffers standing for device memory, with cupy's
accounting (``used_bytes``: live allocations, rounded to 512 bytes; ``total_bytes``: used plus
cached free blocks; ``free_all_blocks``), and real host addresses as pointers."""
from __future__ import annotations

import ctypes

import numpy as np

_ROUND = 512


class Memory:
    def __init__(self, pool, size, device, buffer=None):
        self.pool, self.size, self.device = pool, size, device
        self.buffer = np.zeros(max(size, 1), np.uint8) if buffer is None else buffer
        self.ptr = self.buffer.ctypes.data
        pool._used += size

    def __del__(self):
        try:
            self.pool._release(self)
        except Exception:
            pass


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.offset = mem, offset
        self.ptr = mem.ptr + offset
        self.device = mem.device
        self.device_id = mem.device.id

    def __add__(self, n):
        return MemoryPointer(self.mem, self.offset + int(n))

    def __int__(self):
        return self.ptr

    def copy_from_device(self, src, size):
        ctypes.memmove(self.ptr, src.ptr, size)

    def copy_from_host(self, mem, size):
        ctypes.memmove(self.ptr, mem if isinstance(mem, int) else mem.ptr, size)

    def copy_to_host(self, mem, size):
        ctypes.memmove(mem if isinstance(mem, int) else mem.ptr, self.ptr, size)

    def memset(self, value, size):
        ctypes.memset(self.ptr, value, size)


class MemoryPool:
    def __init__(self):
        self._used = 0
        self._free: dict = {}  # rounded size -> [buffers]
        self._cached = 0
        self.mallocs = 0

    def malloc(self, size):
        from . import _current_device
        size = -(-int(size) // _ROUND) * _ROUND
        self.mallocs += 1
        buf = None
        lst = self._free.get(size)
        if lst:
            buf = lst.pop()
            self._cached -= size
            buf[...] = 0xAB  # recycled memory is not zeroed (as on a GPU)
        return MemoryPointer(Memory(self, size, _current_device(), buf), 0)

    def _release(self, mem):
        self._used -= mem.size
        if mem.size and len(mem.buffer) == mem.size and mem.pool is self and getattr(mem, "pooled", True):
            self._free.setdefault(mem.size, []).append(mem.buffer)
            self._cached += mem.size

    def used_bytes(self):
        return self._used

    def total_bytes(self):
        return self._used + self._cached

    def free_bytes(self):
        return self._cached

    def free_all_blocks(self, stream=None):
        self._free.clear()
        self._cached = 0

    def n_free_blocks(self):
        return sum(len(v) for v in self._free.values())

    def set_limit(self, size=None, fraction=None):
        self.limit = size

    def get_limit(self):
        return getattr(self, "limit", 0)


default_pool = MemoryPool()
_allocator = default_pool.malloc


def alloc(size):
    return _allocator(size)


def set_allocator(allocator=None):
    global _allocator
    _allocator = allocator or default_pool.malloc


def adopt(arr: np.ndarray) -> Memory:
    """The allocation of an array numpy made (a kernel's result): counted as used while alive."""
    from . import _current_device
    base = arr
    while isinstance(base.base, np.ndarray):
        base = base.base
    m = Memory.__new__(Memory)
    m.pool, m.size, m.device, m.buffer = default_pool, base.nbytes, _current_device(), base
    m.ptr = base.ctypes.data
    m.pooled = False
    default_pool._used += m.size
    return m
