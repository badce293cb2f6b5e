"""fake ``cupy.cuda.curand`` (the host API cupy wraps): a Philox generator per handle, numbers
written through device pointers. Uniform samples are in (0, 1], as cuRAND's; normal generation
wants an even count, as cuRAND's."""
from __future__ import annotations

import ctypes
import itertools

import numpy as np

CURAND_RNG_PSEUDO_DEFAULT = 100
CURAND_RNG_PSEUDO_XORWOW = 101
CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161


class CURANDError(RuntimeError):
    pass


_gens: dict = {}
_ids = itertools.count(1)


def createGenerator(rng_type):
    h = next(_ids)
    _gens[h] = {"type": rng_type, "seed": 0, "offset": 0, "stream": 0}
    return h


def destroyGenerator(h):
    _gens.pop(h, None)


def setPseudoRandomGeneratorSeed(h, seed):
    _gens[h]["seed"] = int(seed)
    _gens[h]["offset"] = 0


def setGeneratorOffset(h, offset):
    _gens[h]["offset"] = int(offset)


def setStream(h, stream):
    _gens[h]["stream"] = stream


def _draw(h, n, kind):
    g = _gens[h]
    bg = np.random.Philox(key=g["seed"] & ((1 << 64) - 1))
    bg.advance(g["offset"])
    rng = np.random.Generator(bg)
    r = rng.random(n) if kind == "u" else rng.standard_normal(n)
    g["offset"] += n
    return r


def _view(ptr, n, dtype):
    c = (ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(ptr)
    return np.frombuffer(c, dtype=dtype, count=n)


def generateUniform(h, ptr, n):
    _view(ptr, n, np.float32)[...] = (1.0 - _draw(h, n, "u")).astype(np.float32)  # (0, 1]


def generateUniformDouble(h, ptr, n):
    _view(ptr, n, np.float64)[...] = 1.0 - _draw(h, n, "u")


def generateNormal(h, ptr, n, mean, std):
    if n % 2:
        raise CURANDError("CURAND_STATUS_LENGTH_NOT_MULTIPLE")
    _view(ptr, n, np.float32)[...] = (_draw(h, n, "n") * std + mean).astype(np.float32)


def generateNormalDouble(h, ptr, n, mean, std):
    if n % 2:
        raise CURANDError("CURAND_STATUS_LENGTH_NOT_MULTIPLE")
    _view(ptr, n, np.float64)[...] = _draw(h, n, "n") * std + mean
