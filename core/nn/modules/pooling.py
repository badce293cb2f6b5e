"""Pooling layers: max, average, adaptive, LP pooling and max unpooling."""
from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from ..functional._util import ntuple
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _settings(module, **values) -> None:
    """Store the layer's hyper-parameters as attributes (the names ``extra_repr`` and the state
    of a pickled module use)."""
    for name, value in values.items():
        setattr(module, name, value)


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        _settings(self, kernel_size=kernel_size, stride=kernel_size if stride is None else stride, padding=padding,
                  dilation=dilation, return_indices=return_indices, ceil_mode=ceil_mode)

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L)."""
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W); ``return_indices`` for MaxUnpool2d."""
    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """Average over sliding windows of (N, C, L)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        _settings(self, kernel_size=ntuple(kernel_size, 1), stride=ntuple(kernel_size if stride is None else stride, 1),
                  padding=ntuple(padding, 1), ceil_mode=ceil_mode, count_include_pad=count_include_pad)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:
        super().__init__()
        _settings(self, kernel_size=kernel_size, stride=kernel_size if stride is None else stride, padding=padding,
                  ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override)

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Average over sliding windows of (N, C, H, W)."""
    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool3d)


class _AdaptiveAvgPoolNd(Module):
    _fn = None

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length."""
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (H, W) (``None`` keeps a dim)."""
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    _fn = None

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        _settings(self, output_size=output_size, return_indices=return_indices)

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W)."""
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        _settings(self, norm_type=norm_type, kernel_size=kernel_size, stride=stride, ceil_mode=ceil_mode)

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L)."""
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling: (sum x^p)^(1/p) over each window."""
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _fn = None
    _n = 1

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._n
        _settings(self, kernel_size=ntuple(kernel_size, n), stride=ntuple(kernel_size if stride is None else stride, n),
                  padding=ntuple(padding, n))

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Puts max-pooled values back at their indices (zeros elsewhere)."""
    _fn = staticmethod(F.max_unpool1d)
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d (needs its ``return_indices``)."""
    _fn = staticmethod(F.max_unpool2d)
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _fn = staticmethod(F.max_unpool3d)
    _n = 3
