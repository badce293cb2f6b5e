"""Splitting inputs over devices and joining outputs on one (``nn.DataParallel``'s data moves).

Both directions are differentiable: a chunk is ``input.narrow(...).to(device)`` and the gather
is ``cat`` of ``output.to(target)``, so gradients flow back to the original tensors.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from ..._tensor import Tensor
from ..._device import device as _device
from ...ops.shape import cat


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _scatter_tensor(t: Tensor, devices: Sequence, dim: int) -> list:
    chunks = t.chunk(len(devices), dim)
    return [c.to(_device(d)) for c, d in zip(chunks, devices)]


def scatter(inputs: Any, target_devices: Sequence, dim: int = 0) -> list:
    """One entry per device: tensors chunked along ``dim`` (fewer entries when a batch has fewer
    elements than devices), lists/tuples/dicts split element by element, anything else repeated."""
    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, target_devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # break the closure's reference cycle (as PyTorch)


def scatter_kwargs(inputs: tuple, kwargs: dict | None, target_devices: Sequence, dim: int = 0) -> tuple:
    """``scatter`` for positional and keyword arguments, padded to the same number of replicas."""
    scattered_inputs = scatter(inputs, target_devices, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_devices, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs: Any, target_device, dim: int = 0) -> Any:
    """Join the replicas' outputs on ``target_device``: tensors concatenated along ``dim``
    (0-d tensors stacked into a vector, with a warning, as PyTorch), containers element by
    element, any other value as the list of the replicas' values."""
    target = _device(target_device) if not hasattr(target_device, "type") else target_device

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            if all(o.dim() == 0 for o in outs) and dim == 0:
                warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will "
                              "instead unsqueeze and return a vector.")
                outs = [o.unsqueeze(0) for o in outs]
            return cat([o.to(target) for o in outs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs)))
        if isinstance(out, (list, tuple)):
            return type(out)(map(gather_map, zip(*outs)))
        return list(outs)  # other values (numbers, strings): one per replica (PyTorch fails here)

    try:
        return gather_map(outputs)
    finally:
        gather_map = None
