"""Distances: ``F.pairwise_distance``, ``F.cosine_similarity``, ``F.pdist``."""
from __future__ import annotations

import math

from ... import ops as _ops
from ..._tensor import Tensor
from ...ops.autocast import policy as _amp_policy
from ._util import check_tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim."""
    check_tensor(x1, "pairwise_distance", "x1")
    check_tensor(x2, "pairwise_distance", "x2")
    d = max(x1.dim(), x2.dim()) - 1
    if d < 0:
        return _ops.abs(x1 - x2 + eps)
    return _ops.norm(x1 - x2 + eps, p, d, keepdim=keepdim)


@_amp_policy("cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between x1 and x2 along ``dim``; each norm is clamped at ``eps``
    (without blocking its gradient, as PyTorch)."""
    check_tensor(x1, "cosine_similarity", "x1")
    check_tensor(x2, "cosine_similarity", "x2")
    a, b = _ops.broadcast_tensors(x1, x2)
    na = _ops.norm(a, 2, dim, keepdim=True)
    nb = _ops.norm(b, 2, dim, keepdim=True)
    na = na + (na.clamp_min(eps) - na).detach()
    nb = nb + (nb.clamp_min(eps) - nb).detach()
    return ((a / na) * (b / nb)).sum(dim)


@_amp_policy("pdist")
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between all pairs of rows i < j of (N, M), as a vector of N(N-1)/2."""
    check_tensor(input, "pdist")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    if n < 2:  # no pair: an empty result, still in input's graph
        return input.reshape(-1).narrow(0, 0, 0) * 1
    ij = _ops.triu_indices(n, n, 1, device=input.device)
    diff = input.index_select(0, ij[0]) - input.index_select(0, ij[1])
    if not input.dtype.is_floating_point:
        return _ops.norm(diff, p, 1)
    a = diff.abs()
    if p == 0:  # the count of differing elements: NaN where one is NaN
        return _ops.where(diff.isnan(), diff, (diff != 0).to(diff.dtype)).sum(1)
    if p == math.inf:
        # the largest |difference|, its gradient going whole to every element that reaches it (as
        # PyTorch's pdist; amax would share it among them)
        m = a.amax(1, keepdim=True).detach()
        on = (a == m) & m.isfinite()
        return (m + _ops.where(on, a - m, 0.0).sum(1, keepdim=True)).squeeze(1)
    if 0 < p < 1:  # |d|^p has no finite gradient at d = 0: PyTorch's pdist gives 0 there
        zero = a == 0
        t = _ops.where(zero, 0.0, _ops.where(zero, 1.0, a).pow(p))
        return t.sum(1).pow(1.0 / p)
    return _ops.norm(diff, p, 1)
