"""Activation functions (``F.relu``, ``F.gelu``, ``F.softmax``...), written in ember ops."""
from __future__ import annotations

import math

from ... import _dtype as D
from ... import _state
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops._args import dtype_not_implemented, int_in_range
from ...ops.autocast import policy as _amp_policy
from ._util import check_tensor

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "elu", "elu_", "selu", "selu_",
           "celu", "celu_", "gelu", "silu", "mish", "sigmoid", "tanh", "hardtanh", "hardtanh_", "hardswish",
           "hardsigmoid", "softplus", "softsign", "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_",
           "glu", "softmax", "log_softmax", "softmin", "logsigmoid", "gumbel_softmax"]


def _inplace(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return input.copy_(result) if inplace else result


def _floating(input: Tensor, op: str) -> Tensor:
    """``input``, refused unless floating (PyTorch's kernels for ``op`` have no integer or bool
    version: NotImplementedError)."""
    check_tensor(input, op)
    if input.dtype.category != D._FLOAT:
        raise dtype_not_implemented(op, input.dtype)
    return input


def _opmath(input: Tensor) -> Tensor:
    """``input`` in the dtype PyTorch's CPU kernels compute in: float32 for float16 and bfloat16
    (the result is rounded once, and float16 intermediates don't overflow)."""
    return input.float() if input.dtype in (D.float16, D.bfloat16) else input


def _int_bound(v, dtype, op: str) -> int:
    """A python bound or fill value for an integer input, as PyTorch converts it (truncated,
    overflow refused)."""
    return int_in_range(int(v), dtype, op)


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
    dt = input.dtype
    if dt == D.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if dt.category != D._FLOAT:  # integer inputs keep their dtype: the bounds are truncated to it
        if not dt.is_signed and (min_val < 0 or max_val < 0):
            raise RuntimeError(f"cannot do hardtanh on an unsigned type with negative limits (input {dt})")
        min_val, max_val = _int_bound(min_val, dt, "hardtanh"), _int_bound(max_val, dt, "hardtanh")
    if input.requires_grad and _state.grad.enabled:
        # PyTorch passes the gradient only strictly inside the bounds (clamp passes it at them too):
        # relu6 at exactly 0 passes none, and neither does NaN
        inside = (input > min_val) & (input < max_val)
        clamped = _ops.clamp(input.detach(), min_val, max_val)
        return _inplace(input, _ops.where(inside, input, clamped), inplace)
    return _ops.clamp_(input, min_val, max_val) if inplace else _ops.clamp(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise (the slope is the gradient at 0, as PyTorch's)."""
    _floating(input, "leaky_relu")
    return _inplace(input, _ops.where(input > 0, input, input * negative_slope), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


@_amp_policy("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """leaky_relu with a learnable slope per channel (dim 1) or one shared slope."""
    _floating(input, "prelu")
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
    # "x > 0 keeps x", as PyTorch: at 0 the slope is the input's gradient (and 0 * inf is NaN);
    # the slope is picked before the product, so that an infinite one gives no 0 * inf gradients
    return input * _ops.where(input > 0, 1.0, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: a slope drawn from U(lower, upper) per element in training, the
    mean slope otherwise."""
    _floating(input, "rrelu")
    if training:
        a = _ops.empty_like(input).uniform_(lower, upper)
        r = _ops.where(input > 0, input, input * a)
    else:
        r = _ops.where(input > 0, input, input * ((lower + upper) / 2))
    return _inplace(input, r, inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = _opmath(_floating(input, "elu"))
    # the unused branch is kept from overflowing by a where, which saves only its mask: the
    # in-place form may overwrite input (the formula reads expm1's result, as PyTorch's)
    neg = _ops.expm1(_ops.where(x > 0, 0.0, x)) * alpha
    return _inplace(input, _ops.where(x > 0, x, neg).to(input.dtype), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    x = _opmath(_floating(input, "selu"))
    return _inplace(input, (elu(x, _SELU_ALPHA) * _SELU_SCALE).to(input.dtype), inplace)


def selu_(input: Tensor) -> Tensor:
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    x = _opmath(_floating(input, "celu"))
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    neg = _ops.expm1(_ops.where(x > 0, 0.0, x) / alpha) * alpha
    return _inplace(input, _ops.where(x > 0, x, neg).to(input.dtype), inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x); ``approximate='tanh'`` uses the tanh formula."""
    x = _opmath(_floating(input, "gelu"))
    if approximate == "none":
        return (x * (_ops.erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5).to(input.dtype)
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return (x * (_ops.tanh(inner) + 1.0) * 0.5).to(input.dtype)
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish)."""
    x = _opmath(_operand(_floating(input, "silu"), inplace))
    return _inplace(input, (x * _ops.sigmoid(x)).to(input.dtype), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    x = _opmath(_operand(_floating(input, "mish"), inplace))
    return _inplace(input, (x * _ops.tanh(softplus(x))).to(input.dtype), inplace)


def sigmoid(input: Tensor) -> Tensor:
    return _ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return _ops.tanh(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    x = _opmath(_operand(_floating(input, "hardswish"), inplace))
    # PyTorch's pieces: gradient 0 for x <= -3, x / 3 + 1/2 for -3 < x < 3, and 1 from 3 on (and
    # for NaN); x * 0 keeps -0.0 below -3 and NaN at -inf. The middle piece reads x only inside,
    # so that its unused gradient is never 0 * inf
    inside = (x > -3.0) & (x < 3.0)
    xm = _ops.where(inside, x, 0.0)
    y = _ops.where(x <= -3.0, x * 0.0, _ops.where(inside, xm * (xm + 3.0) / 6.0, x))
    return _inplace(input, y.to(input.dtype), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    x = _opmath(_floating(input, "hardsigmoid"))
    # the gradient (1/6) passes only strictly inside (-3, 3), as PyTorch's (not at the bounds, nor NaN)
    inside = (x > -3.0) & (x < 3.0)
    y = _ops.where(inside, (x + 3.0) / 6.0, _ops.clamp(x.detach() + 3.0, 0.0, 6.0) / 6.0)
    return _inplace(input, y.to(input.dtype), inplace)


@_amp_policy("softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` (for stability)."""
    x = _opmath(_floating(input, "softplus"))
    bx = x * beta if beta != 1 else x
    soft = _ops.log1p(_ops.exp(_ops.clamp(bx, max=threshold)))
    if beta != 1:
        soft = soft / beta
    return _ops.where(bx > threshold, x, soft).to(input.dtype)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), computed stably; both are written with a
    where (x < 0) so that the gradient at 0 is sigmoid(-0) = 0.5."""
    x = _opmath(_floating(input, "logsigmoid"))
    neg = x < 0
    return (_ops.where(neg, x, 0.0) - _ops.log1p(_ops.exp(_ops.where(neg, x, -x)))).to(input.dtype)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (_ops.abs(input) + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - _ops.tanh(input)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    _floating(input, "hardshrink")
    # PyTorch's test is "inside [-lambd, lambd]", so NaN (outside every interval) passes through
    return _ops.where((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    _floating(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # x * 0 in the middle, as PyTorch: NaN stays NaN (and -0.0 keeps its sign)
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, input * 0))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    check_tensor(input, "threshold")
    dt = input.dtype
    if dt == D.bool:
        raise dtype_not_implemented("threshold", dt)
    if dt.category != D._FLOAT:  # integer inputs keep their dtype: threshold and value are truncated to it
        threshold, value = _int_bound(threshold, dt, "threshold"), _int_bound(value, dt, "threshold")
    else:
        value = float(value)
    # "x <= threshold gives value", as PyTorch: NaN is kept
    r = _ops.where(input <= threshold, value, input)
    if inplace and not (_state.grad.enabled and input.requires_grad) and _overlapping(input):
        # PyTorch's threshold_ writes an expanded input (every alias of an element gets the same
        # value): write each of its elements once
        one = tuple(slice(0, 1) if st == 0 else slice(None) for st in input.stride())
        input[one].copy_(r[one])
        return input
    return _inplace(input, r, inplace)


def _overlapping(t: Tensor) -> bool:
    """Whether several elements of ``t`` share one memory location (an expanded dim)."""
    return t.numel() > 0 and any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride()))


def threshold_(input: Tensor, threshold_: float, value: float) -> Tensor:
    return threshold(input, threshold_, value, True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) for the two halves a, b of ``input`` along ``dim``."""
    _floating(input, "glu")
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.dim() if dim < 0 else dim
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)  # (chunk gives one piece of an empty dim)
    return a * _ops.sigmoid(b)


@_amp_policy("softmax")
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``."""
    check_tensor(input, "softmax")
    return _nnops.softmax(input, dim, dtype)


@_amp_policy("log_softmax")
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
