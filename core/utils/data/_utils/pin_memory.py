"""Pinning a batch: ``Tensor.pin_memory()`` on every tensor in it. What pinning means is the
backend's decision (page-locked host memory for a cuda backend); on ``cpu_numpy`` it is a no-op."""
from __future__ import annotations

import collections.abc
import copy

from ...._tensor import Tensor


def pin_memory(data, device: str | None = None):
    """``data`` with every tensor (and every object with a ``pin_memory()`` method) pinned;
    containers are rebuilt with the same types (tuples stay tuples)."""
    if isinstance(data, Tensor):
        return data.pin_memory(device) if device else data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: pin_memory(v, device) for k, v in data.items()})
                return clone
            return type(data)({k: pin_memory(v, device) for k, v in data.items()})
        except TypeError:
            return {k: pin_memory(v, device) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(pin_memory(s, device) for s in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(s, device) for s in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, s in enumerate(data):
                    clone[i] = pin_memory(s, device)
                return clone
            return type(data)([pin_memory(s, device) for s in data])
        except TypeError:
            return [pin_memory(s, device) for s in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
