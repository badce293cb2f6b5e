"""Dropout family: elementwise, channel-wise (1d/2d/3d) and alpha dropout (inverted scaling)."""
from __future__ import annotations

from ... import _dtype as D
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ._util import check_tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_NEG = 1.7580993408473766  # -SELU's limit for x -> -inf


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return input.copy_(result) if inplace else result


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``; identity when not training."""
    check_tensor(input, "dropout")
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, input * 0.0, inplace)
    if input.dtype.category != D._FLOAT:
        raise RuntimeError(f"dropout: expected a floating point input, got {input.dtype}")
    return _apply(input, _nnops.fused_dropout(input, p), inplace)


def _channel_mask(input: Tensor, p: float, batched_dims: int) -> Tensor:
    shape = tuple(input.shape[:batched_dims]) + (1,) * (input.dim() - batched_dims)
    keep = _ops.rand(shape, dtype=input.dtype, device=input.device) >= p
    return keep.to(input.dtype) * (1.0 / (1.0 - p))


def _feature_dropout(op, nsp, input, p, training, inplace):
    check_tensor(input, op)
    _check_p(p)
    if input.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{op}: Expected {nsp + 1}D or {nsp + 2}D input, but received a {input.dim()}D input")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, input * 0.0, inplace)
    lead = 2 if input.dim() == nsp + 2 else 1
    return _apply(input, input * _channel_mask(input, p, lead), inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) (or (C, L)) with probability ``p``."""
    return _feature_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) (or (C, H, W)) with probability ``p``."""
    return _feature_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) (or (C, D, H, W)) with probability ``p``."""
    return _feature_dropout("dropout3d", 3, input, p, training, inplace)


def _alpha(input, p, training, inplace, feature):
    check_tensor(input, "alpha_dropout")
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, input * 0.0, inplace)
    shape = (tuple(input.shape[:2]) + (1,) * (input.dim() - 2)) if feature else tuple(input.shape)
    keep = (_ops.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    a = 1.0 / ((_SELU_NEG * _SELU_NEG * p + 1) * (1 - p)) ** 0.5
    b = (keep - 1.0) * (_SELU_NEG * a) + _SELU_NEG * a * p
    return _apply(input, input * (keep * a) + b, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance (dropped values go to SELU's
    negative saturation, then an affine correction)."""
    return _alpha(input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels."""
    return _alpha(input, p, training, inplace, True)
