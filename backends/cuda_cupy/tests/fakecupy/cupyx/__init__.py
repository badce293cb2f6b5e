"""fake ``cupyx``: pinned host arrays and ``scatter_add``."""
import numpy as _np

from . import scipy  # noqa: F401

pinned: list = []  # ids of the buffers handed out, for tests


def empty_pinned(shape, dtype=float, order="C"):
    a = _np.empty(shape, dtype=dtype, order=order)
    pinned.append(a.ctypes.data)
    return a


def zeros_pinned(shape, dtype=float, order="C"):
    a = empty_pinned(shape, dtype, order)
    a[...] = 0
    return a


def scatter_add(a, slices, value):
    import cupy
    cupy.add.at(a, slices, value)
