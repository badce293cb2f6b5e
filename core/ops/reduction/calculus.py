"""Finite differences and integration along a dim: diff, trapezoid (trapz) and
cumulative_trapezoid, written in slices, sums and cumulative sums with PyTorch's formulas (so that
dtypes and rounding follow its)."""
from __future__ import annotations

import numbers

from ... import _dtype as D
from ..._tensor import Tensor
from .. import _args as U
from .. import comparison as CMP
from .. import creation as CR
from .. import shape as SH
from .. import views as V
from ..declare import composite
from . import reductions as RD
from . import scans as SC

__all__ = ["diff", "trapezoid", "trapz", "cumulative_trapezoid"]


# -- diff -------------------------------------------------------------------------------------------

def _diff_operand(x, t, d, what):
    if t is None:
        return None
    if not isinstance(t, Tensor):
        raise TypeError(f"diff(): argument '{what}' must be Tensor, not {type(t).__name__}")
    if t.dim() != x.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(x.dim()):
        if i != d and t._shape[i] != x._shape[i]:
            raise RuntimeError("diff expects the shape of tensor to prepend or append to match that of input except "
                               f"along the differencing dimension; input.size({i}) = {x._shape[i]}, but got "
                               f"tensor.size({i}) = {t._shape[i]}")
    return t


@composite("diff")
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``logical_xor`` of neighbours for bool),
    after concatenating ``prepend`` and ``append`` along it."""
    x = U.tensor_arg(input, "diff")
    if x.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = U.wrap_dim(dim, x.dim(), "diff")
    pre, post = _diff_operand(x, prepend, d, "prepend"), _diff_operand(x, append, d, "append")
    if n == 0:
        return V.alias(x)
    if pre is not None or post is not None:
        x = SH.cat([t for t in (pre, x, post) if t is not None], d)
    size = x._shape[d]
    r = x
    for _ in range(min(n, size)):
        m = r._shape[d] - 1
        hi, lo = r.narrow(d, 1, m), r.narrow(d, 0, m)
        r = CMP.logical_xor(hi, lo) if r._dtype is D.bool else hi - lo
    return r


# -- trapezoid, trapz, cumulative_trapezoid --------------------------------------------------------------

def _dx_scalar(dx, op):
    if isinstance(dx, bool) or not isinstance(dx, numbers.Real):
        raise RuntimeError(f"{op}: Currently, we only support dx as a real number.")
    return float(dx)


def _x_spacing(y, x, d, op):
    """The spacings ``x[1:] - x[:-1]`` along ``d``, shaped to broadcast with ``y``'s slices."""
    if y._dtype is D.bool or x._dtype is D.bool:
        raise RuntimeError(f"{op}: received a bool input for `x` or `y`, but bool is not supported")
    if x.dim() == 1:
        if x._shape[0] != y._shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        xv = x.reshape(tuple(x._shape[0] if i == d else 1 for i in range(y.dim())))
    elif x.dim() < y.dim():
        xv = x.reshape((1,) * (y.dim() - x.dim()) + x._shape)
    else:
        xv = x
    m = max(xv._shape[d] - 1, 0)
    return xv.narrow(d, min(1, xv._shape[d]), m) - xv.narrow(d, 0, m)


def _args(op, y, x, dx):
    yt = U.tensor_arg(y, op, "y")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' (position 2) must be Tensor, not {type(x).__name__}")
    if x is not None and dx is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: x and dx are exclusive")
    return yt


def _pairs(y, d):
    m = max(y._shape[d] - 1, 0)
    return y.narrow(d, min(1, y._shape[d]), m) + y.narrow(d, 0, m)


@composite("trapezoid", method=False)
def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, at sample points ``x`` (a
    tensor) or spaced ``dx`` apart (1 by default); 0 for no samples."""
    yt = _args("trapezoid", y, x, dx)
    if yt.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = U.wrap_dim(dim, yt.dim(), "trapezoid")
    if yt._shape[d] == 0:
        return CR.zeros(tuple(s for i, s in enumerate(yt._shape) if i != d), dtype=yt._dtype, device=yt._device)
    if x is None:
        step = _dx_scalar(1 if dx is None else dx, "trapezoid")
        if yt._dtype is D.bool:
            raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
        ends = yt.select(d, 0) + yt.select(d, -1)
        return (RD.sum(yt, d) - ends * 0.5) * step
    spacing = _x_spacing(yt, x, d, "trapezoid")
    return RD.sum(spacing * _pairs(yt, d), d) / 2.0


@composite("trapz", method=False)
def trapz(y, x=None, *, dx=None, dim: int = -1):
    """:func:`trapezoid` (its older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@composite("cumulative_trapezoid", method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule (one element fewer
    than ``y`` along ``dim``)."""
    yt = _args("cumulative_trapezoid", y, x, dx)
    if x is None and yt._dtype is D.bool:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
    if yt.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = U.wrap_dim(dim, yt.dim(), "cumulative_trapezoid")
    if x is None:
        if yt._dtype is D.bool:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
        step = _dx_scalar(1 if dx is None else dx, "cumulative_trapezoid")
        return SC.cumsum(step / 2.0 * _pairs(yt, d), d)
    spacing = _x_spacing(yt, x, d, "cumulative_trapezoid")
    return SC.cumsum((spacing * _pairs(yt, d)) / 2.0, d)
