"""Moving tensors between vmap's nested batched form and one physical tensor.

A tensor batched at levels ``l1 < ... < lk`` is, physically, one tensor with dims
``[l1, ..., lk, *logical]`` (the outermost vmap first).
"""
from __future__ import annotations

from .. import _state, ops
from .._tensor import Tensor
from ._batched import BatchedTensor, wrap

__all__ = ["unwrap_all", "wrap_all", "active_levels", "with_levels", "from_levels", "materialize"]

_vm = _state.vmap


def active_levels():
    """``[(level, size)]`` of the vmaps running now, outermost first."""
    return [(lv, n) for lv, n, _ in _vm.levels]


def unwrap_all(x):
    """``(physical, levels ascending)``."""
    levels = []
    while x.__class__ is BatchedTensor:
        levels.append(x._level)
        x = x._value
    return x, levels[::-1]


def wrap_all(phys, levels):
    for lv in levels:
        phys = wrap(phys, lv)
    return phys


def materialize(phys, levels, want):
    """``phys`` (dims ``[levels..., *]``) with a broadcast dim for each level of ``want``
    (``[(level, size)]``) it lacks; returns ``(phys, levels)``."""
    levels = list(levels)
    for lv, n in want:
        if lv in levels:
            continue
        pos = sum(1 for x in levels if x < lv)
        phys = ops.unsqueeze(phys, pos)
        shape = list(phys.shape)
        shape[pos] = n
        phys = ops.expand(phys, *shape)
        levels.insert(pos, lv)
    return phys, levels


def with_levels(x, ctx):
    """``x`` as a tensor whose physical dims hold the levels of ``ctx`` (``[(level, size)]``),
    still batched at its levels above them: ``(tensor, ctx levels)``."""
    if not isinstance(x, Tensor):
        return x
    phys, levels = unwrap_all(x)
    phys, levels = materialize(phys, levels, ctx)
    cl = {lv for lv, _ in ctx}
    higher = [lv for lv in levels if lv not in cl]
    if not higher:
        return phys
    order = [levels.index(lv) for lv in higher] + [levels.index(lv) for lv, _ in ctx if lv in levels]
    rest = list(range(len(levels), phys.dim()))
    phys = ops.permute(phys, *(order + rest))
    return wrap_all(phys, higher)


def from_levels(g, ctx):
    """The inverse of :func:`with_levels`: ``g``'s physical ctx dims back to batched levels."""
    if not isinstance(g, Tensor):
        return g
    phys, higher = unwrap_all(g)
    k, c = len(higher), len(ctx)
    if k:
        order = list(range(k, k + c)) + list(range(k)) + list(range(k + c, phys.dim()))
        phys = ops.permute(phys, *order)
    levels = [lv for lv, _ in ctx] + higher
    pairs = sorted(zip(levels, range(len(levels))))
    if [p[1] for p in pairs] != list(range(len(levels))):
        phys = ops.permute(phys, *([p[1] for p in pairs] + list(range(len(levels), phys.dim()))))
    return wrap_all(phys, [p[0] for p in pairs])
