"""Pooling: N-d max pooling (values and flat argmax indices) and average pooling
(``count_include_pad``, ``ceil_mode``, ``divisor_override`` as PyTorch), each with its backward
as an op of its own (so that double backward stays in the family)."""
from __future__ import annotations

import itertools
import math

from ... import _dtype as D
from ...backend.shapes import avg_divisor, pool_out, pool_pads
from .. import arithmetic as A
from .. import creation as CR
from .. import indexing as IX
from .. import reduction as R
from ..declare import defop
from . import padding as PAD

__all__: list = []


def _pool_windows(x, kernel, stride, padding, dilation, out_sp, fill):
    """View (N, C, *kernel, *out) of ``x`` padded with ``fill`` (on the right as far as the
    last window reaches)."""
    in_sp = x._shape[2:]
    right = pool_pads(in_sp, out_sp, kernel, stride, padding, dilation)
    xp = PAD.constant_pad_nd(x, PAD.asym_pad(padding, right), fill).contiguous()
    return PAD.windows(xp, kernel, dilation, stride, out_sp)


# -- max pooling ------------------------------------------------------------------------------

def _window_masks(in_sp, out_sp, kernel, stride, padding, dilation, dev):
    """(*out, K) bool masks of the window positions inside the image, and at or past its start."""
    nsp = len(kernel)
    inside = started = None
    for i in range(nsp):
        c = [[o * stride[i] - padding[i] + k * dilation[i] for k in range(kernel[i])] for o in range(out_sp[i])]
        shape = [1] * (2 * nsp)
        shape[i], shape[nsp + i] = out_sp[i], kernel[i]
        t_in = CR.tensor([[0 <= v < in_sp[i] for v in row] for row in c], dtype=D.bool, device=dev).reshape(shape)
        t_st = CR.tensor([[v >= 0 for v in row] for row in c], dtype=D.bool, device=dev).reshape(shape)
        inside = t_in if inside is None else inside & t_in
        started = t_st if started is None else started & t_st
    full = tuple(out_sp) + tuple(kernel)
    K = math.prod(kernel)
    return (inside.expand(full).reshape(tuple(out_sp) + (K,)), started.expand(full).reshape(tuple(out_sp) + (K,)))


def _max_pool_decomp(x, kernel, stride, padding, dilation, ceil_mode):
    nsp = len(kernel)
    in_sp = x._shape[2:]
    out_sp = tuple(pool_out(in_sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nsp))
    fill = -math.inf if x._dtype.category == D._FLOAT else D.iinfo(x._dtype).min
    w = _pool_windows(x, kernel, stride, padding, dilation, out_sp, fill)
    K = math.prod(kernel)
    perm = (0, 1) + tuple(range(2 + nsp, 2 + 2 * nsp)) + tuple(range(2, 2 + nsp))
    w = w.permute(perm).reshape(x._shape[:2] + out_sp + (K,))
    # PyTorch's loop: over the window's in-image positions, the first one greater than the running
    # max (from -inf) or any NaN (so the last NaN); none: the window's first position at or past
    # the image's start (outside it only in a window all of padding)
    inside, started = _window_masks(in_sp, out_sp, kernel, stride, padding, dilation, x._device)
    vals = w.amax(-1, keepdim=True)
    cand = (w == vals) & inside
    first = lambda m: m.to(D.int64).argmax(-1)  # noqa: E731 - the first True along the window
    arg = first(cand).where(cand.any(-1), first(started))
    if x._dtype.category == D._FLOAT:
        nans = w.isnan() & inside
        last = (K - 1) - first(nans.flip(-1))
        arg = last.where(nans.any(-1), arg)
        vals = vals.where(~w.isnan().any(-1, keepdim=True), math.nan)
    vals = vals.squeeze(-1)
    # window-local argmax -> flat index into the unpadded input's spatial dims
    flat = None
    rem = arg
    for i in range(nsp):
        kin = math.prod(kernel[i + 1:])
        ki = rem // kin if kin > 1 else rem
        rem = A.remainder(rem, kin) if kin > 1 else rem
        o = CR.arange(out_sp[i], device=x._device).reshape((out_sp[i],) + (1,) * (nsp - 1 - i))
        coord = A.add(A.mul(o, stride[i]) - padding[i], A.mul(ki, dilation[i]))
        flat = coord if flat is None else A.add(A.mul(flat, in_sp[i]), coord)
    return vals, flat


def _max_pool_bw(ctx, grads):
    g = grads[0] if isinstance(grads, tuple) else grads
    x = ctx.args[0]
    idx = ctx.out[1]
    return (max_pool_backward(g, idx, x.shape),)


@defop("max_pool", decomposition=_max_pool_decomp, backward=_max_pool_bw, saves=(), save_output=(1,), out=False,
       method=False, group="nn")
def max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    """N-d max pooling: (values, flat spatial indices)"""
    return x._device, (x, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), bool(ceil_mode)), (x,)


def _max_pool_backward_decomp(g, idx, in_shape):
    N, C = in_shape[:2]
    z = CR.zeros((N, C, math.prod(in_shape[2:])), dtype=g._dtype, device=g._device)
    flat = (N, C, math.prod(idx._shape[2:]))  # (no -1: N may be 0)
    return IX.scatter_add(z, 2, idx.reshape(flat), g.reshape(flat)).reshape(tuple(in_shape))


def _max_pool_backward_bw(ctx, gg):
    g, idx, in_shape = ctx.args
    N, C = in_shape[:2]
    flat_in, flat_idx = (N, C, math.prod(in_shape[2:])), (N, C, math.prod(idx._shape[2:]))
    return (IX.gather(gg.reshape(flat_in), 2, idx.reshape(flat_idx)).reshape(idx.shape),)


@defop("max_pool_backward", decomposition=_max_pool_backward_decomp, backward=_max_pool_backward_bw, saves=(),
       out=False, method=False, group="nn")
def max_pool_backward(g, idx, in_shape):
    """scatter pooled gradients back to the argmax positions"""
    return g._device, (g, idx, tuple(in_shape)), (g,)


# -- average pooling --------------------------------------------------------------------------

def _divisor_tensor(per_dim, divisor_override, dtype, dev):
    """The divisor of every output element: the product over dims of ``per_dim`` (the window
    sizes of :func:`ember.backend.shapes.avg_divisor`), or ``divisor_override``."""
    if per_dim is None:
        return float(divisor_override)
    nsp = len(per_dim)
    d = None
    for i, sizes in enumerate(per_dim):
        t = CR.tensor(sizes, dtype=dtype, device=dev).reshape((len(sizes),) + (1,) * (nsp - 1 - i))
        d = t if d is None else d * t
    return d


def _avg_pool_decomp(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    nsp = len(kernel)
    in_sp = x._shape[2:]
    ones = (1,) * nsp
    out_sp = tuple(pool_out(in_sp[i], kernel[i], stride[i], padding[i], 1, ceil_mode) for i in range(nsp))
    w = _pool_windows(x, kernel, stride, padding, ones, out_sp, 0.0)
    s = R.sum(w, tuple(range(2, 2 + nsp)), False)
    per = avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return s / _divisor_tensor(per, divisor_override, x._dtype, x._device)


def _avg_pool_bw(ctx, g):
    x, kernel, stride, padding, ceil_mode, cip, dov = ctx.args
    return (avg_pool_backward(g, x.shape, kernel, stride, padding, ceil_mode, cip, dov),)


@defop("avg_pool", decomposition=_avg_pool_decomp, backward=_avg_pool_bw, saves=(), out=False, method=False,
       group="nn")
def avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """N-d average pooling (count_include_pad, ceil_mode, divisor_override as PyTorch)"""
    return (x._device, (x, tuple(kernel), tuple(stride), tuple(padding), bool(ceil_mode), bool(count_include_pad),
                        divisor_override), (x,))


def _avg_pool_backward_decomp(g, in_shape, kernel, stride, padding, ceil_mode, cip, dov):
    nsp = len(kernel)
    in_sp = tuple(in_shape[2:])
    out_sp = g._shape[2:]
    per = avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov)
    gd = g / _divisor_tensor(per, dov, g._dtype, g._device)
    right = pool_pads(in_sp, out_sp, kernel, stride, padding, (1,) * nsp)
    padded = tuple(in_sp[i] + padding[i] + right[i] for i in range(nsp))
    out = CR.zeros(tuple(in_shape[:2]) + padded, dtype=g._dtype, device=g._device)
    for kk in itertools.product(*(range(k) for k in kernel)):
        dst = out
        for i in range(nsp):
            dst = dst.narrow(2 + i, kk[i], (out_sp[i] - 1) * stride[i] + 1)
            if stride[i] > 1:
                dst = dst[(slice(None),) * (2 + i) + (slice(None, None, stride[i]),)]
        dst.add_(gd)
    for i in range(nsp):
        out = out.narrow(2 + i, padding[i], in_sp[i])
    return out.contiguous()


def _avg_pool_backward_bw(ctx, gg):
    g, in_shape, kernel, stride, padding, ceil_mode, cip, dov = ctx.args
    return (avg_pool(gg, kernel, stride, padding, ceil_mode, cip, dov),)


@defop("avg_pool_backward", decomposition=_avg_pool_backward_decomp, backward=_avg_pool_backward_bw, saves=(),
       out=False, method=False, group="nn")
def avg_pool_backward(g, in_shape, kernel, stride, padding, ceil_mode, cip, dov):
    """spread pooled gradients back over their windows"""
    return (g._device, (g, tuple(in_shape), tuple(kernel), tuple(stride), tuple(padding), bool(ceil_mode), bool(cip),
                        dov), (g,))
