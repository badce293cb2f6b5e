"""Quantiles: quantile and nanquantile, written in sort, gather and lerp (differentiable through
the sorted values), with PyTorch's ranks: ``q * (n - 1)`` computed in the input's dtype, then
rounded by the interpolation mode."""
from __future__ import annotations

from ... import _dtype as D
from ..._tensor import Tensor
from .. import _args as U
from .. import comparison as CMP
from .. import creation as CR
from .. import indexing as IX
from .. import pointwise as PW
from .. import unary as UN
from ..declare import composite
from . import reductions as RD

__all__ = ["quantile", "nanquantile"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(x, q, dim, interpolation, op):
    if x._dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    if interpolation not in _MODES:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q._dtype is not x._dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        U.common_device(op, x, q)
    elif not U.is_scalar(q) or isinstance(q, bool):
        raise TypeError(f"{op}(): argument 'q' must be float or Tensor, not {type(q).__name__}")
    elif not 0 <= float(q) <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {float(q):g}")
    if x.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.numel() and not bool(RD.all(CMP.logical_and(CMP.ge(q, 0), CMP.le(q, 1)))):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, op):
    x = U.tensor_arg(input, op)
    _check(x, q, dim, interpolation, op)
    scalar_q = not isinstance(q, Tensor) or q.dim() == 0
    qt = (q if isinstance(q, Tensor) else CR.tensor(float(q), dtype=x._dtype, device=x._device)).reshape(-1).detach()
    # the sorted values along the last dim: all elements (dim None), else dim moved last
    if dim is None:
        src = x.reshape(-1)
        out_shape = (1,) * x.dim() if keepdim else ()
    else:
        d = U.wrap_dim(dim, x.dim(), op)
        src = x.movedim(d, -1) if x.dim() else x.reshape(1)
        out_shape = tuple(1 if i == d else s for i, s in enumerate(x._shape)) if keepdim else \
            tuple(s for i, s in enumerate(x._shape) if i != d)
    srt = IX.sort(src, -1).values  # NaN sorts last
    n = srt._shape[-1]
    nan_any = RD.any(CMP.isnan(srt.detach()), -1, keepdim=True)
    if ignore_nan:
        last = RD.sum(CMP.logical_not(CMP.isnan(srt.detach())), -1, keepdim=True).to(x._dtype) - 1
        ranks = PW.where(CMP.lt(last, 0), float(n - 1), qt * last)  # all NaN: the last (a NaN)
    else:
        ranks = PW.where(nan_any, float(n - 1), qt * float(n - 1))  # a NaN makes the result NaN
    ranks = ranks.expand(srt._shape[:-1] + (qt._shape[0],))
    if interpolation == "lower":
        ranks = UN.floor(ranks)
    elif interpolation == "higher":
        ranks = UN.ceil(ranks)
    elif interpolation == "nearest":
        ranks = UN.round(ranks)
    below = ranks.to(D.int64)
    vals = IX.gather(srt, -1, below)
    if interpolation in ("linear", "midpoint"):
        above = UN.ceil(ranks).to(D.int64)
        if interpolation == "midpoint":
            w = PW.where(CMP.eq(ranks, below.to(ranks._dtype)), 0.0, 0.5).to(x._dtype)
        else:
            w = ranks - below.to(ranks._dtype)
        vals = PW.lerp(vals, IX.gather(srt, -1, above), w)
    # (..., len(q)) -> (len(q), *out_shape), or out_shape for a scalar q
    vals = vals.movedim(-1, 0)
    res = vals.reshape((qt._shape[0],) + out_shape)
    return res.reshape(out_shape) if scalar_q else res


@composite("quantile")
def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """The ``q``-th quantiles (a number or a 1-D tensor of them in [0, 1]) over ``dim`` (or all
    elements); a 1-D ``q`` adds a leading dim. A slice holding NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@composite("nanquantile")
def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """:func:`quantile` ignoring NaN (a slice of NaN only gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")

