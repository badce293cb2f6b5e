"""Tensor signatures as a few integers: what ranks exchange to check that their arguments agree
(collectives) and what a sender puts in front of a point-to-point message."""
from __future__ import annotations

import zlib

from .. import _dtype as D

# fixed codes (the same on every rank whatever the registry's order)
DTYPE_CODES = {name: i + 1 for i, name in enumerate(
    ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"))}
DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
MAX_DIMS = 6          # dims sent explicitly (a hash of the whole shape covers longer ones)
SIG_LEN = 4 + MAX_DIMS  # dtype, ndim, numel, shape hash, dims...
NONE_SIG = [0] * SIG_LEN


def shape_hash(shape) -> int:
    return zlib.crc32(",".join(str(int(s)) for s in shape).encode()) & 0x7FFFFFFF


def signature(t) -> list:
    """``[dtype code, ndim, numel, shape hash, d0, d1, ...]`` (padded with -1)."""
    if t is None:
        return list(NONE_SIG)
    shape = t._shape
    dims = [int(s) for s in shape[:MAX_DIMS]] + [-1] * (MAX_DIMS - min(len(shape), MAX_DIMS))
    return [DTYPE_CODES[t._dtype.name], len(shape), t.numel(), shape_hash(shape)] + dims


def describe(sig) -> str:
    """``float32[4, 3]`` from a signature (``?`` for dims beyond the ones sent)."""
    sig = list(sig)
    if sig[0] == 0:
        return "nothing"
    name = DTYPE_NAMES.get(sig[0], f"dtype#{sig[0]}")
    ndim = sig[1]
    dims = [str(d) for d in sig[4:4 + min(ndim, MAX_DIMS)]]
    if ndim > MAX_DIMS:
        dims.append(f"... ({ndim} dims, {sig[2]} elements)")
    return f"{name}[{', '.join(dims)}]"


def dtype_of(sig):
    return getattr(D, DTYPE_NAMES[sig[0]])


def nbytes_of(sig) -> int:
    return sig[2] * dtype_of(sig).itemsize if sig[0] else 0
