"""Masked ops: masked_fill, masked_select, masked_scatter, and the positions of a mask's True
(nonzero) elements: nonzero and argwhere.

nonzero is a primitive (its result's size depends on the data); the masked ops are written in
``where`` and advanced indexing.
"""
from __future__ import annotations

from ... import _dtype as D
from ..._tensor import Tensor
from .. import _args as U
from .. import copy as CP
from .. import pointwise as PW
from ..declare import composite, defop
from . import advanced as AD

__all__ = ["masked_fill", "masked_fill_", "masked_select", "masked_scatter", "masked_scatter_", "nonzero", "argwhere"]


def _mask_arg(mask, op):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._dtype is not D.bool:
        if mask._dtype is D.uint8:
            return mask.to(D.bool)
        raise RuntimeError(f"{op}: expected BoolTensor for mask")
    return mask


# -- masked_fill, masked_select, masked_scatter ----------------------------------------------------

@composite("masked_fill", inplace=True, out=False, group="index")
def masked_fill(input, mask, value):
    """``value`` where ``mask`` (broadcast) is True, else ``input``."""
    mask = _mask_arg(mask, "masked_fill")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        if not value._requires_grad:
            value = value.item()
    if not isinstance(value, Tensor):
        value = CP.scalar_for(value, input._dtype, "masked_fill")
    U.broadcast_shapes(input._shape, mask._shape, "masked_fill")
    r = PW.where(mask, value, input)
    return r if r._dtype is input._dtype else r.to(input._dtype)


masked_fill_ = masked_fill.inplace


@composite("masked_select", group="index")
def masked_select(input, mask):
    """The elements where ``mask`` (broadcast with input) is True, as a 1-D tensor."""
    mask = _mask_arg(mask, "masked_select")
    shape = U.broadcast_shapes(input._shape, mask._shape, "masked_select")
    return AD.getitem(input.expand(shape), mask.expand(shape))


@composite("masked_scatter", inplace=True, out=False, group="index")
def masked_scatter(input, mask, source):
    """``input`` with the True positions of ``mask`` filled by consecutive elements of ``source``."""
    mask = _mask_arg(mask, "masked_scatter")
    shape = U.broadcast_shapes(input._shape, mask._shape, "masked_scatter")
    m = mask.expand(shape)
    n = int(m.sum().item())
    if source.numel() < n:
        raise RuntimeError(f"masked_scatter: expected source to have at least {n} elements, got {source.numel()}")
    r = input.expand(shape).clone()
    AD.setitem(r, m, source.reshape(-1)[:n])
    return r


masked_scatter_ = masked_scatter.inplace


# -- nonzero, argwhere ------------------------------------------------------------------------------

@defop("nonzero", differentiable=False, group="index")
def nonzero(input, *, as_tuple: bool = False):
    """Indices of the nonzero elements, as [n, ndim] (or a tuple of 1-D tensors)."""
    x = input
    if x.dim() == 0:
        r = nonzero(x.reshape(1))
        return None, ((r[:, 0],) if as_tuple else r[:, :0]), None
    if as_tuple:
        r = nonzero(x)
        return None, tuple(r[:, i] for i in range(x.dim())), None
    return x._device, (x,), ()


@composite("argwhere", out=False, group="index")
def argwhere(input):
    """The indices of the nonzero elements, as an [n, ndim] tensor."""
    return nonzero(input)
