"""``ember.nn.init``: in-place initialisers with PyTorch's formulas (fan computation, gains,
Kaiming's and Xavier's bounds), drawing from the tensor's device generator."""
from __future__ import annotations

import math
import warnings

from ..ops import creation as _factory
from .. import ops as _ops
from .. import _state
from .._tensor import Tensor
from .. import _dtype as D

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
           "uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity`` ('linear', 'conv*', 'sigmoid', 'tanh', 'relu',
    'leaky_relu' with slope ``param``, 'selu')."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    return fi if mode == "fan_in" else fo


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    with _state.grad_disabled():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    with _state.grad_disabled():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std^2) truncated to [a, b] (inverse-CDF method, as PyTorch)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    with _state.grad_disabled():
        lo = norm_cdf((a - mean) / std)
        hi = norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(a, b)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with _state.grad_disabled():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    with _state.grad_disabled():
        return tensor.fill_(1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with _state.grad_disabled():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (2-D tensors only)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with _state.grad_disabled():
        tensor.copy_(_factory.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta for {3,4,5}-D conv weights: the convolution keeps its input channels."""
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per = sizes[0] // groups
    n = min(out_per, sizes[1])
    with _state.grad_disabled():
        tensor.zero_()
        for g in range(groups):
            for i in range(n):
                idx = (g * out_per + i, i) + tuple(s // 2 for s in sizes[2:])
                tensor[idx] = 1.0
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fi + fo))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fi + fo)), generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He); layers use a = sqrt(5) for PyTorch's defaults."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix: the Q of a Gaussian matrix's QR decomposition (diagonal of R
    made positive, as PyTorch), times ``gain``. Q comes from Gram-Schmidt applied twice per column
    (numerically as good as Householder for this use), in float64 when the device has it."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    be = tensor.device._backend
    work = D.float64 if be.supports_dtype(D.float64) else D.float32
    a = _factory.empty((rows, cols), dtype=tensor.dtype, device=tensor.device).normal_(0, 1, generator=generator)
    a = a.to(work)
    if rows < cols:
        a = a.t()
    m, n = a.shape
    q = _factory.zeros((m, n), dtype=work, device=tensor.device)
    with _state.grad_disabled():
        for j in range(n):
            v = a[:, j]
            if j:
                qj = q[:, :j]
                for _ in range(2):
                    v = v - qj.matmul(qj.t().matmul(v))
            q[:, j] = v / _ops.norm(v)
        if rows < cols:
            q = q.t()
        tensor.copy_((q * gain).reshape(tensor.shape))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A 2-D matrix with N(0, std^2) entries and a ``sparsity`` fraction of zeros in each column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    nz = int(math.ceil(sparsity * rows))
    with _state.grad_disabled():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            idx = _ops.randperm(rows, device=tensor.device, generator=generator)[:nz]
            col = tensor[:, c]
            col[idx] = 0.0
    return tensor


def _deprecated(new):
    def f(*args, **kwargs):
        warnings.warn(f"nn.init.{new.__name__[:-1]} is now deprecated in favor of nn.init.{new.__name__}.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    f.__name__ = new.__name__[:-1]
    f.__doc__ = f"Deprecated alias of :func:`{new.__name__}`."
    return f


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
