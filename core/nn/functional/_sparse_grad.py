"""``F.embedding(..., sparse=True)``: the weight's gradient is a sparse COO tensor (one entry per
looked-up index, uncoalesced, none for ``padding_idx``), as PyTorch's, for ``optim.SparseAdam``
and ``optim.SGD``."""
from __future__ import annotations

from ... import _dtype as D
from ... import autograd as _autograd
from ...ops import creation as _factory
from ...ops import nn as _nnops
from ...ops import sparse as _sparse

__all__: list = []


class SparseEmbedding(_autograd.Function):
    """``embedding(weight, idx, padding_idx)`` with a sparse gradient for ``weight``."""

    @staticmethod
    def forward(ctx, weight, idx, padding_idx):
        ctx.idx, ctx.padding_idx, ctx.num = idx, padding_idx, weight.shape[0]
        return _nnops.embedding(weight, idx, padding_idx)

    @staticmethod
    def backward(ctx, g):
        idx, n_features = ctx.idx.reshape(-1), g.shape[-1]
        values = g.reshape(-1, n_features)
        if ctx.padding_idx is not None:
            keep = idx != ctx.padding_idx
            idx, values = idx[keep], values[keep]
        if idx.numel() == 0:
            idx = _factory.zeros(0, dtype=D.int64, device=g.device)
        grad = _sparse.sparse_coo_tensor(idx.reshape(1, -1), values, (ctx.num, n_features))
        return grad, None, None
