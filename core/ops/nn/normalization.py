"""Normalisation: batch_norm (training statistics) normalises over every dim but 1, layer_norm
over the last ``k`` dims. Both return (out, mean, invstd) so that callers can update running
statistics and backward needs no recomputation; under create_graph the formula recomputes the
statistics with differentiable ops so that double backward is exact. batch_norm's first-order
backward is one op, batch_norm_backward, which a backend may implement."""
from __future__ import annotations

from ... import _state
from .. import reduction as R
from .. import unary as UN
from ..declare import defop
from ..registry import dispatch, register_op

__all__: list = []

_grad = _state.grad


def _norm_stats(x, dims, eps):
    m = R.mean(x, dims, True)
    c = x - m
    var = R.mean(c * c, dims, True)
    return m, UN.rsqrt(var + eps)


def _norm_input_grad(g, xhat, dims, inv, wv, need_x):
    """Input gradient of ``xhat * w`` with ``xhat = (x - mean) * inv`` over ``dims``."""
    if not need_x:
        return None
    gxhat = g if wv is None else g * wv
    return inv * (gxhat - R.mean(gxhat, dims, True) - xhat * R.mean(gxhat * xhat, dims, True))


# -- batch norm -------------------------------------------------------------------------------

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


@defop("batch_norm", decomposition=_batch_norm_decomp, backward=_batch_norm_bw, save_output=(1, 2), out=False,
       method=False, group="nn")
def batch_norm(x, w, b, eps):
    """batch normalisation with batch statistics: (out, mean, invstd) (arguments validated by
    ``F.batch_norm``, which keeps the running statistics)"""
    return x._device, (x, w, b, float(eps)), (x,) + tuple(t for t in (w, b) if t is not None)


# -- layer norm -------------------------------------------------------------------------------

def _layer_norm_decomp(x, w, b, k, eps):
    dims = tuple(range(x.dim() - k, x.dim()))
    m, inv = _norm_stats(x, dims, eps)
    out = (x - m) * inv
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return out, m, inv


def _sum_lead(t, lead):
    return R.sum(t, lead, False) if lead else t


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


@defop("layer_norm", decomposition=_layer_norm_decomp, backward=_layer_norm_bw, save_output=(1, 2), out=False,
       method=False, group="nn")
def layer_norm(x, w, b, k, eps):
    """normalisation over the last k dims: (out, mean, invstd)"""
    return x._device, (x, w, b, int(k), float(eps)), (x,) + tuple(t for t in (w, b) if t is not None)
