"""DLPack exchange: ``Tensor.__dlpack__``, ``__dlpack_device__`` and ``ember.from_dlpack``.

A backend may provide ``to_dlpack(tensor, stream)``, ``dlpack_device(tensor)`` and
``from_dlpack(obj, device)``; cpu tensors go through numpy, zero-copy both ways.
"""
from __future__ import annotations

import numpy as np

_KDL_CPU = 1


def to_dlpack(t, stream=None, **kwargs):
    if t._requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    be = t._device._backend
    fn = getattr(be, "to_dlpack", None)
    if fn is not None:
        return fn(t, stream)
    if t._device._type != "cpu":
        raise RuntimeError(f"__dlpack__: backend '{be.name}' does not support DLPack export")
    return t.numpy().__dlpack__(stream=stream) if stream is not None else t.numpy().__dlpack__()


def dlpack_device(t):
    be = t._device._backend
    fn = getattr(be, "dlpack_device", None)
    if fn is not None:
        return fn(t)
    if t._device._type == "cpu":
        return (_KDL_CPU, 0)
    raise RuntimeError(f"__dlpack_device__: backend '{be.name}' does not support DLPack")


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object implementing ``__dlpack__`` (numpy arrays, cupy
    arrays, other frameworks' tensors) or with a DLPack capsule."""
    from . import _plugins
    from ._factory import from_numpy
    from ._tensor import Tensor
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    dev = ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__") else (_KDL_CPU, 0)
    if dev[0] == _KDL_CPU:
        if hasattr(ext_tensor, "__dlpack__"):
            arr = np.from_dlpack(ext_tensor)
        else:
            raise TypeError("from_dlpack: expected an object with __dlpack__ (capsules are only accepted by backends "
                            "that consume them)")
        return from_numpy(arr)
    for spec in list(_plugins.backends.values()):
        try:
            be = _plugins.backend_for(spec.device_type)
        except RuntimeError:
            continue
        fn = getattr(be, "from_dlpack", None)
        if fn is not None:
            r = fn(ext_tensor)
            if r is not None:
                return r
    raise RuntimeError(f"from_dlpack: no installed backend accepts DLPack device type {dev[0]}")
