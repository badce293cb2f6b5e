"""Statistics over dims: variance and standard deviation (with Bessel's correction), their
``_mean`` pairs, and the order statistics median, nanmedian and mode.

var, std, and the ``median_dim``/``mode`` ops decompose into primitives (a backend may implement
them natively).
"""
from __future__ import annotations

import math

from ... import _dtype as D
from ... import return_types as RT
from ..._tensor import _wrap_dim
from .. import _args as U
from .. import arithmetic as A
from .. import comparison as CMP
from .. import complexops as CX
from .. import creation as CR
from .. import indexing as IX
from .. import pointwise as PW
from .. import unary as UN
from ..declare import composite, defop
from ..registry import dispatch, register_op
from . import reductions as RD

__all__ = ["var", "std", "var_mean", "std_mean", "median", "nanmedian", "mode"]

_FLOAT = D._FLOAT


# -- variance, standard deviation ------------------------------------------------------------------

def _correction(unbiased, correction):
    if correction is not None:
        return float(correction)
    if unbiased is None or unbiased is True:
        return 1.0
    return 0.0


def _var_decomp(x, dims, correction, keepdim):
    n = RD.numel_of(x._shape, dims)
    m = RD.mean(x, dims, keepdim=True)
    d = x - m
    s = RD.sum(d * d, dims, keepdim)
    denom = n - correction
    return s / (denom if denom > 0 else 0.0)  # no degrees of freedom left: inf or nan, as PyTorch


def _var_bw(ctx, g):
    x, dims, correction, keepdim = ctx.args
    n = RD.numel_of(x._shape, dims)
    m = RD.mean(x, dims, keepdim=True)
    return (RD.unreduce(g, x._shape, dims, keepdim) * (x - m) * _over(2.0, n - correction),)


def _over(num: float, denom: float) -> float:
    """``num / denom`` as C's float division (no degrees of freedom left: inf, as PyTorch)."""
    return num / denom if denom else math.copysign(math.inf, denom) * num


def _std_decomp(x, dims, correction, keepdim):
    return UN.sqrt(_var_decomp(x, dims, correction, keepdim))


def _std_bw(ctx, g):
    x, dims, correction, keepdim = ctx.args
    n = RD.numel_of(x._shape, dims)
    m = RD.mean(x, dims, keepdim=True)
    s = RD.unreduce(ctx.out, x._shape, dims, keepdim)
    gx = RD.unreduce(g, x._shape, dims, keepdim) * (x - m) / (s * (n - correction))
    return (PW.where(CMP.eq(s, 0.0), 0.0, gx),)  # a constant slice: 0, as PyTorch (not 0 / 0)


def _spread_plan(input, dim, unbiased, keepdim, correction, name):
    x = U.tensor_arg(input, name)
    if isinstance(dim, bool):  # var(x, unbiased)
        unbiased, dim = dim, None
    if x._dtype.category == D._COMPLEX:  # a real result: the spread of the real and imaginary parts together
        v = A.add(var(CX.real(x), dim, unbiased, keepdim, correction=correction),
                  var(CX.imag(x), dim, unbiased, keepdim, correction=correction))
        return None, (v if name == "var" else UN.sqrt(v)), None
    if x._dtype.category != _FLOAT:
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {U.type_name(x._dtype)}")
    args = (x, U.dims_arg(dim, x.dim(), name), _correction(unbiased, correction), bool(keepdim))
    if (dim is None or x.dim() == 0) and x.numel() - args[2] <= 0:
        return None, dispatch(_NO_DOF, x._device, args + (name,), (x,)), None
    return x._device, args, (x,)


def _no_dof_decomp(x, dims, correction, keepdim, name):
    return dispatch((var if name == "var" else std).op, x._device, (x, dims, correction, keepdim), ())


def _no_dof_bw(ctx, g):
    """PyTorch's gradient of a variance over all elements with no degrees of freedom left: 2 / 0
    times the deviation, taken as NaN where the deviation is 0 and inf elsewhere (the standard
    deviation's, divided by its inf or NaN, is NaN)."""
    x, dims, correction, keepdim, name = ctx.args
    gx = RD.unreduce(g, x._shape, dims, keepdim)
    if name == "std":
        return (gx * math.nan,)
    return (gx * PW.where(CMP.eq(x, RD.mean(x, dims, keepdim=True)), math.nan, math.inf),)


# var/std over all elements (dim=None) with correction >= numel: PyTorch's gradient differs from
# the formula's (which it keeps when dim is given)
_NO_DOF = register_op("_spread_no_dof", decomposition=_no_dof_decomp, backward=_no_dof_bw, group="reduce")


@defop("var", decomposition=_var_decomp, backward=_var_bw, group="reduce")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default; ``unbiased=False`` is 0)."""
    return _spread_plan(input, dim, unbiased, keepdim, correction, "var")


@defop("std", decomposition=_std_decomp, backward=_std_bw, save_output=True, group="reduce")
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim`` (see :func:`var`)."""
    return _spread_plan(input, dim, unbiased, keepdim, correction, "std")


@composite("var_mean")
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) over ``dim`` in one call."""
    return (var(input, dim, unbiased, keepdim, correction=correction), RD.mean(input, dim, keepdim))


@composite("std_mean")
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(standard deviation, mean) over ``dim`` in one call."""
    return (std(input, dim, unbiased, keepdim, correction=correction), RD.mean(input, dim, keepdim))


# -- order statistics ---------------------------------------------------------------------------

def _median_dim_decomp(x, d, keepdim):
    n = x._shape[d]
    v, i = IX.sort(x, d, stable=True)
    k = (n - 1) // 2
    if x._dtype.category == _FLOAT and n:
        # NaN propagates, as PyTorch: a slice holding NaN has median NaN, at its first NaN (NaN sorts last)
        nans = RD.sum(CMP.isnan(x), d, keepdim=True)
        pos = PW.where(nans > 0, n - nans, k)
        vals, idx = IX.gather(v, d, pos), IX.gather(i, d, pos)
    else:
        vals, idx = v.narrow(d, k, 1), i.narrow(d, k, 1)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return (vals.contiguous(), idx.contiguous())


# (values, indices) of the lower median along one dim: an internal op a backend may implement
_MEDIAN_DIM = register_op("median_dim", decomposition=_median_dim_decomp, backward=RD.take_backward, saves=(),
                          save_output=(1,), group="reduce")


def _median_all_decomp(x):
    return _median_dim_decomp(x.reshape(-1), 0, False)[0]


def _ties_bw(ctx, g):
    """The gradient of the median of all elements, shared evenly between the elements equal to it
    (NaN counting as equal to NaN), as PyTorch's."""
    x, v = ctx.args[0], ctx.out
    hit = CMP.eq(x, v)
    if x._dtype.category == _FLOAT:
        hit = CMP.logical_or(hit, CMP.logical_and(CMP.isnan(x), CMP.isnan(v)))
    m = hit.to(g._dtype)
    return (g * m / RD.sum(m),)


# the lower median of all elements: an internal op a backend may implement
_MEDIAN_ALL = register_op("median_all", decomposition=_median_all_decomp, backward=_ties_bw, save_output=True,
                          group="reduce")


@composite("median")
def median(input, dim=None, keepdim: bool = False):
    """The lower median: of all elements, or (values, indices) along ``dim``; NaN propagates
    (see :func:`nanmedian` to ignore it)."""
    x = U.tensor_arg(input, "median")
    if dim is None:
        if x.numel() == 0:
            r = CR.full((), float("nan"), dtype=x._dtype, device=x._device)
            # PyTorch's NaN is differentiable (an empty gradient): keep the graph through an empty sum
            return r + RD.sum(x) if x.requires_grad else r
        return dispatch(_MEDIAN_ALL, x._device, (x,), (x,))
    d = _wrap_dim(dim, x.dim(), "median")
    if x.dim() == 0:
        return RT.median(x.clone(), CR.zeros((), dtype=D.int64, device=x._device))
    if x._shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    v, i = dispatch(_MEDIAN_DIM, x._device, (x, d, bool(keepdim)), (x,))
    return RT.median(v, i)


@composite("nanmedian")
def nanmedian(input, dim=None, keepdim: bool = False):
    """Median ignoring NaN (NaN sorted last, then the lower median of the rest)."""
    x = U.tensor_arg(input, "nanmedian")
    if dim is None:
        flat = x.reshape(-1)
        keep = flat[CMP.logical_not(CMP.isnan(flat))]
        return median(keep) if keep.numel() else median(flat)
    d = _wrap_dim(dim, x.dim(), "nanmedian")
    if x.dim() and x._shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size (nanmedian of {U.desc(x)}).")
    v, i = IX.sort(x, d)  # NaN sorts last
    cnt = RD.sum(CMP.logical_not(CMP.isnan(x)), d, keepdim=True)
    k = ((cnt - 1).clamp(min=0)) // 2
    vals, idx = IX.gather(v, d, k), IX.gather(i, d, k)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return RT.nanmedian(vals, idx)


def _mode_decomp(x, d, keepdim):
    xm = x.movedim(d, -1)
    eqm = (xm.unsqueeze(-1) == xm.unsqueeze(-2))
    counts = RD.sum(eqm, -1)
    if x._dtype.category == _FLOAT:  # NaN equals nothing (as PyTorch's count): each NaN occurs once
        counts = PW.where(CMP.isnan(xm), 1, counts)
    best = RD.amax(counts, -1, keepdim=True)
    # among the most frequent values, the smallest; its last occurrence
    cand = counts == best
    big = xm.detach()
    if big._dtype.category == _FLOAT:
        filler = float("inf")
    else:
        filler = D.iinfo(big._dtype).max if big._dtype is not D.bool else True
    if big._dtype.category == _FLOAT:  # NaN wins only where no number is as frequent
        real = CMP.logical_and(cand, CMP.logical_not(CMP.isnan(big)))
        vals = RD.amin(PW.where(real, big, filler), -1, keepdim=True)
        vals = PW.where(RD.any(real, -1, keepdim=True), vals, float("nan"))
    else:
        vals = RD.amin(PW.where(cand, big, filler), -1, keepdim=True)
    n = xm._shape[-1]
    pos = CR.arange(n, device=x._device)
    hit = (xm == vals)
    if x._dtype.category == _FLOAT:
        hit = CMP.logical_or(hit, CMP.logical_and(CMP.isnan(xm), CMP.isnan(vals)))
    idx = RD.amax(PW.where(hit, pos, -1), -1, keepdim=True)
    vals = IX.gather(xm, -1, idx)
    vals, idx = vals.movedim(-1, d), idx.movedim(-1, d)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return (vals.contiguous(), idx.contiguous())


@defop("mode", decomposition=_mode_decomp, backward=RD.take_backward, saves=(), save_output=(1,), returns=RT.mode,
       group="reduce")
def mode(input, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest among ties) and its index."""
    x = U.tensor_arg(input, "mode")
    if x.dim() == 0:
        return None, RT.mode(x.clone(), CR.zeros((), dtype=D.int64, device=x._device)), None
    d = _wrap_dim(dim, x.dim(), "mode")
    if x._shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    return x._device, (x, d, bool(keepdim)), (x,)
