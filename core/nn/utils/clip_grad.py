"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``, ``clip_grads_with_norm_``."""
from __future__ import annotations

import math
import warnings

from ... import _state
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import creation as _factory

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _params(parameters) -> list:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated)."""
    ts = [t for t in _params(tensors) if t is not None]
    norm_type = float(norm_type)
    if not ts:
        return _factory.tensor(0.0)
    with _state.grad_disabled():
        if norm_type == math.inf:
            norms = [t.detach().abs().amax() for t in ts]
            total = _ops.stack([n.to(norms[0].device) for n in norms]).amax()
        else:
            norms = [_ops.norm(t.detach(), norm_type) for t in ts]
            total = _ops.norm(_ops.stack([n.to(norms[0].device) for n in norms]), norm_type)
    if error_if_nonfinite and not bool(_ops.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    if not grads:
        return
    with _state.grad_disabled():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp_max(1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Rescale the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; returns the total norm before clipping."""
    params = _params(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with _state.grad_disabled():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
