"""``ember.device``: a device type plus an optional index, as ``torch.device``."""
from __future__ import annotations

import re

from . import _state

__all__ = ["device"]

_SPEC = re.compile(r"^([a-zA-Z_][a-zA-Z0-9_]*)(?::(\d+))?$")


class device:
    """A device: ``device('cpu')``, ``device('cuda:1')``, ``device('opencl', 0)``.

    Devices compare equal by type and index. Tensors always carry a canonical device (an
    index for every type but ``cpu``), shared between tensors, so dispatch compares them by
    identity; ``_kernels`` and ``_backend`` are filled in once the backend is loaded.
    """

    __slots__ = ("_type", "_index", "_backend", "_kernels", "__weakref__")

    def __new__(cls, type_or_spec, index: int | None = None):
        if isinstance(type_or_spec, device):
            if index is not None:
                raise TypeError("device(): an index was given with a device object")
            return type_or_spec
        if isinstance(type_or_spec, int) and not isinstance(type_or_spec, bool) and index is None:
            # torch accepts a bare ordinal meaning the default accelerator; we take cuda, as it does
            type_or_spec, index = "cuda", type_or_spec
        if not isinstance(type_or_spec, str):
            raise TypeError(f"device() expected a string or a device, got {type(type_or_spec).__name__}")
        m = _SPEC.match(type_or_spec.strip())
        if m is None:
            raise RuntimeError(f"Invalid device string: '{type_or_spec}'")
        typ, idx = m.group(1), m.group(2)
        if idx is not None:
            if index is not None:
                raise RuntimeError(f"device(): type '{type_or_spec}' already has an index; got index={index} too")
            index = int(idx)
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"device(): index must be an int, got {type(index).__name__}")
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self = object.__new__(cls)
        self._type = typ
        self._index = index
        self._backend = None
        self._kernels = None
        return self

    @property
    def type(self) -> str:
        return self._type

    @property
    def index(self) -> int | None:
        return self._index

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    def __hash__(self):
        return hash((self._type, self._index))

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __reduce__(self):
        return (device, (self._type, self._index))

    def __enter__(self):  # `with ember.device('cpu'):` sets the default device, as torch does
        _state.default_device.stack.append(self)
        return self

    def __exit__(self, *exc):
        _state.default_device.stack.pop()
        return False
