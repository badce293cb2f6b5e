"""``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm``."""
from __future__ import annotations

from ...ops import creation as _factory
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


def _shape(normalized_shape) -> tuple:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


def _learnable(module: Module, shape, wanted: dict, device, dtype) -> None:
    """Register each parameter named in ``wanted`` (in that order): a new tensor of ``shape``
    where its flag is true, None in its place otherwise (so that it reads as None)."""
    for name, on in wanted.items():
        value = Parameter(_factory.empty(shape, device=device, dtype=dtype)) if on else None
        module.register_parameter(name, value)


def _unit_scale_zero_shift(module: Module) -> None:
    """The identity affine map: the scale (``weight``) to ones, the shift (``bias``) to zeros."""
    scale, shift = module._parameters.get("weight"), module._parameters.get("bias")
    if scale is not None:
        init.ones_(scale)
    if shift is not None:
        init.zeros_(shift)


class LayerNorm(Module):
    """Normalises over the trailing ``normalized_shape`` dims with elementwise affine (ones, zeros)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _learnable(self, self.normalized_shape, {"weight": elementwise_affine, "bias": elementwise_affine and bias},
                   device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            _unit_scale_zero_shift(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalises groups of channels; affine per channel (ones, zeros)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        _learnable(self, num_channels, {"weight": affine, "bias": affine and bias}, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            _unit_scale_zero_shift(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (eps None: the dtype's epsilon)."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _learnable(self, self.normalized_shape, {"weight": elementwise_affine}, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            _unit_scale_zero_shift(self)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalises by the squares of ``size`` neighbouring channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """Legacy name of LocalResponseNorm on 4-D inputs."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return super().forward(input)
