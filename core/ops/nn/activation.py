"""Activations: softmax and log_softmax along a dim (computed stably), and threshold_backward,
the gradient of relu / threshold in one pass (no mask cast)."""
from __future__ import annotations

from ... import _dtype as D
from ... import _state
from ..._tensor import Tensor
from .. import _args as U
from .. import copy as CP
from .. import reduction as R
from .. import unary as UN
from ..declare import defop
from ..registry import OPS, dispatch

__all__ = ["log_softmax", "softmax"]

_grad = _state.grad


# -- softmax, log_softmax ---------------------------------------------------------------------

def _softmax_decomp(x, dim):
    if x.numel() == 0:  # nothing to normalise (amax refuses an empty dim)
        return x.clone()
    m = R.amax(x, (dim,), True)
    e = UN.exp(x - m)
    return e / R.sum(e, (dim,), True)


def _softmax_backward_decomp(g, y, dim):
    gy = g * y
    return gy - y * R.sum(gy, (dim,), True)


def _softmax_bw(ctx, g):
    if _grad.enabled:  # create_graph: written in differentiable ops
        return (_softmax_backward_decomp(g, ctx.out, ctx.args[1]),)
    return (_softmax_backward_data(g, ctx.out, ctx.args[1]),)


def _log_softmax_decomp(x, dim):
    if x.numel() == 0:
        return x.clone()
    m = R.amax(x, (dim,), True)
    s = x - m
    return s - UN.log(R.sum(UN.exp(s), (dim,), True))


def _log_softmax_backward_decomp(g, y, dim):
    return g - UN.exp(y) * R.sum(g, (dim,), True)


def _log_softmax_bw(ctx, g):
    if _grad.enabled:
        return (_log_softmax_backward_decomp(g, ctx.out, ctx.args[1]),)
    return (_log_softmax_backward_data(g, ctx.out, ctx.args[1]),)


# the gradients as ops of their own, so that a backend can compute one in a single kernel (the
# cpu backend keeps float32 subnormals out of them: an OpenBLAS GEMM fed a gradient full of
# subnormals, as a language model's logits produce, ran 30x slower)

def _backward_data_plan(g, y, dim):
    return g._device, (g, y, dim), (g, y)


_softmax_backward_data = defop("_softmax_backward_data", _backward_data_plan,
                               decomposition=_softmax_backward_decomp, out=False, method=False, group="nn",
                               doc="The gradient of softmax along ``dim`` from its output ``y`` and the "
                                   "incoming gradient ``g``.")
_log_softmax_backward_data = defop("_log_softmax_backward_data", _backward_data_plan,
                                   decomposition=_log_softmax_backward_decomp, out=False, method=False,
                                   group="nn", doc="The gradient of log_softmax along ``dim`` from its output "
                                                   "``y`` and the incoming gradient ``g``.")


def _softmax_plan(name, input, dim, dtype):
    """The plan of softmax / log_softmax: ``(x, dim)`` with ``dim`` wrapped; ``dtype`` casts the
    input first (else it must be floating)."""
    if dtype is None:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        x = input
    else:
        x = input.to(D.to_dtype(dtype))
    if dim is None:
        # PyTorch's legacy implicit dim: 0 for 0-, 1- and 3-d inputs, else 1
        dim = 0 if x.dim() in (0, 1, 3) else 1
    d = U.wrap_dim(dim, x.dim(), name)
    if x._dtype.category != D._FLOAT:
        if x.numel() == 0:  # nothing to compute: PyTorch returns the empty input's copy
            return None, CP.clone(x), None
        raise U.dtype_not_implemented(name, x._dtype, "expected a floating point input")
    if x.dim() == 0:
        x1 = x.reshape(1)
        return None, dispatch(OPS[name], x._device, (x1, 0), (x1,)).reshape(()), None
    return x._device, (x, d), (x,)


@defop("softmax", decomposition=_softmax_decomp, backward=_softmax_bw, saves=(), save_output=True, out=False,
       group="nn")
def softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    """Softmax along ``dim``: ``exp(x) / exp(x).sum(dim, keepdim=True)``, computed stably."""
    return _softmax_plan("softmax", input, dim, dtype)


@defop("log_softmax", decomposition=_log_softmax_decomp, backward=_log_softmax_bw, saves=(), save_output=True,
       out=False, group="nn")
def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    """``log(softmax(x))`` along ``dim``, computed stably."""
    return _softmax_plan("log_softmax", input, dim, dtype)


# -- threshold backward (relu's gradient) -----------------------------------------------------

def _threshold_backward_decomp(g, y, threshold):
    return g.where(y > threshold, 0)  # (a select, not a product: an inf or NaN gradient stays out)


@defop("threshold_backward", decomposition=_threshold_backward_decomp,
       backward=lambda ctx, gg: (threshold_backward(gg, ctx.args[1], ctx.args[2]),), saves=(), out=False,
       method=False, group="nn")
def threshold_backward(g, y, threshold=0):
    """g where y > threshold, else 0 (the gradient of relu/threshold; one pass, no mask cast)"""
    return g._device, (g, y, threshold), (g,)
