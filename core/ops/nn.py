"""Fused neural-network ops: softmax / log_softmax, NLL loss, linear, convolution (and its
transpose and weight gradient), im2col / col2im, padding, pooling, batch / layer norm,
embedding and dropout.

Each op is declared once with a decomposition into other ember ops (so it runs on every
backend) and a backward formula written in ember ops (so double backward works everywhere); a
backend may register a fused kernel under the op's name (cpu_numpy does, in ``nn_kernels.py``).
The front ends here are thin and mostly private: ``ember.nn.functional`` validates the user's
arguments (names, shapes, PyTorch's messages) and calls them. ``softmax`` and ``log_softmax``
are also ``ember.softmax`` / ``Tensor.softmax`` as in PyTorch.

Conventions: spatial ops work on ``(N, C, *spatial)`` tensors with one int per spatial dim for
``kernel``, ``stride``, ``padding``, ``dilation`` (tuples, already normalised by the caller).
"""
from __future__ import annotations

import itertools
import math

from .. import _dtype as D
from .. import _state
from .._tensor import Tensor, _wrap_dim
from . import _args as U
from .registry import dispatch, register_op
from . import arithmetic as A
from . import comparison as CMP
from . import creation as CR
from . import indexing as IX
from . import linalg as LA
from . import pointwise as PW
from . import random as RNG
from . import reduction as R
from . import unary as UN
from . import views as V

__all__ = ["dropout", "log_softmax", "softmax"]

_grad = _state.grad


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _float_input(x: Tensor, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x._dtype.category != D._FLOAT:
        raise RuntimeError(f"{op}: expected a floating point input, got {U.desc(x)}")
    return x


# -- softmax, log_softmax ---------------------------------------------------------------------------

def _softmax_decomp(x, dim):
    m = R.amax(x, (dim,), True)
    e = UN.exp(x - m)
    return e / R.sum(e, (dim,), True)


def _softmax_bw(ctx, g):
    dim = ctx.args[1]
    y = ctx.out
    gy = g * y
    return (gy - y * R.sum(gy, (dim,), True),)


def _log_softmax_decomp(x, dim):
    m = R.amax(x, (dim,), True)
    s = x - m
    return s - UN.log(R.sum(UN.exp(s), (dim,), True))


def _log_softmax_bw(ctx, g):
    dim = ctx.args[1]
    return (g - UN.exp(ctx.out) * R.sum(g, (dim,), True),)


SOFTMAX = register_op("softmax", decomposition=_softmax_decomp, backward=_softmax_bw, saves=(), save_output=True,
                      group="nn", doc="exp(x) / sum(exp(x)) along dim")
LOG_SOFTMAX = register_op("log_softmax", decomposition=_log_softmax_decomp, backward=_log_softmax_bw, saves=(),
                          save_output=True, group="nn", doc="x - logsumexp(x) along dim")


def _softmax_front(op, name, input, dim, dtype):
    x = _float_input(input, name) if dtype is None else input
    if dtype is not None:
        x = x.to(D.to_dtype(dtype))
    if dim is None:
        # PyTorch's legacy implicit dim: 0 for 0-, 1- and 3-d inputs, else 1
        dim = 0 if x.dim() in (0, 1, 3) else 1
    d = _wrap_dim(dim, x.dim(), name)
    if x.dim() == 0:
        x1 = x.reshape(1)
        return dispatch(op, x._device, (x1, 0), (x1,)).reshape(())
    return dispatch(op, x._device, (x, d), (x,))


def softmax(input: Tensor, dim: int | None = None, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """Softmax along ``dim``: ``exp(x) / exp(x).sum(dim, keepdim=True)``, computed stably."""
    return _softmax_front(SOFTMAX, "softmax", input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    return _softmax_front(LOG_SOFTMAX, "log_softmax", input, dim, dtype)


# -- threshold backward (relu's gradient) ---------------------------------------------------------

def _threshold_backward_decomp(g, y, threshold):
    return g * (y > threshold)


THRESHOLD_BACKWARD = register_op(
    "threshold_backward", decomposition=_threshold_backward_decomp,
    backward=lambda ctx, gg: (threshold_backward(gg, ctx.args[1], ctx.args[2]),), saves=(), group="nn",
    doc="g where y > threshold, else 0 (the gradient of relu/threshold; one pass, no mask cast)")


def threshold_backward(g, y, threshold=0):
    return dispatch(THRESHOLD_BACKWARD, g._device, (g, y, threshold), (g,))


# -- nll loss -------------------------------------------------------------------------------------------

def _nll_parts(logp, target, weight, ignore_index):
    valid = CMP.ne(target, ignore_index)
    safe = PW.where(valid, target, 0)
    picked = IX.gather(logp, 1, safe.unsqueeze(1)).squeeze(1)
    w = valid.to(logp._dtype)
    if weight is not None:
        w = w * IX.index_select(weight, 0, safe)
    return picked, w, safe


def _nll_decomp(logp, target, weight, reduction, ignore_index):
    picked, w, _ = _nll_parts(logp, target, weight, ignore_index)
    loss = -(picked * w)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return R.sum(loss, (0,), False)
    return R.sum(loss, (0,), False) / R.sum(w, (0,), False)


def _nll_bw(ctx, g):
    logp, target, weight, reduction, ignore_index = ctx.args
    valid = CMP.ne(target, ignore_index)
    safe = PW.where(valid, target, 0)
    w = valid.to(g._dtype)
    if weight is not None:
        w = w * IX.index_select(weight, 0, safe)
    if reduction == "mean":
        coef = -(w / R.sum(w, (0,), False)) * g
    elif reduction == "sum":
        coef = -w * g
    else:
        coef = -w * g
    z = CR.zeros(logp.shape, dtype=g._dtype, device=g._device)
    return (IX.scatter_add(z, 1, safe.unsqueeze(1), coef.unsqueeze(1)),)


NLL_LOSS = register_op("nll_loss", decomposition=_nll_decomp, backward=_nll_bw, saves=(), group="nn",
                       doc="negative log likelihood of (M, C) log-probabilities at (M,) class targets")


def _nll_loss(logp: Tensor, target: Tensor, weight, reduction: str, ignore_index: int) -> Tensor:
    """``logp`` (M, C), ``target`` (M,) int64 (validated by ``F.nll_loss``)."""
    return dispatch(NLL_LOSS, logp._device, (logp, target, weight, reduction, ignore_index), (logp,))


# -- linear ------------------------------------------------------------------------------------------------

def _linear_decomp(x, w, b):
    r = LA.matmul(x, w.t())
    return r if b is None else r + b


def _linear_bw(ctx, g):
    x, w, b = ctx.args
    need = ctx.needs_input_grad
    gx = LA.matmul(g, w) if need[0] else None
    gw = gb = None
    if need[1] or (b is not None and need[2]):
        g2 = g.reshape(-1, g.shape[-1]) if g.dim() != 2 else g
        if need[1]:
            x2 = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
            gw = LA.matmul(g2.t(), x2)
        if b is not None and need[2]:
            gb = R.sum(g2, (0,), False)
    return (gx, gw) if b is None else (gx, gw, gb)


LINEAR = register_op("linear", decomposition=_linear_decomp, backward=_linear_bw, group="nn",
                     doc="x @ weight.T + bias")


def _linear(x: Tensor, w: Tensor, b) -> Tensor:
    if x.dim() == 1:  # a single sample: matmul gives a vector, keep the formula simple
        r = dispatch(LINEAR, x._device, (x.unsqueeze(0), w, b), (x.unsqueeze(0), w) if b is None else (x.unsqueeze(0), w, b))
        return r.squeeze(0)
    ins = (x, w) if b is None else (x, w, b)
    return dispatch(LINEAR, x._device, (x, w, b), ins)


# -- padding -----------------------------------------------------------------------------------------------

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
    return (_constant_pad(g, tuple(-p for p in pad), 0.0),)


CONSTANT_PAD = register_op("constant_pad_nd", decomposition=_constant_pad_decomp, backward=_constant_pad_bw, saves=(),
                           group="nn", doc="pad (or crop, with negative sizes) with a constant")


def _constant_pad(x: Tensor, pad: tuple, value=0.0) -> Tensor:
    if not any(pad):
        return x
    if x._dtype.category != D._FLOAT:
        value = int(value) if x._dtype is not D.bool else bool(value)
    return dispatch(CONSTANT_PAD, x._device, (x, tuple(pad), value), (x,))


def _sym_pad(padding) -> tuple:
    """PyTorch pad list (last dim first) for symmetric per-dim ``padding``."""
    out = []
    for p in reversed(padding):
        out += [p, p]
    return tuple(out)


# -- im2col / col2im ------------------------------------------------------------------------------------------

def _windows(xp, kernel, dilation, stride, out_sp):
    """View (N, C, *kernel, *out) of the (padded, contiguous) ``xp``."""
    st = xp._stride
    nsp = len(kernel)
    size = xp._shape[:2] + tuple(kernel) + tuple(out_sp)
    stride_ = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(nsp)) + tuple(st[2 + i] * stride[i] for i in range(nsp))
    return V.as_strided(xp, size, stride_, xp._offset)


def _conv_out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _im2col_decomp(x, kernel, dilation, padding, stride):
    xp = _constant_pad(x, _sym_pad(padding), 0.0).contiguous()
    nsp = len(kernel)
    out_sp = tuple(_conv_out(x._shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    w = _windows(xp, kernel, dilation, stride, out_sp)
    N, C = x._shape[:2]
    return w.reshape(N, C * _prod(kernel), _prod(out_sp))


def _im2col_bw(ctx, g):
    x, kernel, dilation, padding, stride = ctx.args
    return (_col2im(g, x.shape[2:], kernel, dilation, padding, stride),)


def _col2im_decomp(cols, out_sp, kernel, dilation, padding, stride):
    nsp = len(kernel)
    N = cols._shape[0]
    K = _prod(kernel)
    C = cols._shape[1] // K
    L_sp = tuple(_conv_out(out_sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
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
    return (_im2col(g, kernel, dilation, padding, stride),)


IM2COL = register_op("im2col", decomposition=_im2col_decomp, backward=_im2col_bw, saves=(), group="nn",
                     doc="sliding blocks of (N, C, *sp) as columns (N, C*K, L): F.unfold")
COL2IM = register_op("col2im", decomposition=_col2im_decomp, backward=_col2im_bw, saves=(), group="nn",
                     doc="sum of columns (N, C*K, L) back into (N, C, *sp): F.fold")


def _im2col(x, kernel, dilation, padding, stride):
    return dispatch(IM2COL, x._device, (x, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride)), (x,))


def _col2im(cols, out_sp, kernel, dilation, padding, stride):
    return dispatch(COL2IM, cols._device, (cols, tuple(out_sp), tuple(kernel), tuple(dilation), tuple(padding),
                                           tuple(stride)), (cols,))


# -- convolution ----------------------------------------------------------------------------------------------
# convolution(x, w, b): x (N, Cin, *sp), w (Cout, Cin/G, *k). Its input gradient is conv_transpose,
# its weight gradient conv_weight_grad; each of the three ops' gradients are the other two, so
# derivatives of any order stay inside this family (as PyTorch's convolution_backward).

def _conv_decomp(x, w, b, stride, padding, dilation, groups):
    N = x._shape[0]
    Cout = w._shape[0]
    kernel = w._shape[2:]
    nsp = len(kernel)
    out_sp = tuple(_conv_out(x._shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
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
    return tuple(in_sp[i] - ((out_sp[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1)
                 for i in range(len(kernel)))


def _bias_grad(g):
    return R.sum(g, (0,) + tuple(range(2, g.dim())), False)


def _conv_backward_decomp(g, x, w, stride, padding, dilation, groups, output_mask):
    """``(grad_input, grad_weight, grad_bias)`` of a convolution, each None unless asked for in
    ``output_mask`` (three bools); a backend may compute them together (sharing layouts of g)."""
    gx = gw = gb = None
    if output_mask[0]:
        op = _transpose_out_pad(x.shape[2:], g.shape[2:], w.shape[2:], stride, padding, dilation)
        gx = _conv_transpose(g, w, None, stride, padding, op, dilation, groups)
    if output_mask[1]:
        gw = _conv_weight_grad(x, g, w.shape, stride, padding, dilation, groups)
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


def _conv_transpose_decomp(x, w, b, stride, padding, output_padding, dilation, groups):
    N, Cin = x._shape[:2]
    kernel = w._shape[2:]
    nsp = len(kernel)
    G = groups
    Cout = w._shape[1] * G
    in_sp = x._shape[2:]
    out_sp = tuple((in_sp[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
                   for i in range(nsp))
    xg = x.reshape(N, G, Cin // G, _prod(in_sp))
    wg = w.reshape(G, Cin // G, -1).transpose(1, 2)  # (G, Cout/G*K, Cin/G)
    cols = LA.matmul(wg, xg).reshape(N, Cout * _prod(kernel), _prod(in_sp))
    out = _col2im_decomp(cols, out_sp, kernel, dilation, padding, stride)
    if b is not None:
        out = out + b.reshape((1, Cout) + (1,) * nsp)
    return out


def _conv_transpose_bw(ctx, g):
    x, w, b, stride, padding, output_padding, dilation, groups = ctx.args
    need = ctx.needs_input_grad
    gx = gw = gb = None
    if need[0]:
        gx = _conv(g, w, None, stride, padding, dilation, groups)
    if need[1]:
        gw = _conv_weight_grad(g, x, w.shape, stride, padding, dilation, groups)
    if b is not None and need[2]:
        gb = _bias_grad(g)
    return (gx, gw) if b is None else (gx, gw, gb)


def _conv_weight_grad_decomp(x, g, wshape, stride, padding, dilation, groups):
    N = x._shape[0]
    kernel = tuple(wshape[2:])
    G = groups
    Cout = wshape[0]
    cols = _im2col_decomp(x, kernel, dilation, padding, stride)  # (N, Cin*K, L)
    cols = cols.reshape(N, G, cols._shape[1] // G, cols._shape[2])
    gg = g.reshape(N, G, Cout // G, -1)
    return R.sum(LA.matmul(gg, cols.transpose(2, 3)), (0,), False).reshape(tuple(wshape))


def _conv_weight_grad_bw(ctx, gw):
    x, g, wshape, stride, padding, dilation, groups = ctx.args
    need = ctx.needs_input_grad
    gx = gg = None
    if need[0]:
        op = _transpose_out_pad(x.shape[2:], g.shape[2:], wshape[2:], stride, padding, dilation)
        gx = _conv_transpose(g, gw, None, stride, padding, op, dilation, groups)
    if need[1]:
        gg = _conv(x, gw, None, stride, padding, dilation, groups)
    return (gx, gg)


CONVOLUTION = register_op("convolution", decomposition=_conv_decomp, backward=_conv_bw, group="nn",
                          doc="N-d cross-correlation (zero padding) of (N, Cin, *sp) with (Cout, Cin/groups, *k)")
CONV_TRANSPOSE = register_op("conv_transpose", decomposition=_conv_transpose_decomp, backward=_conv_transpose_bw,
                             group="nn", doc="N-d transposed convolution (the input gradient of convolution)")
CONVOLUTION_BACKWARD = register_op("convolution_backward", decomposition=_conv_backward_decomp, differentiable=False,
                                   group="nn", doc="the first-order gradients of convolution, as output_mask asks")
CONV_WEIGHT_GRAD = register_op("conv_weight_grad", decomposition=_conv_weight_grad_decomp, backward=_conv_weight_grad_bw,
                               group="nn", doc="the weight gradient of convolution for input x and output gradient g")


def _conv(x, w, b, stride, padding, dilation, groups):
    ins = (x, w) if b is None else (x, w, b)
    return dispatch(CONVOLUTION, x._device, (x, w, b, tuple(stride), tuple(padding), tuple(dilation), int(groups)), ins)


def _conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
    ins = (x, w) if b is None else (x, w, b)
    return dispatch(CONV_TRANSPOSE, x._device, (x, w, b, tuple(stride), tuple(padding), tuple(output_padding),
                                                tuple(dilation), int(groups)), ins)


def _conv_weight_grad(x, g, wshape, stride, padding, dilation, groups):
    return dispatch(CONV_WEIGHT_GRAD, x._device, (x, g, tuple(wshape), tuple(stride), tuple(padding), tuple(dilation),
                                                  int(groups)), (x, g))


# -- pooling ----------------------------------------------------------------------------------------------------

def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output length (a ceil-mode window must start inside the input or left padding)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_pads(in_sp, out_sp, kernel, stride, padding, dilation):
    """Right padding so that every output window lies inside the padded input."""
    return tuple(max(0, (out_sp[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - in_sp[i] - padding[i])
                 for i in range(len(kernel)))


def _asym_pad(lo, hi) -> tuple:
    out = []
    for a, b in zip(reversed(lo), reversed(hi)):
        out += [a, b]
    return tuple(out)


def _pool_windows(x, kernel, stride, padding, dilation, out_sp, fill):
    in_sp = x._shape[2:]
    right = _pool_pads(in_sp, out_sp, kernel, stride, padding, dilation)
    xp = _constant_pad(x, _asym_pad(padding, right), fill).contiguous()
    return _windows(xp, kernel, dilation, stride, out_sp)  # (N, C, *k, *out)


def _max_pool_decomp(x, kernel, stride, padding, dilation, ceil_mode):
    nsp = len(kernel)
    in_sp = x._shape[2:]
    out_sp = tuple(_pool_out(in_sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nsp))
    fill = -math.inf if x._dtype.category == D._FLOAT else D.iinfo(x._dtype).min
    w = _pool_windows(x, kernel, stride, padding, dilation, out_sp, fill)
    K = _prod(kernel)
    perm = (0, 1) + tuple(range(2 + nsp, 2 + 2 * nsp)) + tuple(range(2, 2 + nsp))
    w = w.permute(perm).reshape(x._shape[:2] + out_sp + (K,))
    vals, arg = R.max(w, -1)
    # window-local argmax -> flat index into the unpadded input's spatial dims
    flat = None
    rem = arg
    for i in range(nsp):
        kin = _prod(kernel[i + 1:])
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
    return (_max_pool_backward(g, idx, x.shape),)


def _max_pool_backward_decomp(g, idx, in_shape):
    N, C = in_shape[:2]
    z = CR.zeros((N, C, _prod(in_shape[2:])), dtype=g._dtype, device=g._device)
    return IX.scatter_add(z, 2, idx.reshape(N, C, -1), g.reshape(N, C, -1)).reshape(tuple(in_shape))


def _max_pool_backward_bw(ctx, gg):
    g, idx, in_shape = ctx.args
    N, C = in_shape[:2]
    return (IX.gather(gg.reshape(N, C, -1), 2, idx.reshape(N, C, -1)).reshape(idx.shape),)


MAX_POOL = register_op("max_pool", decomposition=_max_pool_decomp, backward=_max_pool_bw, saves=(), save_output=True,
                       group="nn", doc="N-d max pooling: (values, flat spatial indices)")
MAX_POOL_BACKWARD = register_op("max_pool_backward", decomposition=_max_pool_backward_decomp,
                                backward=_max_pool_backward_bw, saves=(), group="nn",
                                doc="scatter pooled gradients back to the argmax positions")


def _max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    return dispatch(MAX_POOL, x._device, (x, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation),
                                          bool(ceil_mode)), (x,))


def _max_pool_backward(g, idx, in_shape):
    return dispatch(MAX_POOL_BACKWARD, g._device, (g, idx, tuple(in_shape)), (g,))


def _avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Per spatial dim, the list of window sizes PyTorch divides by (their product is the divisor)."""
    if divisor_override:
        return None
    per_dim = []
    for i in range(len(kernel)):
        sizes = []
        for o in range(out_sp[i]):
            start = o * stride[i] - padding[i]
            end = min(start + kernel[i], in_sp[i] + padding[i])
            if count_include_pad:
                sizes.append(end - start)
            else:
                sizes.append(min(end, in_sp[i]) - max(start, 0))
        per_dim.append(sizes)
    return per_dim


def _divisor_tensor(per_dim, divisor_override, dtype, dev):
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
    out_sp = tuple(_pool_out(in_sp[i], kernel[i], stride[i], padding[i], 1, ceil_mode) for i in range(nsp))
    w = _pool_windows(x, kernel, stride, padding, ones, out_sp, 0.0)
    s = R.sum(w, tuple(range(2, 2 + nsp)), False)
    per = _avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    return s / _divisor_tensor(per, divisor_override, x._dtype, x._device)


def _avg_pool_bw(ctx, g):
    x, kernel, stride, padding, ceil_mode, cip, dov = ctx.args
    return (_avg_pool_backward(g, x.shape, kernel, stride, padding, ceil_mode, cip, dov),)


def _avg_pool_backward_decomp(g, in_shape, kernel, stride, padding, ceil_mode, cip, dov):
    nsp = len(kernel)
    in_sp = tuple(in_shape[2:])
    out_sp = g._shape[2:]
    per = _avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov)
    gd = g / _divisor_tensor(per, dov, g._dtype, g._device)
    right = _pool_pads(in_sp, out_sp, kernel, stride, padding, (1,) * nsp)
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
    return (_avg_pool(gg, kernel, stride, padding, ceil_mode, cip, dov),)


AVG_POOL = register_op("avg_pool", decomposition=_avg_pool_decomp, backward=_avg_pool_bw, saves=(), group="nn",
                       doc="N-d average pooling (count_include_pad, ceil_mode, divisor_override as PyTorch)")
AVG_POOL_BACKWARD = register_op("avg_pool_backward", decomposition=_avg_pool_backward_decomp,
                                backward=_avg_pool_backward_bw, saves=(), group="nn",
                                doc="spread pooled gradients back over their windows")


def _avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return dispatch(AVG_POOL, x._device, (x, tuple(kernel), tuple(stride), tuple(padding), bool(ceil_mode),
                                          bool(count_include_pad), divisor_override), (x,))


def _avg_pool_backward(g, in_shape, kernel, stride, padding, ceil_mode, cip, dov):
    return dispatch(AVG_POOL_BACKWARD, g._device, (g, tuple(in_shape), tuple(kernel), tuple(stride), tuple(padding),
                                                   bool(ceil_mode), bool(cip), dov), (g,))


# -- normalisation --------------------------------------------------------------------------------------------------
# batch_norm (training statistics) normalises over every dim but 1; layer_norm over the last
# ``k`` dims. Both return (out, mean, invstd) so that callers can update running statistics and
# backward needs no recomputation; under create_graph the formula recomputes the statistics with
# differentiable ops so that double backward is exact.

def _norm_stats(x, dims, eps):
    m = R.mean(x, dims, True)
    c = x - m
    var = R.mean(c * c, dims, True)
    return m, UN.rsqrt(var + eps)


def _bn_shape(x):
    return (1, x._shape[1]) + (1,) * (x.dim() - 2)


def _batch_norm_decomp(x, w, b, eps):
    dims = (0,) + tuple(range(2, x.dim()))
    m, inv = _norm_stats(x, dims, eps)
    out = (x - m) * inv
    if w is not None:
        out = out * w.reshape(_bn_shape(x))
    if b is not None:
        out = out + b.reshape(_bn_shape(x))
    return out, m.reshape(-1), inv.reshape(-1)


def _norm_input_grad(g, xhat, dims, inv, wv, need_x):
    """Input gradient of ``xhat * w`` with ``xhat = (x - mean) * inv`` over ``dims``."""
    if not need_x:
        return None
    gxhat = g if wv is None else g * wv
    return inv * (gxhat - R.mean(gxhat, dims, True) - xhat * R.mean(gxhat * xhat, dims, True))


def _batch_norm_bw(ctx, grads):
    g = grads[0]
    x, w, b, eps = ctx.args
    need = ctx.needs_input_grad
    dims = (0,) + tuple(range(2, x.dim()))
    if not _grad.enabled:  # first-order backward: one fused op
        _, m, inv = ctx.out
        gx, gw, gb = dispatch(BATCH_NORM_BACKWARD, g._device, (g, x, w, m, inv, w is not None, b is not None), ())
        res = [gx if need[0] else None]
        if w is not None:
            res.append(gw if need[1] else None)
        if b is not None:
            res.append(gb if need[len(res)] else None)
        return tuple(res)
    m, inv = _norm_stats(x, dims, eps)  # double backward: statistics as functions of x
    xhat = (x - m) * inv
    wv = None if w is None else w.reshape(_bn_shape(x))
    gx = _norm_input_grad(g, xhat, dims, inv, wv, need[0])
    res = [gx]
    if w is not None:
        res.append(R.sum(g * xhat, dims, False) if need[1] else None)
    if b is not None:
        res.append(R.sum(g, dims, False) if need[len(res)] else None)
    return tuple(res)


def _batch_norm_backward_decomp(g, x, w, mean, invstd, need_w, need_b):
    dims = (0,) + tuple(range(2, x.dim()))
    m, inv = mean.reshape(_bn_shape(x)), invstd.reshape(_bn_shape(x))
    xhat = (x - m) * inv
    wv = None if w is None else w.reshape(_bn_shape(x))
    return (_norm_input_grad(g, xhat, dims, inv, wv, True), R.sum(g * xhat, dims, False), R.sum(g, dims, False))


BATCH_NORM_BACKWARD = register_op("batch_norm_backward", decomposition=_batch_norm_backward_decomp,
                                  differentiable=False, group="nn",
                                  doc="(grad_input, grad_weight, grad_bias) of batch_norm (first order)")
BATCH_NORM = register_op("batch_norm", decomposition=_batch_norm_decomp, backward=_batch_norm_bw, save_output=True,
                         group="nn", doc="batch normalisation with batch statistics: (out, mean, invstd)")


def _batch_norm_train(x, w, b, eps):
    ins = (x,) + tuple(t for t in (w, b) if t is not None)
    return dispatch(BATCH_NORM, x._device, (x, w, b, float(eps)), ins)


def _layer_norm_decomp(x, w, b, k, eps):
    dims = tuple(range(x.dim() - k, x.dim()))
    m, inv = _norm_stats(x, dims, eps)
    out = (x - m) * inv
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return out, m, inv


def _layer_norm_bw(ctx, grads):
    g = grads[0]
    x, w, b, k, eps = ctx.args
    need = ctx.needs_input_grad
    dims = tuple(range(x.dim() - k, x.dim()))
    lead = tuple(range(x.dim() - k))
    if _grad.enabled:
        m, inv = _norm_stats(x, dims, eps)
    else:
        _, m, inv = ctx.out
    xhat = (x - m) * inv
    gx = _norm_input_grad(g, xhat, dims, inv, w, need[0])
    res = [gx]
    if w is not None:
        res.append(_sum_lead(g * xhat, lead) if need[1] else None)
    if b is not None:
        res.append(_sum_lead(g, lead) if need[len(res)] else None)
    return tuple(res)


def _sum_lead(t, lead):
    return R.sum(t, lead, False) if lead else t


LAYER_NORM = register_op("layer_norm", decomposition=_layer_norm_decomp, backward=_layer_norm_bw, save_output=True,
                         group="nn", doc="normalisation over the last k dims: (out, mean, invstd)")


def _layer_norm(x, w, b, k, eps):
    ins = (x,) + tuple(t for t in (w, b) if t is not None)
    return dispatch(LAYER_NORM, x._device, (x, w, b, int(k), float(eps)), ins)


# -- embedding -------------------------------------------------------------------------------------------------------

def _embedding_decomp(w, idx, padding_idx):
    return IX.index_select(w, 0, idx.reshape(-1)).reshape(idx._shape + (w._shape[1],))


def _embedding_bw(ctx, g):
    w, idx, padding_idx = ctx.args
    return (_embedding_backward(g, idx, w.shape[0], padding_idx),)


def _embedding_backward_decomp(g, idx, num, padding_idx):
    D_ = g._shape[-1]
    flat = idx.reshape(-1)
    gf = g.reshape(-1, D_)
    if padding_idx is not None:
        gf = gf * CMP.ne(flat, padding_idx).unsqueeze(1).to(g._dtype)
    z = CR.zeros((num, D_), dtype=g._dtype, device=g._device)
    return IX.index_add(z, 0, flat, gf)


def _embedding_backward_bw(ctx, gg):
    g, idx, num, padding_idx = ctx.args
    r = _embedding(gg, idx, None)
    if padding_idx is not None:
        r = r * CMP.ne(idx, padding_idx).unsqueeze(-1).to(r._dtype)
    return (r,)


EMBEDDING = register_op("embedding", decomposition=_embedding_decomp, backward=_embedding_bw, saves=(), group="nn",
                        doc="rows of weight at integer indices")
EMBEDDING_BACKWARD = register_op("embedding_backward", decomposition=_embedding_backward_decomp,
                                 backward=_embedding_backward_bw, saves=(), group="nn",
                                 doc="dense weight gradient of embedding (rows summed per index)")


def _embedding(w, idx, padding_idx):
    return dispatch(EMBEDDING, w._device, (w, idx, padding_idx), (w,))


def _embedding_backward(g, idx, num, padding_idx):
    return dispatch(EMBEDDING_BACKWARD, g._device, (g, idx, int(num), padding_idx), (g,))


# -- dropout -------------------------------------------------------------------------------------------------------

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


DROPOUT = register_op("dropout", decomposition=_dropout_decomp, backward=_dropout_bw, saves=(), save_output=True,
                      group="nn", doc="inverted dropout: (x * mask, mask), mask in {0, 1/(1-p)}")


def _dropout(x, p, generator=None):
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
    return _dropout(input, p)
