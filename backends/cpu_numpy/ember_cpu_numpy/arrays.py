"""cpu tensors <-> numpy arrays: the two adapters every cpu kernel is written with.

A cpu storage's ``_data`` is a flat numpy array; ``nd(t)`` is a tensor's numpy view (its shape,
strides and offset over that array, cached on the tensor), ``wrap(a, device)`` a new tensor owning
a kernel's result. They are public for kernel authors (plugins register cpu kernels with them).
"""
from __future__ import annotations

import numpy as np

from ember.backend import Tensor, contiguous_strides, dtype_from_numpy
from ember.backend import make_owning_tensor as _own

_CSTRIDES: dict = {}  # shape -> C-contiguous strides (in elements)
_FROM_NP: dict = {}  # numpy dtype -> ember dtype


def ember_dtype(npdt):
    """The ember dtype of numpy dtype ``npdt`` (cached)."""
    d = _FROM_NP.get(npdt)
    if d is None:
        d = dtype_from_numpy(npdt)
        _FROM_NP[npdt] = d
    return d


def nd(t: Tensor) -> np.ndarray:
    """The numpy view of a cpu tensor (cached on the tensor).

    A storage moved into shared memory (``backend_state`` holds its segment) has a new ``_data``:
    a view cached before the move is stale and is rebuilt (a view made here has ``_data`` as its
    ``base``)."""
    a = t._native
    s = t._storage
    if a is None or (s.backend_state is not None and a.base is not s._data):
        isz = t._dtype.itemsize
        a = np.ndarray(t._shape, t._dtype.np, s._data, t._offset * isz, tuple(s * isz for s in t._stride))
        t._native = a
    return a


def wrap(a, device) -> Tensor:
    """A tensor owning numpy array ``a`` (kernel results)."""
    if a.__class__ is not np.ndarray:
        a = np.asarray(a)
    dt = _FROM_NP.get(a.dtype)
    if dt is None:
        dt = ember_dtype(a.dtype)
    shape = a.shape
    if a.flags.c_contiguous:
        st = _CSTRIDES.get(shape)
        if st is None:
            st = contiguous_strides(shape)
            _CSTRIDES[shape] = st
        return _own(a.ravel(), a.nbytes, shape, st, dt, device, a)
    flat = a.ravel(order="K")
    if (flat.base is a or (a.base is not None and flat.base is a.base)) and all(s >= 0 for s in a.strides):
        isz = a.itemsize
        st = tuple(s // isz for s in a.strides)
    else:
        a = np.ascontiguousarray(a)
        flat = a.reshape(-1)
        st = contiguous_strides(shape)
    return _own(flat, a.nbytes, shape, st, dt, device, a)
