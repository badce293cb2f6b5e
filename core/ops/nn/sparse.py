"""Sparse lookups: embedding (rows of a weight at integer indices) and its dense weight
gradient, embedding_backward (rows summed per index, none for ``padding_idx``)."""
from __future__ import annotations

from .. import comparison as CMP
from .. import creation as CR
from .. import indexing as IX
from ..declare import defop

__all__: list = []


def _embedding_decomp(w, idx, padding_idx):
    return IX.index_select(w, 0, idx.reshape(-1)).reshape(idx._shape + (w._shape[1],))


def _embedding_bw(ctx, g):
    w, idx, padding_idx = ctx.args
    return (embedding_backward(g, idx, w.shape[0], padding_idx),)


@defop("embedding", decomposition=_embedding_decomp, backward=_embedding_bw, saves=(), out=False, method=False,
       group="nn")
def embedding(w, idx, padding_idx):
    """rows of weight at integer indices (arguments validated by ``F.embedding``)"""
    return w._device, (w, idx, padding_idx), (w,)


def _embedding_backward_decomp(g, idx, num, padding_idx):
    D_ = g._shape[-1]
    flat = idx.reshape(-1)
    gf = g.reshape(flat._shape[0], D_)  # (no -1: D_ may be 0)
    if padding_idx is not None:
        gf = gf * CMP.ne(flat, padding_idx).unsqueeze(1).to(g._dtype)
    z = CR.zeros((num, D_), dtype=g._dtype, device=g._device)
    return IX.index_add(z, 0, flat, gf)


def _embedding_backward_bw(ctx, gg):
    g, idx, num, padding_idx = ctx.args
    r = embedding(gg, idx, None)
    if padding_idx is not None:
        r = r * CMP.ne(idx, padding_idx).unsqueeze(-1).to(r._dtype)
    return (r,)


@defop("embedding_backward", decomposition=_embedding_backward_decomp, backward=_embedding_backward_bw, saves=(),
       out=False, method=False, group="nn")
def embedding_backward(g, idx, num, padding_idx):
    """dense weight gradient of embedding (rows summed per index)"""
    return g._device, (g, idx, int(num), padding_idx), (g,)
