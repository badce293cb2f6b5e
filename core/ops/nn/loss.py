"""Losses: nll_loss, the negative log likelihood of (M, C) log-probabilities at (M,) class
targets, with class weights, ``ignore_index`` and PyTorch's reductions; binary_cross_entropy,
elementwise, with PyTorch's gradients (finite at probabilities 0 and 1)."""
from __future__ import annotations

from .. import comparison as CMP
from .. import creation as CR
from .. import indexing as IX
from .. import pointwise as PW
from .. import reduction as R
from .. import unary as UN
from ..declare import defop

__all__: list = []


def _nll_weights(target, weight, ignore_index, dtype):
    """Per-sample weights (0 at ignored targets) and the targets made safe to index with."""
    valid = CMP.ne(target, ignore_index)
    safe = PW.where(valid, target, 0)
    w = valid.to(dtype)
    if weight is not None:
        w = w * IX.index_select(weight, 0, safe)
    return w, safe


def _nll_decomp(logp, target, weight, reduction, ignore_index):
    w, safe = _nll_weights(target, weight, ignore_index, logp._dtype)
    picked = IX.gather(logp, 1, safe.unsqueeze(1)).squeeze(1)
    # an ignored target adds nothing, as PyTorch's (not 0 * its log-probability, NaN at -inf)
    loss = PW.where(CMP.ne(target, ignore_index), -(picked * w), 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return R.sum(loss, (0,), False)
    return R.sum(loss, (0,), False) / R.sum(w, (0,), False)


def _nll_bw(ctx, g):
    logp, target, weight, reduction, ignore_index = ctx.args
    w, safe = _nll_weights(target, weight, ignore_index, g._dtype)
    if reduction == "mean":
        # an ignored target gets no gradient (not 0 / 0 when every target is ignored)
        coef = PW.where(CMP.ne(target, ignore_index), -(w / R.sum(w, (0,), False)) * g, 0.0)
    else:
        coef = -w * g
    z = CR.zeros(logp.shape, dtype=g._dtype, device=g._device)
    return (IX.scatter_add(z, 1, safe.unsqueeze(1), coef.unsqueeze(1)),)


@defop("nll_loss", decomposition=_nll_decomp, backward=_nll_bw, saves=(), out=False, method=False, group="nn")
def nll_loss(logp, target, weight, reduction, ignore_index):
    """negative log likelihood of (M, C) log-probabilities at (M,) class targets (``logp``
    (M, C), ``target`` (M,) int64, validated by ``F.nll_loss``)"""
    return logp._device, (logp, target, weight, reduction, ignore_index), (logp,)


# -- binary cross-entropy ---------------------------------------------------------------------

_BCE_EPS = 9.999999960041972e-13  # PyTorch's floor of x(1 - x) in the input gradient: 1e-12 as a float32


def _bce_decomp(x, t):
    return -(t * PW.clamp(UN.log(x), -100.0) + (1 - t) * PW.clamp(UN.log1p(-x), -100.0))


def _bce_bw(ctx, g):
    x, t = ctx.args
    need = ctx.needs_input_grad
    # PyTorch's formulas: finite at x = 0 and 1, where the clamped logs' own gradients are 0/0
    gx = g * (x - t) / PW.clamp((1 - x) * x, _BCE_EPS) if need[0] else None
    gt = g * (UN.log1p(-x) - UN.log(x)) if need[1] else None
    return gx, gt


@defop("binary_cross_entropy", decomposition=_bce_decomp, backward=_bce_bw, out=False, method=False, group="nn")
def binary_cross_entropy(x, t):
    """elementwise -(t log x + (1 - t) log(1 - x)), the logs clamped at -100 (arguments validated
    by ``F.binary_cross_entropy``)"""
    return x._device, (x, t), (x, t)
