"""The cuda random generator: cuRAND's Philox4x32-10 (through cupy's ``cupy.cuda.curand``), with
PyTorch's model of a counter-based state: a seed and an offset. Each fill sets the generator's
offset explicitly and then advances it past every number it could have drawn (rounded up to a
multiple of 4 words, Philox's block), so draws never overlap and ``get_state``/``set_state`` (16
bytes: seed, offset) reproduce any later stream exactly.

``gen.rng`` offers the two calls the kernel library's random kernels make (``random``,
``standard_normal``), so ``uniform_``, ``normal_`` and dropout run unchanged on cuda.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from ember.backend import BackendGenerator

from .arrays import cp


class _Draws:
    def __init__(self, gen):
        self._gen = gen

    def random(self, shape, dtype=np.float32):
        """Uniform samples in [0, 1) (cuRAND's are in (0, 1]: 1 - u)."""
        u = self._gen.draw(shape, dtype, "uniform")
        return cp.subtract(1.0, u, out=u)

    def standard_normal(self, shape, dtype=np.float32):
        return self._gen.draw(shape, dtype, "normal")


class CurandGenerator(BackendGenerator):
    """One device's generator (``Backend.create_generator``); seeding is the base class's."""

    def __init__(self, device_index: int):
        self._index = device_index
        self._handle = None
        self._seeded = None
        self.rng = _Draws(self)
        super().__init__()

    def reset(self, seed: int) -> None:
        self._offset = 0  # the cuRAND generator is reseeded lazily (_curand_handle)

    def get_state(self) -> np.ndarray:
        return np.frombuffer(struct.pack("<QQ", self._seed, self._offset), dtype=np.uint8).copy()

    def set_state(self, arr) -> None:
        raw = bytes(np.asarray(arr, dtype=np.uint8))
        if len(raw) != 16:
            raise RuntimeError(f"set_state: expected a cuda generator state of 16 bytes (seed, offset), got {len(raw)}")
        self._seed, self._offset = struct.unpack("<QQ", raw)

    def _curand_handle(self):
        curand = cp.cuda.curand
        if self._handle is None:
            self._handle = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
        if self._seeded != self._seed:
            curand.setPseudoRandomGeneratorSeed(self._handle, self._seed)
            self._seeded = self._seed
        return self._handle

    def draw(self, shape, dtype, kind: str):
        """A new float32/float64 cupy array of ``shape``: cuRAND uniform (0, 1] or standard normal."""
        dt = np.dtype(dtype)
        if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            dt = np.dtype(np.float32)
        shape = tuple(shape)
        n = math.prod(shape)
        m = n + (n & 1)  # cuRAND's normal generators want an even count
        buf = cp.empty(max(m, 2), dtype=dt)
        if n:
            curand = cp.cuda.curand
            h = self._curand_handle()
            curand.setGeneratorOffset(h, self._offset)
            curand.setStream(h, cp.cuda.get_current_stream().ptr)
            ptr = buf.data.ptr
            if kind == "uniform":
                (curand.generateUniformDouble if dt.itemsize == 8 else curand.generateUniform)(h, ptr, m)
            else:
                (curand.generateNormalDouble if dt.itemsize == 8 else curand.generateNormal)(h, ptr, m, 0.0, 1.0)
            words = m * (dt.itemsize // 4)
            self._offset += -(-words // 4) * 4
        return buf[:n].reshape(shape)

    def __del__(self):
        if self._handle is not None:
            try:
                cp.cuda.curand.destroyGenerator(self._handle)
            except Exception:
                pass
