"""Reductions: sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, logsumexp, norm,
all/any, count_nonzero, median, mode, and the cumulative ops."""
from __future__ import annotations

import math

from .. import _dtype as D
from .. import return_types as RT
from .._tensor import Tensor, _wrap_dim
from . import _args as U
from .registry import dispatch, register_op
from . import arithmetic as A
from . import comparison as CMP
from . import copy as CP
from . import creation as CR
from . import indexing as IX
from . import pointwise as PW
from . import shape as SH
from . import unary as UN
from . import writes as W

__all__ = ["all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "count_nonzero", "cummax", "cummin",
           "cumprod", "cumprod_", "cumsum", "cumsum_", "logcumsumexp", "logsumexp", "max", "mean", "median", "min",
           "mode", "nanmean", "nanmedian", "nansum", "norm", "prod", "std", "std_mean", "sum", "sum_to_size", "var",
           "var_mean"]

_FLOAT = D._FLOAT


def _unreduce(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to ``shape``."""
    if not keepdim:
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(shape)


def _numel_of(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _out(r, out, op):
    """Write ``r`` (a tensor or a tuple of them) into the user's ``out=``."""
    if out is None:
        return r
    return W.write_out(out, r, op) if isinstance(r, Tensor) else W.write_out_tuple(out, r, op)


# -- sum, mean, prod ------------------------------------------------------------------------------

def _sum_bw(ctx, g):
    x, dims, keepdim = ctx.args
    return (_unreduce(g, x.shape, dims, keepdim),)


_SUM = register_op("sum", group="reduce", saves=(), backward=_sum_bw)


def _prep_reduce(input, dim, op):
    x = U.tensor_arg(input, op)
    return x, U.dims_arg(dim, len(x._shape), op)


def sum(input, dim=None, keepdim: bool = False, *, dtype=None, out=None):
    """Sum over ``dim`` (an int, a tuple, or all); integers and bools sum as int64."""
    x, dims = _prep_reduce(input, dim, "sum")
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if dt is not x._dtype:
            x = CP.cast(x, dt)
    elif x._dtype.category < _FLOAT and x._dtype is not D.int64:
        x = CP.cast(x, D.int64)
    r = dispatch(_SUM, x._device, (x, dims, bool(keepdim)), (x,))
    return r if out is None else W.write_out(out, r, "sum")


def _mean_decomp(x, dims, keepdim):
    n = _numel_of(x._shape, dims)
    s = sum(x, dims, keepdim)
    return s / n if n else s * float("nan")


def _mean_bw(ctx, g):
    x, dims, keepdim = ctx.args
    n = _numel_of(x.shape, dims)
    return (_unreduce(g / n if n else g * float("nan"), x.shape, dims, keepdim),)


_MEAN = register_op("mean", decomposition=_mean_decomp, backward=_mean_bw, saves=(), group="reduce")


def mean(input, dim=None, keepdim: bool = False, *, dtype=None, out=None):
    """Arithmetic mean over ``dim``; floating inputs only (or give ``dtype``)."""
    x, dims = _prep_reduce(input, dim, "mean")
    if dtype is not None:
        x = CP.cast(x, D.to_dtype(dtype)) if D.to_dtype(dtype) is not x._dtype else x
    if x._dtype.category != _FLOAT:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                           f"dtype. Got: {_T(x._dtype)}")
    r = dispatch(_MEAN, x._device, (x, dims, bool(keepdim)), (x,))
    return r if out is None else W.write_out(out, r, "mean")


def _T(dt):
    return U.type_name(dt)


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero."""
    x = U.tensor_arg(input, "nansum")
    if x._dtype.category == _FLOAT:
        x = _zero_nan(x)
    return sum(x, dim, keepdim, dtype=dtype, out=out)


def _zero_nan(x):
    return PW.where(CMP.isnan(x), 0.0, x)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over the non-NaN values."""
    x = U.tensor_arg(input, "nanmean")
    if dtype is not None and D.to_dtype(dtype) is not x._dtype:
        x = CP.cast(x, D.to_dtype(dtype))
    if x._dtype.category != _FLOAT:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {_T(x._dtype)}")
    cnt = sum(CMP.logical_not(CMP.isnan(x)), dim, keepdim).to(x._dtype)
    r = sum(_zero_nan(x), dim, keepdim) / cnt
    return r if out is None else W.write_out(out, r, "nanmean")


def _prod_bw(ctx, g):
    x, dims, keepdim = ctx.args
    # gradient of a product: the product of all other elements, via exclusive cumulative products
    gx = _unreduce(g, x._shape, dims, keepdim)
    if not dims:
        return (gx,)
    d = dims
    # move reduced dims last and flatten them
    keep = [i for i in range(x.dim()) if i not in d]
    perm = keep + list(d)
    xp = x.permute(perm)
    flat = xp.reshape(xp._shape[:len(keep)] + (-1,))
    ones = flat.narrow(-1, 0, 1) * 0 + 1
    left = cumprod(_cat([ones, flat.narrow(-1, 0, flat._shape[-1] - 1)], -1), -1)
    rflat = _flip(flat, (-1,))
    right = _flip(cumprod(_cat([ones, rflat.narrow(-1, 0, rflat._shape[-1] - 1)], -1), -1), (-1,))
    others = (left * right).reshape(xp._shape).permute(_inv(perm))
    return (gx * others,)


def _inv(p):
    r = [0] * len(p)
    for i, v in enumerate(p):
        r[v] = i
    return r


def _cat(ts, dim):
    return SH.cat(ts, dim)


def _flip(x, dims):
    return SH.flip(x, dims)


_PROD = register_op("prod", group="reduce", backward=_prod_bw)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None, out=None):
    """Product over ``dim`` (one dim, or all when None)."""
    x = U.tensor_arg(input, "prod")
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    dims = U.dims_arg(dim, len(x._shape), "prod")
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if dt is not x._dtype:
            x = CP.cast(x, dt)
    elif x._dtype.category < _FLOAT and x._dtype is not D.int64:
        x = CP.cast(x, D.int64)
    r = dispatch(_PROD, x._device, (x, dims, bool(keepdim)), (x,))
    return r if out is None else W.write_out(out, r, "prod")


# -- max / min ----------------------------------------------------------------------------------

def _amax_bw(ctx, g):
    x, dims, keepdim = ctx.args
    out = ctx.out
    o = _unreduce(out, x._shape, dims, keepdim)
    mask = (x == o).to(g._dtype)
    cnt = _unreduce(sum(mask, dims, keepdim), x._shape, dims, keepdim)
    return (_unreduce(g, x._shape, dims, keepdim) * mask / cnt,)


_AMAX = register_op("amax", group="reduce", save_output=True, backward=_amax_bw)
_AMIN = register_op("amin", group="reduce", save_output=True, backward=_amax_bw)


def _check_nonempty(x, dims, op, dim_given=True):
    if not dim_given:
        if x.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               f"reduction dim with the 'dim' argument (input {U.desc(x)}).")
        return
    for d in dims:
        if x._shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size (input {U.desc(x)}).")


def _no_dim(dim) -> bool:
    return dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)


def amax(input, dim=(), keepdim: bool = False, *, out=None):
    """Maximum over ``dim`` (all when empty); gradient shared evenly between ties."""
    x = U.tensor_arg(input, "amax")
    dims = U.dims_arg(None if _no_dim(dim) else dim, len(x._shape), "amax")
    _check_nonempty(x, dims, "amax", not _no_dim(dim))
    r = dispatch(_AMAX, x._device, (x, dims, bool(keepdim)), (x,))
    return r if out is None else W.write_out(out, r, "amax")


def amin(input, dim=(), keepdim: bool = False, *, out=None):
    """Minimum over ``dim`` (all when empty)."""
    x = U.tensor_arg(input, "amin")
    dims = U.dims_arg(None if _no_dim(dim) else dim, len(x._shape), "amin")
    _check_nonempty(x, dims, "amin", not _no_dim(dim))
    r = dispatch(_AMIN, x._device, (x, dims, bool(keepdim)), (x,))
    return r if out is None else W.write_out(out, r, "amin")


def _aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (one dim, or all when None)."""
    x = U.tensor_arg(input, "aminmax")
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    if x.numel() == 0 and (dim is None or x._shape[_wrap_dim(dim, x.dim(), "aminmax")] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
    d = () if dim is None else dim
    return RT.aminmax(amin(x, d, keepdim), amax(x, d, keepdim))


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(min, max) over ``dim`` (one dim, or all when None)."""
    return _out(_aminmax(input, dim=dim, keepdim=keepdim), out, "aminmax")


_ARGMAX = register_op("argmax", group="reduce", differentiable=False)
_ARGMIN = register_op("argmin", group="reduce", differentiable=False)


def argmax(input, dim=None, keepdim: bool = False, *, out=None):
    """Index of the maximum (the first one) over ``dim``, or of the flattened tensor."""
    r = _arg(_ARGMAX, input, dim, keepdim, "argmax")
    return r if out is None else W.write_out(out, r, "argmax")


def argmin(input, dim=None, keepdim: bool = False, *, out=None):
    """Index of the minimum (the first one) over ``dim``, or of the flattened tensor."""
    r = _arg(_ARGMIN, input, dim, keepdim, "argmin")
    return r if out is None else W.write_out(out, r, "argmin")


def _arg(op, input, dim, keepdim, name):
    x = U.tensor_arg(input, name)
    if x._dtype is D.bool:
        x = CP.cast(x, D.uint8)
    if dim is None:
        if x.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        r = dispatch(op, x._device, (x, None, False), ())
        if keepdim:
            r = r.reshape((1,) * x.dim())
        return r
    d = _wrap_dim(dim, x.dim(), name)
    if x.dim() and x._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if x.dim() == 0:
        r = dispatch(op, x._device, (x, None, False), ())
        return r
    return dispatch(op, x._device, (x, d, bool(keepdim)), ())


def _take_bw(ctx, g):
    """Backward of ops returning values at indices along a dim (max/min/median/mode with dim)."""
    x, d, keepdim = ctx.args[0], ctx.args[1], ctx.args[2]
    gv = g[0]
    idx = ctx.out[1]
    if gv is None:
        return (None,)
    if not keepdim:
        gv = gv.unsqueeze(d)
        idx = idx.unsqueeze(d)
    from . import zeros
    z = zeros(x.shape, dtype=gv._dtype, device=gv._device)
    return (IX.scatter_add(z, d, idx, gv),)


def _max_dim_decomp(x, d, keepdim):
    v = amax(x, d, keepdim=True)
    i = argmax(x, d, keepdim=True)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return (v, i)


def _min_dim_decomp(x, d, keepdim):
    v = amin(x, d, keepdim=True)
    i = argmin(x, d, keepdim=True)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return (v, i)


_MAX_DIM = register_op("max_dim", decomposition=_max_dim_decomp, backward=_take_bw, saves=(), save_output=True, group="reduce")
_MIN_DIM = register_op("min_dim", decomposition=_min_dim_decomp, backward=_take_bw, saves=(), save_output=True, group="reduce")


def _maxmin(input, dim, keepdim, other, out, name, full, op, rt):
    x = U.tensor_arg(input, name)
    if isinstance(dim, Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        return (A.maximum if name == "max" else A.minimum)(x, other, out=out)
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        r = full(x)
        return r if out is None else W.write_out(out, r, name)
    r = _maxmin_dim(x, dim, keepdim, name, full, op, rt)
    return r if out is None else W.write_out_tuple(out, r, name)


def _maxmin_dim(x, dim, keepdim, name, full, op, rt):
    d = _wrap_dim(dim, x.dim(), name)
    if x.dim() == 0:
        from . import zeros
        return rt(x.clone(), zeros((), dtype=D.int64, device=x._device))
    if x._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if x._dtype is D.bool:
        v, i = _maxmin_dim(x.to(D.uint8), d, keepdim, name, full, op, rt)
        return rt(v.to(D.bool), i)
    v, i = dispatch(op, x._device, (x, d, bool(keepdim)), (x,))
    return rt(v, i)


def max(input, dim=None, keepdim: bool = False, *, other=None, out=None):
    """``max(x)``: the maximum; ``max(x, dim)``: (values, indices); ``max(x, other)``: maximum."""
    return _maxmin(input, dim, keepdim, other, out, "max", amax, _MAX_DIM, RT.max)


def min(input, dim=None, keepdim: bool = False, *, other=None, out=None):
    """``min(x)``: the minimum; ``min(x, dim)``: (values, indices); ``min(x, other)``: minimum."""
    return _maxmin(input, dim, keepdim, other, out, "min", amin, _MIN_DIM, RT.min)


# -- statistics ---------------------------------------------------------------------------------

def _correction(unbiased, correction):
    if correction is not None:
        return float(correction)
    if unbiased is None or unbiased is True:
        return 1.0
    return 0.0


def _var_decomp(x, dims, correction, keepdim):
    n = _numel_of(x._shape, dims)
    m = mean(x, dims, keepdim=True)
    d = x - m
    s = sum(d * d, dims, keepdim)
    denom = n - correction
    return s / (denom if denom > 0 else 0.0)  # no degrees of freedom left: inf or nan, as PyTorch


def _var_bw(ctx, g):
    x, dims, correction, keepdim = ctx.args
    n = _numel_of(x._shape, dims)
    m = mean(x, dims, keepdim=True)
    return (_unreduce(g, x._shape, dims, keepdim) * (x - m) * (2.0 / (n - correction)),)


_VAR = register_op("var", decomposition=_var_decomp, backward=_var_bw, group="reduce")


def _std_decomp(x, dims, correction, keepdim):
    return UN.sqrt(_var_decomp(x, dims, correction, keepdim))


def _std_bw(ctx, g):
    x, dims, correction, keepdim = ctx.args
    n = _numel_of(x._shape, dims)
    m = mean(x, dims, keepdim=True)
    s = _unreduce(ctx.out, x._shape, dims, keepdim)
    return (_unreduce(g, x._shape, dims, keepdim) * (x - m) / (s * (n - correction)),)


_STD = register_op("std", decomposition=_std_decomp, backward=_std_bw, save_output=True, group="reduce")


def _var_args(input, dim, unbiased, keepdim, correction, name):
    x = U.tensor_arg(input, name)
    if isinstance(dim, bool):  # var(x, unbiased)
        unbiased, dim = dim, None
    if x._dtype.category != _FLOAT:
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_T(x._dtype)}")
    return x, U.dims_arg(dim, x.dim(), name), _correction(unbiased, correction), bool(keepdim)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default; ``unbiased=False`` is 0)."""
    x, dims, c, k = _var_args(input, dim, unbiased, keepdim, correction, "var")
    r = dispatch(_VAR, x._device, (x, dims, c, k), (x,))
    return r if out is None else W.write_out(out, r, "var")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over ``dim`` (see :func:`var`)."""
    x, dims, c, k = _var_args(input, dim, unbiased, keepdim, correction, "std")
    r = dispatch(_STD, x._device, (x, dims, c, k), (x,))
    return r if out is None else W.write_out(out, r, "std")


def _var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """(variance, mean) over ``dim`` in one call."""
    return _out(_var_mean(input, dim, unbiased, keepdim, correction=correction), out, "var_mean")


def _std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return (std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """(standard deviation, mean) over ``dim`` in one call."""
    return _out(_std_mean(input, dim, unbiased, keepdim, correction=correction), out, "std_mean")


def _lse_decomp(x, dims, keepdim):
    if dims and _numel_of(x._shape, dims) == 0:  # the log of an empty sum
        shape = tuple(1 if i in dims else s for i, s in enumerate(x._shape)) if keepdim else \
            tuple(s for i, s in enumerate(x._shape) if i not in dims)
        return CR.full(shape, float("-inf"), dtype=x._dtype, device=x._device)
    m = amax(x.detach(), dims, keepdim=True)
    m = PW.where(CMP.isinf(m), 0.0, m)
    s = sum(UN.exp(x - m), dims, keepdim=True)
    r = UN.log(s) + m
    return r.squeeze(dims) if not keepdim and dims else r


def _lse_bw(ctx, g):
    x, dims, keepdim = ctx.args
    o = _unreduce(ctx.out, x._shape, dims, keepdim)
    return (_unreduce(g, x._shape, dims, keepdim) * UN.exp(x - o),)


_LSE = register_op("logsumexp", decomposition=_lse_decomp, backward=_lse_bw, save_output=True, group="reduce")


def logsumexp(input, dim, keepdim: bool = False, *, out=None):
    """``log(sum(exp(x), dim))``, computed stably."""
    x = U.tensor_arg(input, "logsumexp")
    if x._dtype.category != _FLOAT:
        x = CP.cast(x, D.get_default_dtype())
    dims = U.dims_arg(dim, x.dim(), "logsumexp")
    r = dispatch(_LSE, x._device, (x, dims, bool(keepdim)), (x,))
    return r if out is None else W.write_out(out, r, "logsumexp")


def _norm2_decomp(x, dims, keepdim):
    return UN.sqrt(sum(x * x, dims, keepdim))


def _norm2_bw(ctx, g):
    x, dims, keepdim = ctx.args
    o = _unreduce(ctx.out, x._shape, dims, keepdim)
    gx = _unreduce(g, x._shape, dims, keepdim)
    return (PW.where(o == 0, 0.0, gx * x / o),)


_NORM2 = register_op("_norm2", decomposition=_norm2_decomp, backward=_norm2_bw, save_output=True, group="reduce")


def norm(input, p="fro", dim=None, keepdim: bool = False, out=None, dtype=None):
    """Vector p-norm over ``dim`` (or all): p = 2/'fro', 1, inf, -inf, 0 or any float."""
    x = U.tensor_arg(input, "norm")
    if dtype is not None:
        x = CP.cast(x, D.to_dtype(dtype))
    if x._dtype.category != _FLOAT:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {_T(x._dtype)}")
    if p is None:
        p = 2
    dims = U.dims_arg(dim, x.dim(), "norm")
    if p == "fro" or p == 2:
        r = dispatch(_NORM2, x._device, (x, dims, bool(keepdim)), (x,))
    elif p == "nuc":
        raise NotImplementedError("norm(p='nuc') (nuclear norm) is not implemented")
    elif p == math.inf:
        r = amax(UN.abs(x), dims, keepdim)
    elif p == -math.inf:
        r = amin(UN.abs(x), dims, keepdim)
    elif p == 0:
        r = sum(CMP.ne(x, 0).to(x._dtype), dims, keepdim)
    elif p == 1:
        r = sum(UN.abs(x), dims, keepdim)
    else:
        r = A.pow(sum(A.pow(UN.abs(x), float(p)), dims, keepdim), 1.0 / float(p))
    return r if out is None else W.write_out(out, r, "norm")


def _all_any(input, dim, keepdim, out, name, op, empty_value):
    x = U.tensor_arg(input, name)
    b = x if x._dtype is D.bool else CMP.ne(x, 0)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        r = b.clone() if b is x else b  # as PyTorch: an empty dim list reduces nothing here
    else:
        dims = U.dims_arg(dim, x.dim(), name)
        if b.numel() == 0:
            shape = tuple(1 if i in dims else s for i, s in enumerate(x._shape)) if keepdim else \
                tuple(s for i, s in enumerate(x._shape) if i not in dims)
            r = CR.full(shape, empty_value, dtype=D.bool, device=x._device)
        else:
            r = dispatch(op, b._device, (b, dims, bool(keepdim)), ())
    if x._dtype is D.uint8:  # as PyTorch: uint8 in, uint8 out
        r = CP.cast(r, D.uint8)
    return r if out is None else W.write_out(out, r, name)


def all(input, dim=None, keepdim: bool = False, *, out=None):
    """True when every element (over ``dim``) is nonzero (uint8 inputs give uint8)."""
    return _all_any(input, dim, keepdim, out, "all", _AMIN, True)


def any(input, dim=None, keepdim: bool = False, *, out=None):
    """True when some element (over ``dim``) is nonzero (uint8 inputs give uint8)."""
    return _all_any(input, dim, keepdim, out, "any", _AMAX, False)


def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim``."""
    return sum(CMP.ne(input, 0), dim)


# -- order statistics -------------------------------------------------------------------------

def _median_dim_decomp(x, d, keepdim):
    n = x._shape[d]
    v, i = IX.sort(x, d, stable=True)
    k = (n - 1) // 2
    if x._dtype.category == _FLOAT and n:
        # NaN propagates, as PyTorch: a slice holding NaN has median NaN, at its first NaN (NaN sorts last)
        nans = sum(CMP.isnan(x), d, keepdim=True)
        pos = PW.where(nans > 0, n - nans, k)
        vals, idx = IX.gather(v, d, pos), IX.gather(i, d, pos)
    else:
        vals, idx = v.narrow(d, k, 1), i.narrow(d, k, 1)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return (vals.contiguous(), idx.contiguous())


_MEDIAN_DIM = register_op("median_dim", decomposition=_median_dim_decomp, backward=_take_bw, saves=(),
                          save_output=True, group="reduce")


def _median(input, dim=None, keepdim: bool = False):
    """The lower median: of all elements, or (values, indices) along ``dim``; NaN propagates
    (see :func:`nanmedian` to ignore it)."""
    x = U.tensor_arg(input, "median")
    if dim is None:
        if x.numel() == 0:
            return CR.full((), float("nan"), dtype=x._dtype, device=x._device)
        flat = x.reshape(-1)
        v, _ = dispatch(_MEDIAN_DIM, x._device, (flat, 0, False), (flat,))
        return v
    d = _wrap_dim(dim, x.dim(), "median")
    if x.dim() == 0:
        from . import zeros
        return RT.median(x.clone(), zeros((), dtype=D.int64, device=x._device))
    if x._shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    v, i = dispatch(_MEDIAN_DIM, x._device, (x, d, bool(keepdim)), (x,))
    return RT.median(v, i)


def median(input, dim=None, keepdim: bool = False, *, out=None):
    """The lower median: of all elements, or (values, indices) along ``dim``; NaN propagates
    (see :func:`nanmedian` to ignore it)."""
    return _out(_median(input, dim, keepdim), out, "median")


def _nanmedian(input, dim=None, keepdim=False):
    """Median ignoring NaN (NaN sorted last, then the lower median of the rest)."""
    x = U.tensor_arg(input, "nanmedian")
    if dim is None:
        flat = x.reshape(-1)
        keep = flat[CMP.logical_not(CMP.isnan(flat))]
        return median(keep) if keep.numel() else median(flat)
    d = _wrap_dim(dim, x.dim(), "nanmedian")
    v, i = IX.sort(x, d)  # NaN sorts last
    cnt = sum(CMP.logical_not(CMP.isnan(x)), d, keepdim=True)
    k = ((cnt - 1).clamp(min=0)) // 2
    vals, idx = IX.gather(v, d, k), IX.gather(i, d, k)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return RT.nanmedian(vals, idx)


def nanmedian(input, dim=None, keepdim: bool = False, *, out=None):
    """Median ignoring NaN (NaN sorted last, then the lower median of the rest)."""
    return _out(_nanmedian(input, dim, keepdim), out, "nanmedian")


def _mode_decomp(x, d, keepdim):
    xm = x.movedim(d, -1)
    eqm = (xm.unsqueeze(-1) == xm.unsqueeze(-2))
    if x._dtype.category == _FLOAT:  # NaN counts as a value, equal to the other NaNs
        nm = CMP.isnan(xm)
        eqm = CMP.logical_or(eqm, CMP.logical_and(nm.unsqueeze(-1), nm.unsqueeze(-2)))
    counts = sum(eqm, -1)
    best = amax(counts, -1, keepdim=True)
    # among the most frequent values, the smallest; its last occurrence
    cand = counts == best
    big = xm.detach()
    if big._dtype.category == _FLOAT:
        filler = float("inf")
    else:
        filler = D.iinfo(big._dtype).max if big._dtype is not D.bool else True
    if big._dtype.category == _FLOAT:  # NaN sorts above every number, so it wins only when it is the only mode
        real = CMP.logical_and(cand, CMP.logical_not(CMP.isnan(big)))
        vals = amin(PW.where(real, big, filler), -1, keepdim=True)
        vals = PW.where(any(real, -1, keepdim=True), vals, float("nan"))
    else:
        vals = amin(PW.where(cand, big, filler), -1, keepdim=True)
    n = xm._shape[-1]
    pos = CR.arange(n, device=x._device)
    hit = (xm == vals)
    if x._dtype.category == _FLOAT:
        hit = CMP.logical_or(hit, CMP.logical_and(CMP.isnan(xm), CMP.isnan(vals)))
    idx = amax(PW.where(hit, pos, -1), -1, keepdim=True)
    vals = IX.gather(xm, -1, idx)
    vals, idx = vals.movedim(-1, d), idx.movedim(-1, d)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return (vals.contiguous(), idx.contiguous())


_MODE = register_op("mode", decomposition=_mode_decomp, backward=_take_bw, saves=(), save_output=True, group="reduce")


def _mode(input, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest among ties) and its index."""
    x = U.tensor_arg(input, "mode")
    if x.dim() == 0:
        from . import zeros
        return RT.mode(x.clone(), zeros((), dtype=D.int64, device=x._device))
    d = _wrap_dim(dim, x.dim(), "mode")
    if x._shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    v, i = dispatch(_MODE, x._device, (x, d, bool(keepdim)), (x,))
    return RT.mode(v, i)


def mode(input, dim: int = -1, keepdim: bool = False, *, out=None):
    """The most frequent value along ``dim`` (the smallest among ties) and its index."""
    return _out(_mode(input, dim, keepdim), out, "mode")


# -- cumulative ---------------------------------------------------------------------------------

def _cumsum_bw(ctx, g):
    x, d = ctx.args
    return (sum(g, d, keepdim=True) - cumsum(g, d) + g,)


_CUMSUM = register_op("cumsum", group="reduce", saves=(), backward=_cumsum_bw)


def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum along ``dim``; integers accumulate as int64."""
    x = U.tensor_arg(input, "cumsum")
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if dt is not x._dtype:
            x = CP.cast(x, dt)
    elif x._dtype.category < _FLOAT and x._dtype is not D.int64:
        x = CP.cast(x, D.int64)
    d = _wrap_dim(dim, x.dim(), "cumsum") if x.dim() else 0
    if x.dim() == 0:
        return x.clone()
    r = dispatch(_CUMSUM, x._device, (x, d), (x,))
    return r if out is None else W.write_out(out, r, "cumsum")


def cumsum_(self, dim, *, dtype=None):
    """In-place :func:`cumsum`."""
    return self.copy_(cumsum(self, dim, dtype=dtype))


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
        return ((sum(r, d, keepdim=True) - cumsum(r, d) + r) / x,)
    n = x._shape[d]
    from . import zeros_like
    cols = []
    for k in range(n):
        # d out_j / d x_k for j >= k: prod_{i<=j, i != k} x_i
        xk_one = SH.cat([x.narrow(d, 0, k), (x.narrow(d, k, 1) * 0 + 1), x.narrow(d, k + 1, n - k - 1)], d)
        cp = cumprod(xk_one, d)
        mask_parts = [zeros_like(x.narrow(d, 0, k)), (x.narrow(d, k, n - k) * 0 + 1)]
        mask = SH.cat(mask_parts, d)
        cols.append(sum(g * cp * mask, d, keepdim=True))
    res = SH.cat(cols, d)
    return (PW.where(res != res, 0.0, res),)


_CUMPROD = register_op("cumprod", decomposition=_cumprod_decomp, backward=_cumprod_bw, save_output=True, group="reduce")


def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product along ``dim``."""
    x = U.tensor_arg(input, "cumprod")
    if dtype is not None:
        x = CP.cast(x, D.to_dtype(dtype)) if D.to_dtype(dtype) is not x._dtype else x
    elif x._dtype.category < _FLOAT and x._dtype is not D.int64:
        x = CP.cast(x, D.int64)
    if x.dim() == 0:
        return x.clone()
    d = _wrap_dim(dim, x.dim(), "cumprod")
    r = dispatch(_CUMPROD, x._device, (x, d), (x,))
    return r if out is None else W.write_out(out, r, "cumprod")


def cumprod_(self, dim, *, dtype=None):
    """In-place :func:`cumprod`."""
    return self.copy_(cumprod(self, dim, dtype=dtype))


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
    idx = ctx.out[1]
    from . import zeros
    z = zeros(x.shape, dtype=gv._dtype, device=gv._device)
    return (IX.scatter_add(z, d, idx, gv),)


_CUMMAX = register_op("cummax", decomposition=lambda x, d: _cumext_decomp(x, d, True), backward=_cum_take_bw,
                      saves=(), save_output=True, group="reduce")
_CUMMIN = register_op("cummin", decomposition=lambda x, d: _cumext_decomp(x, d, False), backward=_cum_take_bw,
                      saves=(), save_output=True, group="reduce")


def _cumext(op, rt, input, dim, name):
    x = U.tensor_arg(input, name)
    if x.dim() == 0:
        from . import zeros
        return rt(x.clone(), zeros((), dtype=D.int64, device=x._device))
    v, i = dispatch(op, x._device, (x, _wrap_dim(dim, x.dim(), name)), (x,))
    return rt(v, i)


def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and the index where it was reached (the last one on ties)."""
    return _out(_cumext(_CUMMAX, RT.cummax, input, dim, "cummax"), out, "cummax")


def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and its index (the last one on ties)."""
    return _out(_cumext(_CUMMIN, RT.cummin, input, dim, "cummin"), out, "cummin")


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
_LOGCUMSUMEXP = register_op("logcumsumexp", decomposition=_logcumsumexp_decomp, group="reduce")


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(x), dim))``, computed stably."""
    x = U.tensor_arg(input, "logcumsumexp")
    if x._dtype.category != _FLOAT:
        x = CP.cast(x, D.get_default_dtype())
    d = _wrap_dim(dim, x.dim(), "logcumsumexp")
    if x.dim() == 0:
        r = x.clone()
    else:
        r = dispatch(_LOGCUMSUMEXP, x._device, (x, d), (x,))
    return r if out is None else W.write_out(out, r, "logcumsumexp")


def sum_to_shape(g, shape, op: str = ""):
    """Sum ``g`` over broadcast dimensions so that it has ``shape``."""
    shape = tuple(shape)
    gs = g._shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0:
        raise RuntimeError(f"{op}: gradient of shape {list(gs)} can't be reduced to shape {list(shape)}")
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gs[lead + i] != 1:
            dims.append(lead + i)
        elif s != gs[lead + i] and gs[lead + i] != 1:
            raise RuntimeError(f"{op}: gradient of shape {list(gs)} can't be reduced to shape {list(shape)}")
    if dims:
        g = sum(g, tuple(dims), keepdim=True)
    if lead:
        g = g.reshape(shape)
    elif g._shape != shape:
        g = g.expand(shape)
    return g


def sum_to_size(input, *size):
    """``input`` summed over broadcast dimensions down to ``size`` (which ``input`` must
    broadcast from)."""
    shape = U.size_arg(size, "sum_to_size")
    return sum_to_shape(input, shape, "sum_to_size")
