"""Copies of a module on other devices whose parameters are differentiable copies of the
original's, so that the replicas' gradients flow back into the original parameters."""
from __future__ import annotations

from typing import Sequence

from ...autograd import no_grad
from ..modules.module import Module
from ..._device import device as _device


def _shallow_copy(m: Module) -> Module:
    """A new module object of the same class sharing everything but its member dicts."""
    r = object.__new__(type(m))
    r.__dict__.update(m.__dict__)
    for name in ("_parameters", "_buffers", "_modules"):
        object.__setattr__(r, name, m.__dict__[name].copy())
    object.__setattr__(r, "_is_replica", True)
    return r


def replicate(network: Module, devices: Sequence, detach: bool = False) -> list:
    """One replica of ``network`` per device (``devices[i]`` a device or index string).

    A replica's parameters are ``param.to(device)`` (not leaves: backward adds their gradients
    into the original parameters; ``detach=True`` cuts that link); buffers are copied without
    history. On the original's own device a replica shares the original's tensors, so in-place
    buffer updates there (batch-norm statistics) are kept, as in PyTorch.
    """
    devs = [_device(d) if not hasattr(d, "type") else d for d in devices]
    modules = list(network.modules())
    out = []
    for dev in devs:
        copies = {id(m): _shallow_copy(m) for m in modules}
        for m in modules:
            r = copies[id(m)]
            for name, p in m._parameters.items():
                if p is not None:
                    q = p.to(dev)
                    r._parameters[name] = q.detach() if detach else q
            with no_grad():
                for name, b in m._buffers.items():
                    if b is not None:
                        r._buffers[name] = b.to(dev)
            for name, child in m._modules.items():
                if child is not None:
                    r._modules[name] = copies[id(child)]
        out.append(copies[id(network)])
    return out
