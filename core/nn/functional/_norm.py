"""Normalisation: batch, instance, layer, group, RMS and local response norm; ``F.normalize``."""
from __future__ import annotations

import math

from ... import _dtype as D
from ... import ops as _ops
from ... import _state
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops.autocast import policy as _amp_policy
from ...ops.writes import check_overlap
from ._util import check_tensor, desc

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "local_response_norm", "normalize"]


def _channel_shape(x: Tensor) -> tuple:
    return (1, x.shape[1]) + (1,) * (x.dim() - 2)


def _update_running(running_mean, running_var, mean, invstd, n, eps, momentum):
    """running = (1 - momentum) * running + momentum * batch (unbiased variance, as PyTorch)."""
    with _state.grad_disabled():
        if running_mean is not None:
            running_mean.mul_(1.0 - momentum).add_(mean.reshape(running_mean.shape).to(running_mean.dtype) * momentum)
        if running_var is not None:
            var = 1.0 / (invstd * invstd) - eps
            unbiased = var * (n / (n - 1)) if n > 1 else var
            running_var.mul_(1.0 - momentum).add_(unbiased.reshape(running_var.shape).to(running_var.dtype) * momentum)


def _check_running(op, running_mean, running_var, updated):
    """PyTorch's refusals for the running statistics: a running stat that requires grad (under grad
    mode; the op is not differentiable with respect to them) and, where they are updated in place,
    one whose elements share memory (an expanded tensor)."""
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None:
            continue
        if _state.grad.enabled and t.requires_grad:
            raise RuntimeError(f"{op}: The function 'native_batch_norm' is not differentiable with respect to "
                               f"argument '{name}'. This input cannot have requires_grad True.")
        if updated:
            check_overlap(t, f"{op} ({name})")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of (N, C, *) with batch statistics in training (updating the
    running ones in place) or with ``running_mean``/``running_var`` otherwise."""
    check_tensor(input, "batch_norm")
    if input.dim() < 2:
        raise ValueError(f"batch_norm: expected 2D or more input (got {input.dim()}D input)")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"batch_norm: {name} should contain {C} elements not {t.numel()} (input {desc(input)})")
    n = input.numel() // C if C else 0
    if training and n == 1:  # (PyTorch's python-level check, before its kernel's; an empty batch is allowed)
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{list(input.shape)}")
    if input.numel():  # (PyTorch computes an empty input without its batch_norm kernel, so without these checks)
        _check_running("batch_norm", running_mean, running_var, training)
    if training:
        out, mean, invstd = _nnops.batch_norm(input, weight, bias, eps)
        if n and (running_mean is not None or running_var is not None):
            _update_running(running_mean, running_var, mean, invstd, n, eps, momentum)
        return out
    if running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in evaluation mode "
                           "(or pass training=True to use batch statistics)")
    cs = _channel_shape(input)
    scale = _ops.rsqrt(running_var.to(input.dtype) + eps)
    if weight is not None:
        scale = scale * weight
    shift = -running_mean.to(input.dtype) * scale
    if bias is not None:
        shift = shift + bias
    return input * scale.reshape(cs) + shift.reshape(cs)


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) plane over its spatial dims."""
    check_tensor(input, "instance_norm")
    sp = math.prod(input.shape[2:])
    if use_input_stats and sp == 1:  # (as PyTorch: an input without spatial dims has one spatial element)
        raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    if input.dim() < 2:
        raise IndexError(f"instance_norm: Dimension out of range: the input needs a channel dim 1 (got {desc(input)})")
    _check_running("instance_norm", running_mean, running_var, use_input_stats)
    k = input.dim() - 2
    if use_input_stats and sp == 0:  # empty planes: nothing to normalise, running statistics untouched
        out = input * 1
    elif use_input_stats:
        out, mean, invstd = _nnops.layer_norm(input, None, None, k, eps)
        if running_mean is not None or running_var is not None:
            with _state.grad_disabled():
                var = 1.0 / (invstd * invstd) - eps
                var = var * (sp / (sp - 1))
                m = mean.reshape(input.shape[:2]).mean(0)
                v = var.reshape(input.shape[:2]).mean(0)
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(m * momentum)
                if running_var is not None:
                    running_var.mul_(1 - momentum).add_(v * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("instance_norm: running stats are needed when use_input_stats=False")
        cs = _channel_shape(input)
        out = (input - running_mean.reshape(cs)) * _ops.rsqrt(running_var.reshape(cs) + eps)
    cs = _channel_shape(input)
    if weight is not None:
        out = out * weight.reshape(cs)
    if bias is not None:
        out = out + bias.reshape(cs)
    return out


@_amp_policy("layer_norm")
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift elementwise."""
    check_tensor(input, "layer_norm")
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or tuple(input.shape[input.dim() - k:]) != ns or input.dim() < k:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"layer_norm: Expected {name} to be of same shape as normalized_shape, but got {name} "
                               f"of shape {list(t.shape)} and normalized_shape = {list(ns)}")
    if input.dtype.category != D._FLOAT:
        raise RuntimeError(f"layer_norm: expected a floating point input, got {desc(input)}")
    return _nnops.layer_norm(input, weight, bias, k, eps)[0]


@_amp_policy("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise groups of channels (N, G, C/G * spatial), then scale and shift per channel."""
    check_tensor(input, "group_norm")
    if input.dim() < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but received {input.dim()}")
    N, C = input.shape[:2]
    if num_groups > 0 and N * C // num_groups * math.prod(input.shape[2:]) == 1:  # (PyTorch's first check)
        raise ValueError(f"group_norm: Expected more than 1 value per channel when training, got input size "
                         f"{[N * C // num_groups, num_groups] + list(input.shape[2:])}")
    if C % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(N, num_groups, C // num_groups * math.prod(input.shape[2:]))  # (no -1: N may be 0)
    out = _nnops.layer_norm(x, None, None, 1, eps)[0].reshape(input.shape)
    cs = _channel_shape(input)
    if weight is not None:
        out = out * weight.reshape(cs)
    if bias is not None:
        out = out + bias.reshape(cs)
    return out


@_amp_policy("rms_norm")
def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times ``weight`` (eps defaults to the dtype's epsilon).
    float16 and bfloat16 inputs are normalised in float32 (their eps is float32's), as PyTorch."""
    check_tensor(input, "rms_norm")
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if tuple(input.shape[input.dim() - k:]) != ns:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    x = input.float() if input.dtype in (D.float16, D.bfloat16) else input
    if eps is None:
        eps = D.finfo(x.dtype).eps
    dims = tuple(range(input.dim() - k, input.dim()))
    out = (x * _ops.rsqrt((x * x).mean(dims, keepdim=True) + eps)).to(input.dtype)
    return out * weight if weight is not None else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalise by the sum of squares over ``size`` neighbouring channels (AlexNet's LRN)."""
    check_tensor(input, "local_response_norm")
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    N, C = input.shape[:2]
    sq = (input * input).reshape(N, 1, C, -1)
    sq = _nnops.constant_pad_nd(sq, (0, 0, size // 2, (size - 1) // 2), 0.0)
    div = _nnops.avg_pool(sq, (size, 1), (1, 1), (0, 0), False, True, None).reshape(input.shape)
    div = (div * alpha + k).pow(beta)
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    check_tensor(input, "normalize")
    denom = _ops.norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    r = input / denom
    if out is not None:
        return out.copy_(r)
    return r
