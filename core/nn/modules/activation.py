"""Activation layers; each is a thin Module over its ``F`` form (reprs as PyTorch's)."""
from __future__ import annotations

from ...ops import creation as _factory
from ..._tensor import Tensor
from .. import functional as F
from ..parameter import Parameter
from .attention import MultiheadAttention  # noqa: F401  (PyTorch's path: torch.nn.modules.activation)
from .module import Module
from .. import init as _init

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid",
           "Tanh", "Hardtanh", "Hardswish", "Hardsigmoid", "Softplus", "Softsign", "Tanhshrink", "Hardshrink",
           "Softshrink", "Threshold", "GLU", "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "LogSigmoid"]


def _inplace_str(inplace: bool, lead: str = "") -> str:
    return (lead + "inplace=True") if inplace else ""


class ReLU(Module):
    """max(x, 0)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace)


class Hardtanh(Module):
    """clamp(x, min_val, max_val)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise AssertionError("max_val must be greater than min_val")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace, ', ')}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace)


class LeakyReLU(Module):
    """x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace, ', ')}"


class PReLU(Module):
    """LeakyReLU with learnable slopes (one, or one per channel), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_factory.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU (slope ~ U(lower, upper) in training, their mean in eval)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace, ', ')}"


class ELU(Module):
    """x if x > 0 else alpha (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace, ', ')}"


class CELU(ELU):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class SELU(Module):
    """scale * ELU(x, alpha) with the self-normalising constants."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace)


class GELU(Module):
    """x * Phi(x) (``approximate='tanh'`` for the tanh formula)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace)


class Mish(SiLU):
    """x * tanh(softplus(x))."""

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, inplace=self.inplace)


class _Stateless(Module):
    _fn = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class Sigmoid(_Stateless):
    """1 / (1 + exp(-x))."""
    _fn = staticmethod(F.sigmoid)


class Tanh(_Stateless):
    _fn = staticmethod(F.tanh)


class Softsign(_Stateless):
    """x / (1 + |x|)."""
    _fn = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    """x - tanh(x)."""
    _fn = staticmethod(F.tanhshrink)


class LogSigmoid(_Stateless):
    """log(sigmoid(x))."""
    _fn = staticmethod(F.logsigmoid)


class Hardswish(Module):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Hardswish):
    """relu6(x + 3) / 6."""

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class Softplus(Module):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrinks towards 0 by lambd."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace, ', ')}"


class GLU(Module):
    """a * sigmoid(b) of the halves of ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)  # pickles from before ``dim`` was stored

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxBase):
    """softmax(-x) along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
