"""The dense layer: linear, ``x @ weight.T + bias`` (one op, so a backend can run it as one GEMM
with the bias fused, and its backward as two)."""
from __future__ import annotations

import math

from .. import linalg as LA
from .. import reduction as R
from ..declare import defop

__all__: list = []


def _linear_decomp(x, w, b):
    r = LA.matmul(x, w.t())
    return r if b is None else r + b


def _linear_bw(ctx, g):
    x, w, b = ctx.args
    need = ctx.needs_input_grad
    gx = LA.matmul(g, w) if need[0] else None
    gw = gb = None
    if need[1] or (b is not None and need[2]):
        rows = math.prod(g.shape[:-1])  # (no -1 in the reshapes: any size may be 0)
        g2 = g.reshape(rows, g.shape[-1]) if g.dim() != 2 else g
        if need[1]:
            x2 = x.reshape(rows, x.shape[-1]) if x.dim() != 2 else x
            gw = LA.matmul(g2.t(), x2)
        if b is not None and need[2]:
            gb = R.sum(g2, (0,), False)
    return (gx, gw) if b is None else (gx, gw, gb)


def _linear_saves(args, needs):
    # x is read for the weight's gradient, the weight for x's; the bias for neither
    return tuple(i for i, k in ((0, needs[1]), (1, needs[0])) if k)


@defop("linear", decomposition=_linear_decomp, backward=_linear_bw, saves=_linear_saves, out=False, method=False,
       group="nn")
def linear(x, w, b):
    """x @ weight.T + bias (arguments validated by ``F.linear``)"""
    if x.dim() == 1:  # a single sample: matmul gives a vector, keep the formula simple
        return None, linear(x.unsqueeze(0), w, b).squeeze(0), None
    return x._device, (x, w, b), (x, w) if b is None else (x, w, b)
