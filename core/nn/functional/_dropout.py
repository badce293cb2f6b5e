"""Dropout family: elementwise, channel-wise (1d/2d/3d) and alpha dropout (inverted scaling)."""
from __future__ import annotations

import warnings

from ... import _dtype as D
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops.vmap_hook import hooked
from ._util import check_tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_NEG = 1.7580993408473766  # -SELU's limit for x -> -inf


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    return input.copy_(result) if inplace else result


@hooked("dropout")
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


def _feature_dropout(input, p, training, inplace, lead):
    """Channel dropout: one draw per index of the first ``lead`` dims (PyTorch's feature_dropout
    with the unbatched forms' leading 1 left out)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _apply(input, input * 0.0, inplace)
    if input.dim() + 2 - lead < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _apply(input, input * _channel_mask(input, p, lead), inplace)


def _warn_rank(op, nsp, input):
    """PyTorch's deprecation warning for dropout2d/3d of another rank (which still applies)."""
    d = input.dim()
    if d not in (nsp + 1, nsp + 2):
        warnings.warn(f"{op}: Received a {d}-D input to {op}, which is deprecated and will result in an error in a "
                      "future release. To retain the behavior and silence this warning, please use dropout instead. "
                      f"Note that {op} exists to provide channel-wise dropout on inputs with {nsp} spatial dimensions, "
                      f"a channel dimension, and an optional batch dimension (i.e. {nsp + 1}D or {nsp + 2}D inputs).",
                      stacklevel=3)


@hooked("dropout1d")
def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) (or (C, L)) with probability ``p``."""
    check_tensor(input, "dropout1d")
    _check_p(p)
    d = input.dim()
    if d not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {d}D input. Note that dropout1d exists "
                           "to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, "
                           "and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, 2 if d == 3 else 1)


@hooked("dropout2d")
def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability ``p``. As PyTorch, other ranks warn
    and a 3-D input is read as (N, C, L): the draws are per index of the first two dims."""
    check_tensor(input, "dropout2d")
    _check_p(p)
    _warn_rank("dropout2d", 2, input)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, 2)


@hooked("dropout3d")
def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) (or (C, D, H, W)) with probability ``p``; other
    ranks warn (as PyTorch) and are read as unbatched: one draw per index of dim 0."""
    check_tensor(input, "dropout3d")
    _check_p(p)
    _warn_rank("dropout3d", 3, input)
    return _feature_dropout(input, p, training, inplace, 2 if input.dim() == 5 else 1)


def _alpha(input, p, training, inplace, feature):
    check_tensor(input, "alpha_dropout")
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _apply(input, input * 0.0, inplace)
    if feature and input.dim() < 2 and input.numel():
        raise RuntimeError(f"feature_alpha_dropout: Feature dropout requires at least 2 dimensions in the input "
                           f"(got {input.dim()}-D)")
    shape = (tuple(input.shape[:2]) + (1,) * (input.dim() - 2)) if feature else tuple(input.shape)
    keep = (_ops.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    a = 1.0 / ((_SELU_NEG * _SELU_NEG * p + 1) * (1 - p)) ** 0.5
    b = (keep - 1.0) * (_SELU_NEG * a) + _SELU_NEG * a * p
    return _apply(input, input * (keep * a) + b, inplace)


@hooked("alpha_dropout")
def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance (dropped values go to SELU's
    negative saturation, then an affine correction)."""
    return _alpha(input, p, training, inplace, False)


@hooked("feature_alpha_dropout")
def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels."""
    return _alpha(input, p, training, inplace, True)
