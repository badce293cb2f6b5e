"""Activation functions (``F.relu``, ``F.gelu``, ``F.softmax``...), written in ember ops."""
from __future__ import annotations

import math

from ... import _state
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ._util import check_tensor

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "elu", "elu_", "selu", "selu_",
           "celu", "celu_", "gelu", "silu", "mish", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardswish",
           "hardsigmoid", "softplus", "softsign", "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_",
           "glu", "softmax", "log_softmax", "softmin", "logsigmoid", "gumbel_softmax"]


def _inplace(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return input.copy_(result) if inplace else result


def _operand(input: Tensor, inplace: bool) -> Tensor:
    """What an activation whose formula saves its input (``x * sigmoid(x)``) computes from: a copy
    when it is in place under autograd, which writing the result into ``input`` leaves intact (as
    PyTorch's in-place forms save the original ``self``)."""
    return input.clone() if inplace and _state.grad.enabled and input.requires_grad else input


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    check_tensor(input, "relu")
    return _ops.relu_(input) if inplace else _ops.relu(input)


def relu_(input: Tensor) -> Tensor:
    return _ops.relu_(input)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val)."""
    check_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _ops.clamp_(input, min_val, max_val) if inplace else _ops.clamp(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise (the slope is the gradient at 0, as PyTorch's)."""
    check_tensor(input, "leaky_relu")
    return _inplace(input, _ops.where(input > 0, input, input * negative_slope), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """leaky_relu with a learnable slope per channel (dim 1) or one shared slope."""
    check_tensor(input, "prelu")
    check_tensor(weight, "prelu", "weight")
    if weight.numel() != 1:
        if input.dim() < 2 and not (input.dim() == 1 and weight.numel() == input.shape[0]):
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers "
                               f"= {weight.numel()} and channel size = {input.shape[0] if input.dim() else 1}.")
        c = input.shape[1] if input.dim() >= 2 else input.shape[0]
        if weight.numel() != c:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers "
                               f"= {weight.numel()} and channel size = {c}.")
        if input.dim() >= 2:
            weight = weight.reshape((1, c) + (1,) * (input.dim() - 2))
    elif weight.dim() > 0:
        weight = weight.reshape(())
    return _ops.where(input >= 0, input, input * weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: a slope drawn from U(lower, upper) per element in training, the
    mean slope otherwise."""
    check_tensor(input, "rrelu")
    if training:
        a = _ops.empty_like(input).uniform_(lower, upper)
        r = _ops.where(input > 0, input, input * a)
    else:
        r = _ops.where(input > 0, input, input * ((lower + upper) / 2))
    return _inplace(input, r, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    check_tensor(input, "elu")
    # the unused branch is kept from overflowing by a where, which saves only its mask: the
    # in-place form may overwrite input (the formula reads expm1's result, as PyTorch's)
    neg = _ops.expm1(_ops.where(input > 0, 0.0, input)) * alpha
    return _inplace(input, _ops.where(input > 0, input, neg), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    check_tensor(input, "selu")
    return _inplace(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def selu_(input: Tensor) -> Tensor:
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    check_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    neg = _ops.expm1(_ops.where(input > 0, 0.0, input) / alpha) * alpha
    return _inplace(input, _ops.where(input > 0, input, neg), inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x); ``approximate='tanh'`` uses the tanh formula."""
    check_tensor(input, "gelu")
    if approximate == "none":
        return input * (_ops.erf(input * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * (_ops.tanh(inner) + 1.0) * 0.5
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    check_tensor(input, "silu")
    x = _operand(input, inplace)
    return _inplace(input, x * _ops.sigmoid(x), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    check_tensor(input, "mish")
    x = _operand(input, inplace)
    return _inplace(input, x * _ops.tanh(softplus(x)), inplace)


def sigmoid(input: Tensor) -> Tensor:
    return _ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return _ops.tanh(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    check_tensor(input, "hardswish")
    x = _operand(input, inplace)
    return _inplace(input, x * _ops.clamp(x + 3.0, 0.0, 6.0) / 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    check_tensor(input, "hardsigmoid")
    return _inplace(input, _ops.clamp(input + 3.0, 0.0, 6.0) / 6.0, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` (for stability)."""
    check_tensor(input, "softplus")
    bx = input * beta if beta != 1 else input
    soft = _ops.log1p(_ops.exp(_ops.clamp(bx, max=threshold)))
    if beta != 1:
        soft = soft / beta
    return _ops.where(bx > threshold, input, soft)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), computed stably; both are written with a
    where (x < 0) so that the gradient at 0 is sigmoid(-0) = 0.5."""
    check_tensor(input, "logsigmoid")
    neg = input < 0
    return _ops.where(neg, input, 0.0) - _ops.log1p(_ops.exp(_ops.where(neg, input, -input)))


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (_ops.abs(input) + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - _ops.tanh(input)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    check_tensor(input, "hardshrink")
    return _ops.where(_ops.abs(input) > lambd, input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    check_tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, 0.0))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    check_tensor(input, "threshold")
    return _inplace(input, _ops.where(input > threshold, input, float(value)), inplace)


def threshold_(input: Tensor, threshold_: float, value: float) -> Tensor:
    return threshold(input, threshold_, value, True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) for the two halves a, b of ``input`` along ``dim``."""
    check_tensor(input, "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.dim() if dim < 0 else dim
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.chunk(2, d)
    return a * _ops.sigmoid(b)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``."""
    check_tensor(input, "softmax")
    return _nnops.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably."""
    check_tensor(input, "log_softmax")
    return _nnops.log_softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x)."""
    check_tensor(input, "softmin")
    return _nnops.softmax(-input, dim, dtype)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """Samples from the Gumbel-softmax distribution; ``hard`` returns one-hot vectors with the
    soft sample's gradient (straight-through)."""
    check_tensor(logits, "gumbel_softmax", "logits")
    g = -_ops.log(_ops.empty_like(logits).exponential_())
    y = _nnops.softmax((logits + g) / tau, dim)
    if not hard:
        return y
    idx = y.argmax(dim, keepdim=True)
    y_hard = _ops.zeros_like(logits).scatter(dim, idx, 1.0)
    return y_hard - y.detach() + y
