"""``FusedRMSNorm``: a drop-in for ``nn.RMSNorm`` (same arguments, state dict and repr) that runs
the plugin's ``rms_norm`` op, one fused kernel forward where the backend has one."""
from __future__ import annotations

import numbers

import ember
from ember import nn

from .op import rms_norm

__all__ = ["FusedRMSNorm"]


class FusedRMSNorm(nn.Module):
    """``FusedRMSNorm(normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None)``:
    ``y = x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims;
    ``weight`` (ones at first) is learnt when ``elementwise_affine``; ``eps`` None uses the input
    dtype's epsilon.

    Example::

        norm = ember.nn.FusedRMSNorm(64)
        y = norm(ember.randn(8, 16, 64))
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(ember.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            nn.init.ones_(self.weight)

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
