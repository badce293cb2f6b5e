"""Dropout: zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` (inverted
dropout). The op returns ``(x * mask, mask)``, mask in {0, 1/(1-p)}, drawn from the backend's
generator; the backward multiplies by the saved mask."""
from __future__ import annotations

from ... import _dtype as D
from ..._tensor import Tensor
from .. import comparison as CMP
from .. import random as RNG
from ..registry import dispatch, register_op

__all__ = ["dropout"]


def _dropout_decomp(x, p, gen):
    """(x * mask, mask) with mask = keep / (1 - p) drawn from the backend generator ``gen``."""
    t = x._device._backend.empty(x._shape, x._dtype if x._dtype.category == D._FLOAT else D.float32, x._device)
    x._device._kernels["uniform_"](t, 0.0, 1.0, gen)
    mask = CMP.ge(t, p).to(x._dtype) * (1.0 / (1.0 - p))
    return x * mask, mask


def _dropout_bw(ctx, grads):
    g = grads[0]
    mask = ctx.out[1]
    return (g * mask,)


# the kernel op returns the mask too (for the backward); the front ends return x * mask only
DROPOUT = register_op("dropout", decomposition=_dropout_decomp, backward=_dropout_bw, saves=(), save_output=(1,),
                      group="nn", doc="inverted dropout: (x * mask, mask), mask in {0, 1/(1-p)}")


def fused_dropout(x: Tensor, p: float, generator=None) -> Tensor:
    """``x * mask`` for ``0 < p < 1`` (validated by the caller); ``generator``: an
    ``ember.Generator`` on x's device, else the device's default."""
    out, _ = dispatch(DROPOUT, x._device, (x, float(p), RNG._gen_for(x, generator)), (x,))
    return out


def dropout(input: Tensor, p: float = 0.5, train: bool = True) -> Tensor:
    """``ember.dropout``: zero elements with probability ``p`` and scale the rest by ``1/(1-p)``."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return input
    if p == 1:
        return input * 0.0
    return fused_dropout(input, p)
