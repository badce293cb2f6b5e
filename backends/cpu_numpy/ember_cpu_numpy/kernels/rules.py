"""Host-side rules the kernels share, whatever the array module: how 16-bit floats compute,
which dtype reductions accumulate in, numpy's axis argument, and the index checks that raise
before anything is written."""
from __future__ import annotations

import numpy as np

from ember.backend import IndexOutOfRangeError
from ember.backend import dtypes as D

#: bfloat16 (numpy has few bfloat16 loops, ml_dtypes adds the basics: it computes in float32)
BF16 = D.bfloat16
F16 = D.float16
BF16_NP = D.bfloat16.np
F16_NP = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)


def to32(a):
    return a.astype(np.float32)


def work(a):
    """A float32 copy of 16-bit float arrays (float16, bfloat16), else ``a`` (numpy has no fast
    16-bit loops: nn kernels compute in float32 and cast back with :func:`back`)."""
    dt = a.dtype
    if dt.itemsize == 2 and (dt.kind in "fV" or dt.name == "bfloat16"):  # dtype.name is slow: asked last
        return a.astype(np.float32)
    return a


def back(r, dtype):
    """``r`` in ``dtype`` (no copy when it already is)."""
    return r if r.dtype == dtype else r.astype(dtype)


def keep_dtype(a):
    """The accumulator for sum/prod/cumsum/cumprod: float32 for 16-bit floats, the input's own
    dtype for integers (numpy would widen int8..int32 to int64; the contract keeps the dtype)."""
    dt = a.dtype
    if dt.kind in "iub":
        return dt
    return np.float32 if dt is F16_NP or dt is BF16_NP else None


def sum_dtype(a):
    """Accumulate 16-bit floats in float32, as PyTorch does."""
    dt = a.dtype
    return np.float32 if dt is F16_NP or dt is BF16_NP else None


def axes(a, dims):
    """numpy's axis argument: None for a full reduction, which numpy runs faster than the tuple."""
    return None if len(dims) == a.ndim else dims


def index_error(op, idx, size, dim):
    bad = idx[(idx < 0) | (idx >= size)]
    raise IndexOutOfRangeError(f"{op}: index {int(bad.reshape(-1)[0])} is out of bounds for dimension {dim} with "
                               f"size {size}")


def check_idx(op, idx, size, dim):
    """IndexOutOfRangeError naming the first index of ``idx`` outside ``[0, size)``."""
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        index_error(op, idx, size, dim)


def region(a, shape, d):
    """``a`` cut down to ``shape`` in every dim but ``d`` (PyTorch lets index be smaller)."""
    if a.shape == shape:
        return a
    sl = tuple(slice(None) if i == d else slice(0, n) for i, n in enumerate(shape))
    return a[sl]


def check_int_zero(xp, x, y):
    """Integer division by zero is an error (the contract), not numpy's 0 with a warning; an
    empty result divides nothing (PyTorch: ``empty_uint8 // 0`` is empty)."""
    dt = x.dtype if isinstance(x, xp.ndarray) else y.dtype
    if dt.kind in "iub" and (xp.any(y == 0) if isinstance(y, xp.ndarray) else y == 0):
        if 0 not in np.broadcast_shapes(*(v.shape for v in (x, y) if isinstance(v, xp.ndarray))):
            raise RuntimeError("ZeroDivisionError: integer division by zero")
