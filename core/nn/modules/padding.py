"""Padding layers: Constant/Zero/Reflection/Replication/Circular, 1d/2d/3d."""
from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from ..functional._util import ntuple
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = ntuple(padding, 2 * self._n)

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (self._n + 1, self._n + 2):
            raise ValueError(f"{type(self).__name__}: expected {self._n + 1}D or {self._n + 2}D input "
                             f"(got {input.dim()}D input)")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, mode="constant", value=self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``; ``padding`` is an int or (left, right)."""
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims: (left, right, top, bottom)."""
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    _n = 3


class _ZeroPad(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad):
    _n = 1


class ZeroPad2d(_ZeroPad):
    """Pads the last two dims with zeros."""
    _n = 2


class ZeroPad3d(_ZeroPad):
    _n = 3


class ReflectionPad1d(_PadNd):
    """Pads by reflecting at the border (not repeating the edge)."""
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads by repeating the edge value."""
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Pads by wrapping around."""
    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _n, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _n, _mode = 3, "circular"
