"""Scans (cumulative reductions along one dim): cumsum, cumprod, cummax/cummin (with the index
where the running extreme was reached) and logcumsumexp.

cumsum is a primitive; the others decompose into primitives (a backend may implement them).
"""
from __future__ import annotations

from ... import _dtype as D
from ... import return_types as RT
from ..._tensor import _wrap_dim
from .. import _args as U
from .. import comparison as CMP
from .. import copy as CP
from .. import creation as CR
from .. import indexing as IX
from .. import pointwise as PW
from .. import shape as SH
from ..declare import defop
from . import reductions as RD

__all__ = ["cumsum", "cumsum_", "cumprod", "cumprod_", "cummax", "cummin", "logcumsumexp"]

_FLOAT = D._FLOAT


def _scan_plan(input, dim, dtype, name):
    x = RD.int_accumulator(U.tensor_arg(input, name), dtype)
    if x.dim() == 0:
        _wrap_dim(dim, 0, name)
        return None, x.clone(), None
    return x._device, (x, _wrap_dim(dim, x.dim(), name)), (x,)


def _cumsum_bw(ctx, g):
    x, d = ctx.args
    return (RD.sum(g, d, keepdim=True) - cumsum(g, d) + g,)


@defop("cumsum", backward=_cumsum_bw, saves=(), result="first", inplace=True, group="reduce")
def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim``; integers accumulate as int64."""
    return _scan_plan(input, dim, dtype, "cumsum")


def _cumprod_decomp(x, d):
    n = x._shape[d]
    if n == 0:
        return x.clone()
    parts = [x.narrow(d, 0, 1)]
    acc = parts[0]
    for i in range(1, n):
        acc = acc * x.narrow(d, i, 1)
        parts.append(acc)
    return SH.cat(parts, d)


def _cumprod_bw(ctx, g):
    x, d = ctx.args
    out = ctx.out
    # exact when x has no zeros; otherwise fall back to the O(n^2) product of the others
    if not bool((x == 0).any()):
        r = g * out
        return ((RD.sum(r, d, keepdim=True) - cumsum(r, d) + r) / x,)
    n = x._shape[d]
    cols = []
    for k in range(n):
        # d out_j / d x_k for j >= k: prod_{i<=j, i != k} x_i
        xk_one = SH.cat([x.narrow(d, 0, k), (x.narrow(d, k, 1) * 0 + 1), x.narrow(d, k + 1, n - k - 1)], d)
        cp = cumprod(xk_one, d)
        mask = SH.cat([CR.zeros_like(x.narrow(d, 0, k)), (x.narrow(d, k, n - k) * 0 + 1)], d)
        cols.append(RD.sum(g * cp * mask, d, keepdim=True))
    res = SH.cat(cols, d)
    return (PW.where(res != res, 0.0, res),)


@defop("cumprod", decomposition=_cumprod_decomp, backward=U.holomorphic(_cumprod_bw), save_output=True,
       result="first", inplace=True, group="reduce")
def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim``."""
    return _scan_plan(input, dim, dtype, "cumprod")


cumsum_, cumprod_ = cumsum.inplace, cumprod.inplace


def _cumext_decomp(x, d, is_max):
    n = x._shape[d]
    vals, idxs = [], []
    acc = None
    acci = None
    for i in range(n):
        cur = x.narrow(d, i, 1)
        ci = CR.full(cur._shape, i, dtype=D.int64, device=x._device)
        if acc is None:
            acc, acci = cur, ci
        else:
            take = CMP.ge(cur, acc) if is_max else CMP.le(cur, acc)
            if x._dtype.category == _FLOAT:  # a NaN is taken and then kept (never >= or <= anything)
                take = CMP.logical_or(take, CMP.isnan(cur))
            acc = PW.where(take, cur, acc)
            acci = PW.where(take, ci, acci)
        vals.append(acc)
        idxs.append(acci)
    if n == 0:
        return (x.clone(), CR.zeros(x._shape, dtype=D.int64, device=x._device))
    return (SH.cat(vals, d), SH.cat(idxs, d))


def _cum_take_bw(ctx, g):
    x, d = ctx.args
    gv = g[0]
    z = CR.zeros(x.shape, dtype=gv._dtype, device=gv._device)
    return (IX.scatter_add(z, d, ctx.out[1], gv),)


def _cumext_plan(rt, input, dim, name):
    x = U.tensor_arg(input, name)
    if x.dim() == 0:
        return None, rt(x.clone(), CR.zeros((), dtype=D.int64, device=x._device)), None
    return x._device, (x, _wrap_dim(dim, x.dim(), name)), (x,)


@defop("cummax", decomposition=lambda x, d: _cumext_decomp(x, d, True), backward=_cum_take_bw, saves=(),
       save_output=(1,), returns=RT.cummax, group="reduce")
def cummax(input, dim):
    """Running maximum along ``dim`` and the index where it was reached (the last one on ties)."""
    return _cumext_plan(RT.cummax, input, dim, "cummax")


@defop("cummin", decomposition=lambda x, d: _cumext_decomp(x, d, False), backward=_cum_take_bw, saves=(),
       save_output=(1,), returns=RT.cummin, group="reduce")
def cummin(input, dim):
    """Running minimum along ``dim`` and its index (the last one on ties)."""
    return _cumext_plan(RT.cummin, input, dim, "cummin")


def _logcumsumexp_decomp(x, d):
    # a Hillis-Steele scan of logaddexp: log2(n) steps, each exact (no shared shift that would
    # underflow small prefixes or spread a NaN backwards)
    n = x._shape[d]
    r = x
    step = 1
    while step < n:
        pad_shape = list(x._shape)
        pad_shape[d] = step
        pad = CR.full(pad_shape, float("-inf"), dtype=x._dtype, device=x._device)
        r = PW.logaddexp(r, SH.cat([pad, r.narrow(d, 0, n - step)], d))
        step *= 2
    return r if r is not x else x.clone()


# no backward formula: it is differentiated through the scan
@defop("logcumsumexp", decomposition=_logcumsumexp_decomp, group="reduce")
def logcumsumexp(input, dim):
    """``log(cumsum(exp(x), dim))``, computed stably."""
    x = U.tensor_arg(input, "logcumsumexp")
    if x._dtype.category != _FLOAT:
        x = CP.cast(x, D.get_default_dtype())
    d = _wrap_dim(dim, x.dim(), "logcumsumexp")
    if x.dim() == 0:
        return None, x.clone(), None
    return x._device, (x, d), (x,)

