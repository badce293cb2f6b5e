"""Convolution: im2col / col2im (``F.unfold`` / ``F.fold``), the N-d convolution, its transpose
and its weight gradient, and convolution_backward (the first-order gradients in one op).

convolution(x, w, b): x (N, Cin, *sp), w (Cout, Cin/G, *k). Its input gradient is
conv_transpose, its weight gradient conv_weight_grad; each of the three ops' gradients are the
other two, so derivatives of any order stay inside this family (as PyTorch's
convolution_backward). The first-order backward is one op, convolution_backward, which a backend
may implement to compute the input, weight and bias gradients together.
"""
from __future__ import annotations

import itertools
import math

from ... import _state
from ...backend.shapes import conv_out, conv_transpose_out
from .. import creation as CR
from .. import linalg as LA
from .. import reduction as R
from ..declare import defop
from ..registry import dispatch, register_op
from . import padding as PAD

__all__: list = []

_grad = _state.grad


# -- im2col / col2im --------------------------------------------------------------------------

def _im2col_decomp(x, kernel, dilation, padding, stride):
    xp = PAD.constant_pad_nd(x, PAD.sym_pad(padding), 0.0).contiguous()
    nsp = len(kernel)
    out_sp = tuple(conv_out(x._shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    w = PAD.windows(xp, kernel, dilation, stride, out_sp)
    N, C = x._shape[:2]
    return w.reshape(N, C * math.prod(kernel), math.prod(out_sp))


def _im2col_bw(ctx, g):
    x, kernel, dilation, padding, stride = ctx.args
    return (col2im(g, x.shape[2:], kernel, dilation, padding, stride),)


def _col2im_decomp(cols, out_sp, kernel, dilation, padding, stride):
    nsp = len(kernel)
    N = cols._shape[0]
    C = cols._shape[1] // math.prod(kernel)
    L_sp = tuple(conv_out(out_sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    padded = tuple(out_sp[i] + 2 * padding[i] for i in range(nsp))
    out = CR.zeros((N, C) + padded, dtype=cols._dtype, device=cols._device)
    c = cols.reshape((N, C) + tuple(kernel) + L_sp)
    for kk in itertools.product(*(range(k) for k in kernel)):
        dst = out
        for i in range(nsp):
            dst = dst.narrow(2 + i, kk[i] * dilation[i], (L_sp[i] - 1) * stride[i] + 1)
            if stride[i] > 1:
                dst = dst[(slice(None),) * (2 + i) + (slice(None, None, stride[i]),)]
        src = c
        for i in range(nsp):
            src = src.select(2, kk[i])
        dst.add_(src)
    for i in range(nsp):
        if padding[i]:
            out = out.narrow(2 + i, padding[i], out_sp[i])
    return out.contiguous() if any(padding) else out


def _col2im_bw(ctx, g):
    cols, out_sp, kernel, dilation, padding, stride = ctx.args
    return (im2col(g, kernel, dilation, padding, stride),)


@defop("im2col", decomposition=_im2col_decomp, backward=_im2col_bw, saves=(), out=False, method=False, group="nn")
def im2col(x, kernel, dilation, padding, stride):
    """sliding blocks of (N, C, *sp) as columns (N, C*K, L): F.unfold"""
    return x._device, (x, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride)), (x,)


@defop("col2im", decomposition=_col2im_decomp, backward=_col2im_bw, saves=(), out=False, method=False, group="nn")
def col2im(cols, out_sp, kernel, dilation, padding, stride):
    """sum of columns (N, C*K, L) back into (N, C, *sp): F.fold"""
    return cols._device, (cols, tuple(out_sp), tuple(kernel), tuple(dilation), tuple(padding), tuple(stride)), (cols,)


# -- convolution ------------------------------------------------------------------------------

def _conv_decomp(x, w, b, stride, padding, dilation, groups):
    N = x._shape[0]
    Cout = w._shape[0]
    kernel = w._shape[2:]
    nsp = len(kernel)
    out_sp = tuple(conv_out(x._shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    cols = _im2col_decomp(x, kernel, dilation, padding, stride)  # (N, Cin*K, L)
    G = groups
    cols = cols.reshape(N, G, cols._shape[1] // G, cols._shape[2])
    wg = w.reshape(G, Cout // G, -1)
    out = LA.matmul(wg, cols).reshape((N, Cout) + out_sp)
    if b is not None:
        out = out + b.reshape((1, Cout) + (1,) * nsp)
    return out


def _transpose_out_pad(in_sp, out_sp, kernel, stride, padding, dilation):
    """output_padding making conv_transpose of an ``out_sp`` tensor ``in_sp`` large."""
    return tuple(in_sp[i] - conv_transpose_out(out_sp[i], kernel[i], stride[i], padding[i], 0, dilation[i])
                 for i in range(len(kernel)))


def _bias_grad(g):
    return R.sum(g, (0,) + tuple(range(2, g.dim())), False)


def _conv_backward_decomp(g, x, w, stride, padding, dilation, groups, output_mask):
    """``(grad_input, grad_weight, grad_bias)`` of a convolution, each None unless asked for in
    ``output_mask`` (three bools); a backend may compute them together (sharing layouts of g)."""
    gx = gw = gb = None
    if output_mask[0]:
        op = _transpose_out_pad(x.shape[2:], g.shape[2:], w.shape[2:], stride, padding, dilation)
        gx = conv_transpose(g, w, None, stride, padding, op, dilation, groups)
    if output_mask[1]:
        gw = conv_weight_grad(x, g, w.shape, stride, padding, dilation, groups)
    if output_mask[2]:
        gb = _bias_grad(g)
    return gx, gw, gb


def _conv_bw(ctx, g):
    x, w, b, stride, padding, dilation, groups = ctx.args
    need = ctx.needs_input_grad
    mask = (need[0], need[1], b is not None and need[2])
    if _grad.enabled:  # double backward: each part differentiable on its own
        gx, gw, gb = _conv_backward_decomp(g, x, w, stride, padding, dilation, groups, mask)
    else:
        gx, gw, gb = dispatch(CONVOLUTION_BACKWARD, g._device, (g, x, w, stride, padding, dilation, groups, mask), ())
    return (gx, gw) if b is None else (gx, gw, gb)


@defop("convolution", decomposition=_conv_decomp, backward=_conv_bw, out=False, method=False, group="nn")
def convolution(x, w, b, stride, padding, dilation, groups):
    """N-d cross-correlation (zero padding) of (N, Cin, *sp) with (Cout, Cin/groups, *k)"""
    return (x._device, (x, w, b, tuple(stride), tuple(padding), tuple(dilation), int(groups)),
            (x, w) if b is None else (x, w, b))


# -- transposed convolution -------------------------------------------------------------------

def _conv_transpose_decomp(x, w, b, stride, padding, output_padding, dilation, groups):
    N, Cin = x._shape[:2]
    kernel = w._shape[2:]
    nsp = len(kernel)
    G = groups
    Cout = w._shape[1] * G
    in_sp = x._shape[2:]
    out_sp = tuple(conv_transpose_out(in_sp[i], kernel[i], stride[i], padding[i], output_padding[i], dilation[i])
                   for i in range(nsp))
    L = math.prod(in_sp)
    xg = x.reshape(N, G, Cin // G, L)
    wg = w.reshape(G, Cin // G, -1).transpose(1, 2)  # (G, Cout/G*K, Cin/G)
    cols = LA.matmul(wg, xg).reshape(N, Cout * math.prod(kernel), L)
    out = _col2im_decomp(cols, out_sp, kernel, dilation, padding, stride)
    if b is not None:
        out = out + b.reshape((1, Cout) + (1,) * nsp)
    return out


def _conv_transpose_bw(ctx, g):
    x, w, b, stride, padding, output_padding, dilation, groups = ctx.args
    need = ctx.needs_input_grad
    gx = gw = gb = None
    kernel = w.shape[2:]
    # with output_padding >= stride (possible when dilation > 1) the convolution of g has
    # output_padding // stride more positions per dim than x: g there meets no input
    extra = tuple(conv_out(g.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) - x.shape[2 + i]
                  for i in range(len(kernel)))
    pads = tuple(p for e in reversed(extra) for p in (0, e))
    if need[0]:
        gx = convolution(g, w, None, stride, padding, dilation, groups)
        gx = PAD.constant_pad_nd(gx, tuple(-p for p in pads), 0.0)
    if need[1]:
        gw = conv_weight_grad(g, PAD.constant_pad_nd(x, pads, 0.0), w.shape, stride, padding, dilation, groups)
    if b is not None and need[2]:
        gb = _bias_grad(g)
    return (gx, gw) if b is None else (gx, gw, gb)


@defop("conv_transpose", decomposition=_conv_transpose_decomp, backward=_conv_transpose_bw, out=False, method=False,
       group="nn")
def conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
    """N-d transposed convolution (the input gradient of convolution)"""
    return (x._device, (x, w, b, tuple(stride), tuple(padding), tuple(output_padding), tuple(dilation), int(groups)),
            (x, w) if b is None else (x, w, b))


# the first-order gradients in one op (the backward of convolution without create_graph)
CONVOLUTION_BACKWARD = register_op("convolution_backward", decomposition=_conv_backward_decomp, differentiable=False,
                                   group="nn", doc="the first-order gradients of convolution, as output_mask asks")


# -- weight gradient --------------------------------------------------------------------------

def _conv_weight_grad_decomp(x, g, wshape, stride, padding, dilation, groups):
    N = x._shape[0]
    kernel = tuple(wshape[2:])
    G = groups
    Cout = wshape[0]
    cols = _im2col_decomp(x, kernel, dilation, padding, stride)  # (N, Cin*K, L)
    cols = cols.reshape(N, G, cols._shape[1] // G, cols._shape[2])
    gg = g.reshape(N, G, Cout // G, math.prod(g._shape[2:]))  # (no -1: N may be 0)
    return R.sum(LA.matmul(gg, cols.transpose(2, 3)), (0,), False).reshape(tuple(wshape))


def _conv_weight_grad_bw(ctx, gw):
    x, g, wshape, stride, padding, dilation, groups = ctx.args
    need = ctx.needs_input_grad
    gx = gg = None
    if need[0]:
        op = _transpose_out_pad(x.shape[2:], g.shape[2:], wshape[2:], stride, padding, dilation)
        gx = conv_transpose(g, gw, None, stride, padding, op, dilation, groups)
    if need[1]:
        gg = convolution(x, gw, None, stride, padding, dilation, groups)
    return (gx, gg)


@defop("conv_weight_grad", decomposition=_conv_weight_grad_decomp, backward=_conv_weight_grad_bw, out=False,
       method=False, group="nn")
def conv_weight_grad(x, g, wshape, stride, padding, dilation, groups):
    """the weight gradient of convolution for input x and output gradient g"""
    return x._device, (x, g, tuple(wshape), tuple(stride), tuple(padding), tuple(dilation), int(groups)), (x, g)
