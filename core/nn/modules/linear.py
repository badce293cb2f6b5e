"""``Identity``, ``Linear`` (and ``NonDynamicallyQuantizableLinear``, its PyTorch alias for
``MultiheadAttention.out_proj``), ``Bilinear``."""
from __future__ import annotations

import math

from ...ops import creation as _factory
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "NonDynamicallyQuantizableLinear", "Bilinear"]


def _factory_kwargs(device, dtype) -> dict:
    return {"device": device, "dtype": dtype}


class Identity(Module):
    """Returns its input (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x W^T + b`` with ``W`` (out_features, in_features) ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's
    kaiming_uniform(a=sqrt(5))) and the same bound for ``b``.

    >>> ember.nn.Linear(4, 2)(ember.ones(3, 4)).shape
    ember.Size([3, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_factory.empty((out_features, in_features), **_factory_kwargs(device, dtype)))
        if bias:
            self.bias = Parameter(_factory.empty(out_features, **_factory_kwargs(device, dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under PyTorch's name for ``MultiheadAttention.out_proj`` (same repr and keys)."""


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with A (out, in1, in2) and b ~ U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        fk = _factory_kwargs(device, dtype)
        self.weight = Parameter(_factory.empty((out_features, in1_features, in2_features), **fk))
        if bias:
            self.bias = Parameter(_factory.empty(out_features, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
