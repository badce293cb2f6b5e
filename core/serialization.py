"""Serialization of tensors. (``ember.save``/``ember.load`` build on this module.)

Pickling a tensor (``pickle.dumps(t)``, multiprocessing) stores its values as a numpy array,
its dtype, device and ``requires_grad``.
"""
from __future__ import annotations

import numpy as np


def _rebuild_tensor(array: np.ndarray, dtype_name: str, device: str, requires_grad: bool):
    from . import _devices
    from . import _dtype as D
    from ._factory import _from_host
    dt = D.to_dtype(dtype_name)
    t = _from_host(np.ascontiguousarray(array), dt, _devices.canonical(device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    arr = t.detach()._host()
    return (_rebuild_tensor, (np.array(arr, copy=True), t._dtype.name, str(t._device), t._requires_grad))
