"""Convolutions ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` (every PyTorch option), ``Fold``/``Unfold``."""
from __future__ import annotations

import math

from ...ops import creation as _factory
from ..._tensor import Tensor
from ...backend.shapes import conv_transpose_out
from .. import functional as F
from .. import init
from ..functional._conv import same_padding
from ..functional._util import ntuple
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Fold", "Unfold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _nsp = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        n = self._nsp
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        for what, count in (("in_channels", in_channels), ("out_channels", out_channels)):
            if count % groups:
                raise ValueError(f"{what} must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, "
                             f"but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = ntuple(kernel_size, n)
        self.stride = ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else ntuple(padding, n)
        self.dilation = ntuple(dilation, n)
        self.transposed = transposed
        self.output_padding = ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            rp = []
            if padding == "same":
                for lo, hi in reversed(same_padding(self.kernel_size, self.dilation)):
                    rp += [lo, hi]
            else:
                rp = [0, 0] * n
            self._reversed_padding_repeated_twice = rp
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        fk = {"device": device, "dtype": dtype}
        if transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_factory.empty(shape, **fk))
        if bias:
            self.bias = Parameter(_factory.empty(out_channels, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._nsp
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"

    _fns = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = self._fns[self._nsp]
        if self.padding_mode != "zeros":
            x = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(x, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-d convolution over (N, C_in, L) (or (C_in, L))."""
    _nsp = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)


class Conv2d(_ConvNd):
    """2-d convolution over (N, C_in, H, W) (or (C_in, H, W)).

    >>> ember.nn.Conv2d(3, 8, 3, padding=1)(ember.ones(2, 3, 5, 5)).shape
    ember.Size([2, 8, 5, 5])
    """
    _nsp = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)


class Conv3d(_ConvNd):
    """3-d convolution over (N, C_in, D, H, W)."""
    _nsp = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    _tfns = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                 dilation, padding_mode, device, dtype) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size, stride, padding, kernel_size, num_spatial_dims: int,
                        dilation=None) -> list:
        if output_size is None:
            return list(self.output_padding)
        output_size = list(output_size)
        has_batch = input.dim() == num_spatial_dims + 2
        if len(output_size) == num_spatial_dims + 2 or (len(output_size) == num_spatial_dims + 1 and not has_batch):
            output_size = output_size[-num_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_spatial_dims + 2} elements (got {len(output_size)})")
        sp = input.shape[-num_spatial_dims:]
        dilation = self.dilation if dilation is None else dilation
        res = []
        for d in range(num_spatial_dims):
            mn = conv_transpose_out(sp[d], kernel_size[d], stride[d], padding[d], 0, dilation[d])
            mx = mn + stride[d] - 1
            if not mn <= output_size[d] <= mx:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {mn} to {mx} "
                                 f"(for an input of {list(sp)})")
            res.append(output_size[d] - mn)
        return res

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        op = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, self._nsp,
                                  self.dilation)
        return self._tfns[self._nsp](input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                     self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution; weight (C_in, C_out/groups, k)."""
    _nsp = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution; ``forward(input, output_size=None)`` picks output_padding from output_size."""
    _nsp = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution."""
    _nsp = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups, bias,
                         dilation, padding_mode, device, dtype)


class Fold(Module):
    """Combines sliding local blocks (N, C*prod(k), L) into (N, C, *output_size) (col2im)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding local blocks of (N, C, H, W) as columns (N, C*kh*kw, L) (im2col)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
