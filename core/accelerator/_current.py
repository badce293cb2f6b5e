"""Which installed backend is the accelerator, and PyTorch's rules for the device arguments of
``ember.accelerator`` (``_get_device_index``)."""
from __future__ import annotations

from .. import _plugins
from .._device import device as _device_cls

__all__ = ["accelerator_type", "accelerator_backend", "device_index_of"]

#: device types tried first, in this order; other non-cpu types follow by name
PREFERRED = ("cuda", "opencl")
NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def _loaded(device_type: str):
    try:
        return _plugins.backend_for(device_type)
    except RuntimeError:  # a backend that fails to load is no accelerator (`ember plugins` shows why)
        return None


def accelerator_type() -> str | None:
    """The accelerator's device type: the first installed non-cpu backend that sees a device
    (cuda, opencl, then the others by name), else the first installed one, else None."""
    types = [t for t in _plugins.device_types() if t != "cpu"]
    types.sort(key=lambda t: (PREFERRED.index(t) if t in PREFERRED else len(PREFERRED), t))
    first = None
    for t in types:
        be = _loaded(t)
        if be is None:
            continue
        if first is None:
            first = t
        if be.availability()[0] and be.device_count() > 0:
            return t
    return first


def accelerator_backend(required: bool = False):
    """The accelerator's backend; with ``required``, a RuntimeError (PyTorch's message) unless
    it sees a device."""
    typ = accelerator_type()
    be = None if typ is None else _loaded(typ)
    if required and (be is None or not be.availability()[0] or be.device_count() == 0):
        reason = "" if be is None else be.availability()[1]
        raise RuntimeError(NONE_AVAILABLE + (f" ({reason})" if reason else ""))
    return be


def device_index_of(device, optional: bool = False) -> int:
    """PyTorch's ``_get_device_index``: an int is the index; a device or string must be of the
    accelerator's type and gives its index; no index means the current device when ``optional``."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _device_cls(device)
    index = None
    if isinstance(device, _device_cls):
        typ = accelerator_type()
        if typ is None:
            raise RuntimeError("Accelerator expected")
        if typ != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {typ}.")
        index = device.index
    elif device is not None:
        raise TypeError(f"expected a device, a device string or an index, got {type(device).__name__}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return accelerator_backend(required=True).current_device()
    return index
