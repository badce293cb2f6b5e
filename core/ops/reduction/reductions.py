"""Reductions over dims: sum, mean, prod (and the NaN-ignoring nansum/nanmean), amax/amin/aminmax,
argmax/argmin, max/min (full, along a dim with indices, or elementwise against ``other``),
all/any/count_nonzero, logsumexp, the vector norm, and ``sum_to_size``.

sum, prod, amax, amin, argmax and argmin are primitives; mean, logsumexp, the 2-norm and the
``max_dim``/``min_dim`` ops decompose into them (a backend may implement any of them).
"""
from __future__ import annotations

import math

from ... import _dtype as D
from ... import _state
from ... import return_types as RT
from ..._tensor import Tensor, _wrap_dim
from .. import _args as U
from .. import arithmetic as A
from .. import comparison as CMP
from .. import copy as CP
from .. import creation as CR
from .. import indexing as IX
from .. import pointwise as PW
from .. import shape as SH
from .. import unary as UN
from . import scans as SC
from ..declare import composite, defop
from ..registry import dispatch, register_op

__all__ = ["sum", "mean", "nansum", "nanmean", "prod", "amax", "amin", "aminmax", "argmax", "argmin", "max", "min",
           "all", "any", "count_nonzero", "logsumexp", "norm"]

_FLOAT = D._FLOAT


# -- shared by the reduction family ----------------------------------------------------------------

def unreduce(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to ``shape``."""
    if not keepdim:
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(shape)


def numel_of(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


def reduce_args(input, dim, op: str):
    """``(tensor, sorted dims)`` of a reduction's arguments."""
    x = U.tensor_arg(input, op)
    return x, U.dims_arg(dim, len(x._shape), op)


def int_accumulator(x, dtype):
    """``x`` cast for sum/prod/cumsum/cumprod: to ``dtype`` when given, integers and bools to int64."""
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if dt.category != _FLOAT and x._requires_grad and _state.grad.enabled:
            # an integer result of a differentiable reduction of a tensor that requires grad (PyTorch)
            raise RuntimeError(f"Autograd not support dtype: {U.type_name(dt)}")
        return CP.cast(x, dt) if dt is not x._dtype else x
    if x._dtype.category < _FLOAT and x._dtype is not D.int64:
        return CP.cast(x, D.int64)
    return x


def reduced_shape(shape, dims, keepdim) -> tuple:
    return tuple(1 if i in dims else s for i, s in enumerate(shape)) if keepdim else \
        tuple(s for i, s in enumerate(shape) if i not in dims)


def take_backward(ctx, g):
    """Backward of ops returning values at indices along a dim (max/min/median/mode with dim)."""
    x, d, keepdim = ctx.args[0], ctx.args[1], ctx.args[2]
    gv = g[0]
    idx = ctx.out[1]
    if gv is None:
        return (None,)
    if not keepdim:
        gv = gv.unsqueeze(d)
        idx = idx.unsqueeze(d)
    z = CR.zeros(x.shape, dtype=gv._dtype, device=gv._device)
    return (IX.scatter_add(z, d, idx, gv),)


# -- sum, mean, prod --------------------------------------------------------------------------

def _sum_bw(ctx, g):
    x, dims, keepdim = ctx.args
    return (unreduce(g, x.shape, dims, keepdim),)


@defop("sum", backward=_sum_bw, saves=(), group="reduce")
def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum over ``dim`` (an int, a tuple, or all); integers and bools sum as int64."""
    x, dims = reduce_args(input, dim, "sum")
    x = int_accumulator(x, dtype)
    return x._device, (x, dims, bool(keepdim)), (x,)


def _mean_decomp(x, dims, keepdim):
    n = numel_of(x._shape, dims)
    s = sum(x, dims, keepdim)
    return s / n if n else s * math.nan


def _mean_bw(ctx, g):
    x, dims, keepdim = ctx.args
    n = numel_of(x.shape, dims)
    return (unreduce(g / n if n else g * math.nan, x.shape, dims, keepdim),)


@defop("mean", decomposition=_mean_decomp, backward=_mean_bw, saves=(), group="reduce")
def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Arithmetic mean over ``dim``; floating inputs only (or give ``dtype``)."""
    x, dims = reduce_args(input, dim, "mean")
    if dtype is not None and D.to_dtype(dtype) is not x._dtype:
        x = CP.cast(x, D.to_dtype(dtype))
    if x._dtype.category < _FLOAT:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {U.type_name(x._dtype)}")
    return x._device, (x, dims, bool(keepdim)), (x,)


def _zero_nan(x):
    return PW.where(CMP.isnan(x), 0.0, x)


@composite("nansum")
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    x = U.tensor_arg(input, "nansum")
    return sum(_zero_nan(x) if x._dtype.category == _FLOAT else x, dim, keepdim, dtype=dtype)


@composite("nanmean")
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over the non-NaN values."""
    x = U.tensor_arg(input, "nanmean")
    if x._dtype.category != _FLOAT:  # the input's dtype, whatever dtype= says (PyTorch)
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{U.type_name(x._dtype)}")
    if dtype is not None and D.to_dtype(dtype) is not x._dtype:
        x = CP.cast(x, D.to_dtype(dtype))
    if x._dtype.category != _FLOAT:
        raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must be either a floating "
                           f"point or complex dtype. Got: {U.type_name(x._dtype)}")
    cnt = sum(CMP.logical_not(CMP.isnan(x)), dim, keepdim).to(x._dtype)
    return sum(_zero_nan(x), dim, keepdim) / cnt


def _prod_bw(ctx, g):
    x, dims, keepdim = ctx.args
    # gradient of a product: the product of all other elements, via exclusive cumulative products
    gx = unreduce(g, x._shape, dims, keepdim)
    if not dims or not x.numel():  # nothing multiplied, or no element to differentiate
        return (gx,)
    if x.numel() == 0:  # nothing to differentiate: an empty gradient
        return (CR.zeros(x._shape, dtype=g._dtype, device=g._device),)
    keep = [i for i in range(x.dim()) if i not in dims]
    perm = keep + list(dims)  # reduced dims last, then flattened
    xp = x.permute(perm)
    flat = xp.reshape(xp._shape[:len(keep)] + (-1,))
    ones = flat.narrow(-1, 0, 1) * 0 + 1
    left = _exclusive_cumprod(flat, ones)
    right = SH.flip(_exclusive_cumprod(SH.flip(flat, (-1,)), ones), (-1,))
    others = (left * right).reshape(xp._shape).permute(U.inverse_permutation(perm))
    return (gx * U.cj(others),)


def _exclusive_cumprod(flat, ones):
    """Along the last dim: 1, x0, x0*x1, ... (the product of the elements before each one)."""
    return SC.cumprod(SH.cat([ones, flat.narrow(-1, 0, flat._shape[-1] - 1)], -1), -1)


@defop("prod", backward=_prod_bw, group="reduce")
def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Product over ``dim`` (one dim, or all when None)."""
    x = U.tensor_arg(input, "prod")
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    dims = U.dims_arg(dim, len(x._shape), "prod")
    x = int_accumulator(x, dtype)
    return x._device, (x, dims, bool(keepdim)), (x,)


# -- amax, amin, argmax, argmin, max, min ---------------------------------------------------------

def _amax_bw(ctx, g):
    x, dims, keepdim = ctx.args
    o = unreduce(ctx.out, x._shape, dims, keepdim)
    mask = (x == o).to(g._dtype)
    cnt = unreduce(sum(mask, dims, keepdim), x._shape, dims, keepdim)
    return (unreduce(g, x._shape, dims, keepdim) * mask / cnt,)


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


def _extreme_plan(input, dim, keepdim, name):
    x = U.tensor_arg(input, name)
    if isinstance(dim, (tuple, list)) and x.dim():  # an empty dim is reported before a repeated one (PyTorch)
        _check_nonempty(x, [_wrap_dim(d, x.dim(), name) for d in dim], name)
    dims = U.dims_arg(None if _no_dim(dim) else dim, len(x._shape), name)
    _check_nonempty(x, dims, name, not _no_dim(dim))
    U.refuse_complex(x, name)
    return x._device, (x, dims, bool(keepdim)), (x,)


@defop("amax", backward=_amax_bw, save_output=True, group="reduce")
def amax(input, dim=(), keepdim: bool = False):
    """Maximum over ``dim`` (all when empty); gradient shared evenly between ties."""
    return _extreme_plan(input, dim, keepdim, "amax")


@defop("amin", backward=_amax_bw, save_output=True, group="reduce")
def amin(input, dim=(), keepdim: bool = False):
    """Minimum over ``dim`` (all when empty)."""
    return _extreme_plan(input, dim, keepdim, "amin")


@composite("aminmax")
def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` (one dim, or all when None)."""
    x = U.tensor_arg(input, "aminmax")
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
    if x.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                           "no identity.")
    if dim is not None and x.dim() and x._shape[_wrap_dim(dim, x.dim(), "aminmax")] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {_wrap_dim(dim, x.dim(), 'aminmax')} to have non-zero "
                         f"size (input {U.desc(x)}).")
    d = () if dim is None else dim
    return RT.aminmax(amin(x, d, keepdim), amax(x, d, keepdim))


def _index_plan(op, input, dim, keepdim, name):
    """argmax/argmin: int64 indices, never differentiable (the kernel gets (x, dim or None, keepdim))."""
    x = U.tensor_arg(input, name)
    if x._dtype is D.bool:
        raise RuntimeError(f"{name}(): does not support bool input")
    if x._dtype.category == D._COMPLEX:
        raise RuntimeError(f"{name}(): does not support complex input")
    if dim is None:
        if x.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        r = dispatch(op, x._device, (x, None, False), ())
        return None, (r.reshape((1,) * x.dim()) if keepdim else r), None
    d = _wrap_dim(dim, x.dim(), name)
    if x.dim() == 0:
        return x._device, (x, None, False), ()
    if x._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return x._device, (x, d, bool(keepdim)), ()


@defop("argmax", differentiable=False, group="reduce")
def argmax(input, dim=None, keepdim: bool = False):
    """Index of the maximum (the first one) over ``dim``, or of the flattened tensor."""
    return _index_plan(argmax.op, input, dim, keepdim, "argmax")


@defop("argmin", differentiable=False, group="reduce")
def argmin(input, dim=None, keepdim: bool = False):
    """Index of the minimum (the first one) over ``dim``, or of the flattened tensor."""
    return _index_plan(argmin.op, input, dim, keepdim, "argmin")


def _not_bool(x):
    """argmax/argmin refuse bool (as PyTorch's); max/min along a dim of a bool tensor take them of uint8."""
    return CP.cast(x, D.uint8) if x._dtype is D.bool else x


def _max_dim_decomp(x, d, keepdim):
    v = amax(x, d, keepdim=True)
    i = argmax(_not_bool(x), d, keepdim=True)
    return (v, i) if keepdim else (v.squeeze(d), i.squeeze(d))


def _min_dim_decomp(x, d, keepdim):
    v = amin(x, d, keepdim=True)
    i = argmin(_not_bool(x), d, keepdim=True)
    return (v, i) if keepdim else (v.squeeze(d), i.squeeze(d))


# (values, indices) along one dim: internal ops a backend may implement
_MAX_DIM = register_op("max_dim", decomposition=_max_dim_decomp, backward=take_backward, saves=(), save_output=(1,),
                       group="reduce")
_MIN_DIM = register_op("min_dim", decomposition=_min_dim_decomp, backward=take_backward, saves=(), save_output=(1,),
                       group="reduce")


def _extreme(input, dim, keepdim, other, name, full, op, rt):
    x = U.tensor_arg(input, name)
    if isinstance(dim, Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        return (A.maximum if name == "max" else A.minimum)(x, other)
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        return full(x)
    return _extreme_dim(x, dim, keepdim, name, op, rt)


def _extreme_dim(x, dim, keepdim, name, op, rt):
    d = _wrap_dim(dim, x.dim(), name)
    if x.dim() and x._shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if x._dtype.category == D._COMPLEX:
        raise RuntimeError(f"{name}(): does not support complex input")
    if x.dim() == 0:
        return rt(x.clone(), CR.zeros((), dtype=D.int64, device=x._device))
    if x._dtype is D.bool:
        v, i = _extreme_dim(x.to(D.uint8), d, keepdim, name, op, rt)
        return rt(v.to(D.bool), i)
    v, i = dispatch(op, x._device, (x, d, bool(keepdim)), (x,))
    return rt(v, i)


@composite("max")
def max(input, dim=None, keepdim: bool = False, *, other=None):
    """``max(x)``: the maximum; ``max(x, dim)``: (values, indices); ``max(x, other)``: maximum."""
    return _extreme(input, dim, keepdim, other, "max", amax, _MAX_DIM, RT.max)


@composite("min")
def min(input, dim=None, keepdim: bool = False, *, other=None):
    """``min(x)``: the minimum; ``min(x, dim)``: (values, indices); ``min(x, other)``: minimum."""
    return _extreme(input, dim, keepdim, other, "min", amin, _MIN_DIM, RT.min)


# -- all, any, count_nonzero ------------------------------------------------------------------------

def _all_any(input, dim, keepdim, name, op, empty_value):
    x = U.tensor_arg(input, name)
    b = x if x._dtype is D.bool else CMP.ne(x, 0)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        r = b.clone() if b is x else b  # as PyTorch: an empty dim list reduces nothing here
    else:
        dims = U.dims_arg(dim, x.dim(), name)
        if b.numel() == 0:
            r = CR.full(reduced_shape(x._shape, dims, keepdim), empty_value, dtype=D.bool, device=x._device)
        else:
            r = dispatch(op, b._device, (b, dims, bool(keepdim)), ())
    return CP.cast(r, D.uint8) if x._dtype is D.uint8 else r  # as PyTorch: uint8 in, uint8 out


@composite("all")
def all(input, dim=None, keepdim: bool = False):
    """True when every element (over ``dim``) is nonzero (uint8 inputs give uint8)."""
    return _all_any(input, dim, keepdim, "all", amin.op, True)


@composite("any")
def any(input, dim=None, keepdim: bool = False):
    """True when some element (over ``dim``) is nonzero (uint8 inputs give uint8)."""
    return _all_any(input, dim, keepdim, "any", amax.op, False)


@composite("count_nonzero", out=False)
def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim``."""
    return sum(CMP.ne(input, 0), dim)


# -- logsumexp, norm ------------------------------------------------------------------------------------

def _lse_decomp(x, dims, keepdim):
    if dims and numel_of(x._shape, dims) == 0:  # the log of an empty sum
        return CR.full(reduced_shape(x._shape, dims, keepdim), -math.inf, dtype=x._dtype, device=x._device)
    m = amax(x.detach(), dims, keepdim=True)
    m = PW.where(CMP.isinf(m), 0.0, m)
    s = sum(UN.exp(x - m), dims, keepdim=True)
    r = UN.log(s) + m
    return r.squeeze(dims) if not keepdim and dims else r


def _lse_bw(ctx, g):
    x, dims, keepdim = ctx.args
    o = unreduce(ctx.out, x._shape, dims, keepdim)
    return (unreduce(g, x._shape, dims, keepdim) * UN.exp(x - o),)


@defop("logsumexp", decomposition=_lse_decomp, backward=_lse_bw, save_output=True, group="reduce")
def logsumexp(input, dim, keepdim: bool = False):
    """``log(sum(exp(x), dim))``, computed stably."""
    x = U.tensor_arg(input, "logsumexp")
    if x._dtype.category != _FLOAT:
        x = CP.cast(x, D.get_default_dtype())
    return x._device, (x, U.dims_arg(dim, x.dim(), "logsumexp"), bool(keepdim)), (x,)


def _norm2_decomp(x, dims, keepdim):
    return UN.sqrt(sum(x * x, dims, keepdim))


def _norm2_bw(ctx, g):
    x, dims, keepdim = ctx.args
    o = unreduce(ctx.out, x._shape, dims, keepdim)
    gx = unreduce(g, x._shape, dims, keepdim)
    return (PW.where(o == 0, 0.0, gx * x / o),)


# the 2-norm over dims: an internal op (its gradient is 0, not NaN, at 0)
_NORM2 = register_op("_norm2", decomposition=_norm2_decomp, backward=_norm2_bw, save_output=True, group="reduce")


@composite("norm")
def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None):
    """Vector p-norm over ``dim`` (or all): p = 2/'fro', 1, inf, -inf, 0 or any float."""
    x = U.tensor_arg(input, "norm")
    if p == "fro" and isinstance(dim, (tuple, list)) and len(dim) > 2:  # PyTorch hands it to matrix_norm
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    if dtype is not None:
        x = CP.cast(x, D.to_dtype(dtype))
    if x._dtype.category != _FLOAT:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{U.type_name(x._dtype)}")
    if p is None:
        p = 2
    if x._dtype in (D.float16, D.bfloat16):  # accumulated in float32 (x * x overflows float16), as PyTorch
        return CP.cast(norm(CP.cast(x, D.float32), p, dim, keepdim), x._dtype)
    dims = U.dims_arg(dim, x.dim(), "norm")
    if p == "fro" or p == 2:
        return dispatch(_NORM2, x._device, (x, dims, bool(keepdim)), (x,))
    if p == "nuc":
        raise NotImplementedError("norm(p='nuc') (nuclear norm) is not implemented")
    if (p == math.inf or p == -math.inf) and [d for d in dims if x._shape[d] == 0]:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor because the operation "
                           f"does not have an identity (input {U.desc(x)}, dim {dim})")
    if p == math.inf:
        return amax(UN.abs(x), dims, keepdim)
    if p == -math.inf:
        return amin(UN.abs(x), dims, keepdim)
    if p == 0:  # differentiable with zero gradients (as PyTorch)
        return PW.zero_grad_link(sum(CMP.ne(x, 0).to(x._dtype), dims, keepdim), x)
    if p == 1:
        return sum(UN.abs(x), dims, keepdim)
    s = sum(A.pow(UN.abs(x), float(p)), dims, keepdim)
    if float(p) > 0:  # a zero norm has gradient 0, as PyTorch's (not inf * 0)
        zero = CMP.eq(s, 0)
        return PW.where(zero, 0.0, A.pow(PW.where(zero, 1.0, s), 1.0 / float(p)))
    return A.pow(s, 1.0 / float(p))


# -- reducing to a shape (broadcast gradients) --------------------------------------------------------

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


# a Tensor method only (torch has no torch.sum_to_size)
@composite("sum_to_size", out=False)
def sum_to_size(input, *size):
    """``input`` summed over broadcast dimensions down to ``size`` (which ``input`` must
    broadcast from)."""
    shape = tuple(U.size_arg(size, "sum_to_size"))
    xs = input._shape
    if len(shape) > len(xs) or [s for s, n in zip(shape, xs[len(xs) - len(shape):]) if s not in (1, n)]:
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(xs)}}}.")
    if not shape:  # PyTorch's sum_to: a full sum (int64 for integers and bool), even of a 0-d tensor
        return sum(input)
    return sum_to_shape(input, shape, "sum_to_size")
