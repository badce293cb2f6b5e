"""``parameters_to_vector`` and ``vector_to_parameters``."""
from __future__ import annotations

from typing import Iterable

from ... import ops as _ops
from ... import _state
from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param, old):
    if old is not None and param.device != old:
        raise TypeError(f"Found two parameters on different devices, this is currently not supported (found {old} and "
                        f"{param.device}).")
    return param.device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one vector (differentiable)."""
    dev = None
    vec = []
    for p in parameters:
        dev = _check_device(p, dev)
        vec.append(p.reshape(-1))
    return _ops.cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters (in place, without autograd)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements but the parameters have "
                           f"{total}")
    dev = None
    pointer = 0
    with _state.grad_disabled():
        for p in params:
            dev = _check_device(p, dev)
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].reshape(p.shape))
            pointer += n
