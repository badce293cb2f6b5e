"""fake ``cupy.cuda.pinned_memory``: page-locked host memory is ordinary host memory here."""
from __future__ import annotations

import numpy as np


class PinnedMemory:
    def __init__(self, size):
        self.size = size
        self.buffer = np.zeros(max(size, 1), np.uint8)
        self.ptr = self.buffer.ctypes.data


class PinnedMemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.offset, self.ptr = mem, offset, mem.ptr + offset

    def __getbuffer__(self):  # pragma: no cover - numpy uses the buffer of .mem.buffer below
        return self.mem.buffer


class PinnedMemoryPool:
    def __init__(self):
        self.allocated = 0

    def malloc(self, size):
        self.allocated += size
        return PinnedMemoryPointer(PinnedMemory(size), 0)

    def free_all_blocks(self):
        pass

    def n_free_blocks(self):
        return 0


default_pool = PinnedMemoryPool()


def alloc_pinned_memory(size):
    return default_pool.malloc(size)
