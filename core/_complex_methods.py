"""The Tensor API of complex tensors: the ``real``/``imag`` attributes (views; assigning to them
writes the parts) and the conjugating transposes ``H``/``mH``."""
from __future__ import annotations

from . import ops
from ._tensor import Tensor

__all__ = ["install"]


def _real(self):
    return ops.real(self)


def _set_real(self, value):
    ops.real(self).copy_(value)


def _imag(self):
    return ops.imag(self)


def _set_imag(self, value):
    ops.imag(self).copy_(value)


def _H(self):
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
    return ops.conj(ops.t(self))


def _mH(self):
    return ops.conj(self.mT)


def install() -> None:
    """Bind the attributes above to ``Tensor`` (once, from ``ember/__init__``)."""
    T = Tensor
    T.real = property(_real, _set_real)
    T.imag = property(_imag, _set_imag)
    T.H = property(_H)
    T.mH = property(_mH)
