"""``nn.utils.skip_init``: a module whose parameters and buffers are left uninitialised."""
from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers on ``device``
    (default cpu). ember has no ``meta`` device: the module is built (and initialised) on cpu,
    then ``to_empty`` gives it fresh uninitialised storage on the target device, so the result
    is PyTorch's but the initialisation cost is paid."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "cpu"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
