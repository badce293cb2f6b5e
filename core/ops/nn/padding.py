"""Padding and sliding windows: constant_pad_nd (pad, or crop with negative sizes, with a
constant) and the strided window view that im2col and pooling decompose into."""
from __future__ import annotations

from ... import _dtype as D
from .. import creation as CR
from .. import views as V
from ..declare import defop

__all__: list = []


def _pad_geometry(shape, pad):
    """Output shape and, per dim, (lo, hi) for PyTorch's pad list (last dim first)."""
    nd = len(shape)
    lohi = [(0, 0)] * nd
    for i in range(len(pad) // 2):
        d = nd - 1 - i
        lohi[d] = (pad[2 * i], pad[2 * i + 1])
    out = tuple(s + lo + hi for s, (lo, hi) in zip(shape, lohi))
    return out, lohi


def _constant_pad_decomp(x, pad, value):
    out_shape, lohi = _pad_geometry(x._shape, pad)
    out = CR.full(out_shape, value, dtype=x._dtype, device=x._device)
    src, dst = x, out
    for d, (lo, hi) in enumerate(lohi):
        if lo < 0:
            src = src.narrow(d, -lo, src._shape[d] + lo)
        if hi < 0:
            src = src.narrow(d, 0, src._shape[d] + hi)
        dst = dst.narrow(d, max(lo, 0), src._shape[d])
    if src.numel():
        dst.copy_(src)
    return out


def _constant_pad_bw(ctx, g):
    pad = ctx.args[1]
    return (constant_pad_nd(g, tuple(-p for p in pad), 0.0),)


@defop("constant_pad_nd", decomposition=_constant_pad_decomp, backward=_constant_pad_bw, saves=(), out=False,
       method=False, group="nn")
def constant_pad_nd(x, pad, value=0.0):
    """pad (or crop, with negative sizes) with a constant; ``pad`` is PyTorch's list (last dim
    first: lo, hi, ...)"""
    if not any(pad):
        return None, x, None
    if x._dtype.category != D._FLOAT:
        value = int(value) if x._dtype is not D.bool else bool(value)
    return x._device, (x, tuple(pad), value), (x,)


def sym_pad(padding) -> tuple:
    """PyTorch pad list (last dim first) for symmetric per-dim ``padding``."""
    out = []
    for p in reversed(padding):
        out += [p, p]
    return tuple(out)


def asym_pad(lo, hi) -> tuple:
    """PyTorch pad list (last dim first) for per-dim ``lo`` and ``hi`` padding."""
    out = []
    for a, b in zip(reversed(lo), reversed(hi)):
        out += [a, b]
    return tuple(out)


def windows(xp, kernel, dilation, stride, out_sp):
    """View (N, C, *kernel, *out) of the (padded, contiguous) ``xp``."""
    st = xp._stride
    nsp = len(kernel)
    size = xp._shape[:2] + tuple(kernel) + tuple(out_sp)
    win = tuple(st[2 + i] * dilation[i] for i in range(nsp)) + tuple(st[2 + i] * stride[i] for i in range(nsp))
    return V.as_strided(xp, size, st[:2] + win, xp._offset)
