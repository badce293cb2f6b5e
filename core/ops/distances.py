"""Distances and norms between rows: cdist (the p-norm distance between each pair of rows of two
batched collections) and renorm (rows rescaled to a maximum p-norm).

``cdist`` is a kernel op (a backend may implement it natively) with PyTorch's backward, whose
gradient is 0 where a distance is 0; ``renorm`` is written in other ops.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from . import _args as U
from . import arithmetic as A
from . import comparison as CMP
from . import creation as CR
from . import pointwise as PW
from . import reduction as R
from . import unary as UN
from .declare import composite, defop

__all__ = ["cdist", "renorm", "renorm_"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


# -- cdist ------------------------------------------------------------------------------------------

def _cdist_decomp(x1, x2, p):
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    if d._shape[-1] == 0:
        return CR.zeros(d._shape[:-1], dtype=x1._dtype, device=x1._device)
    if p == 0:  # the count of differing coordinates; NaN propagates, as PyTorch's kernel
        return R.sum(PW.where(CMP.isnan(d), math.nan, CMP.ne(d, 0).to(d._dtype)), -1)
    return R.norm(d, p, -1)


def _cdist_bw(ctx, g):
    x1, x2, p = ctx.args
    dist = ctx.out.unsqueeze(-1)  # (..., P, R, 1)
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    g = g.unsqueeze(-1)
    zero = CMP.eq(dist, 0)
    if p == 0 or d._shape[-1] == 0:
        gd = A.mul(d, 0)
    elif p == 1:
        gd = UN.sign(d) * g
    elif p == 2:
        gd = PW.where(zero, 0.0, g * d / PW.where(zero, 1.0, dist))
    elif p == math.inf:
        gd = UN.sign(d) * CMP.eq(UN.abs(d), dist).to(d._dtype) * g
    elif p < 1:
        bad = CMP.logical_or(zero, CMP.eq(d, 0))
        val = UN.sign(d) * A.pow(PW.where(bad, 1.0, UN.abs(d)), p - 1) * g / A.pow(PW.where(zero, 1.0, dist), p - 1)
        gd = PW.where(bad, 0.0, val)
    else:
        val = d * A.pow(UN.abs(d), p - 2) * g / A.pow(PW.where(zero, 1.0, dist), p - 1)
        gd = PW.where(zero, 0.0, val)
    g1 = R.sum_to_shape(R.sum(gd, -2), x1._shape, "cdist") if ctx.needs_input_grad[0] else None
    g2 = R.sum_to_shape(-R.sum(gd, -3), x2._shape, "cdist") if ctx.needs_input_grad[1] else None
    return g1, g2


@defop("cdist", decomposition=_cdist_decomp, backward=_cdist_bw, save_output=True, out=False, method=False,
       group="reduce")
def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M): (..., P, R), batch dims broadcast. ember always takes the differences (no matrix
    product shortcut for p=2, whichever ``compute_mode``)."""
    a = U.tensor_arg(x1, "cdist", "x1")
    b = U.tensor_arg(x2, "cdist", "x2", 2)
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, t in (("X1", a), ("X2", b)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    if a._shape[-1] != b._shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a._shape[-1]} X2: {b._shape[-1]}")
    for name, t in (("X1", a), ("X2", b)):
        if t._dtype.category != D._FLOAT:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {U.type_name(t._dtype)}")
    p = float(p)
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = U.broadcast_shapes(a._shape[:-2], b._shape[:-2], "cdist")
    if a._shape[-2] == 0 or b._shape[-2] == 0 or 0 in batch or a._shape[-1] == 0:
        b = b.to(a._dtype)  # an empty result or no columns: PyTorch answers before its kernel's dtype checks
    elif a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {U.type_name(a._dtype)} but found {U.type_name(b._dtype)}")
    elif a._dtype in (D.float16, D.bfloat16):
        raise U.dtype_not_implemented("cdist", a._dtype)
    dev = U.common_device("cdist", a, b)
    return dev, (a, b, p), (a, b)


# -- renorm -----------------------------------------------------------------------------------------

@composite("renorm", inplace=True)
def renorm(input, p, dim: int, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm``
    (by ``maxnorm / (norm + 1e-7)``, as PyTorch); the others are unchanged."""
    x = U.tensor_arg(input, "renorm")
    p, maxnorm = float(p), float(maxnorm)
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if x.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.dim()} dimensions")
    d = U.wrap_dim(dim, x.dim(), "renorm")
    dims = tuple(i for i in range(x.dim()) if i != d)
    low = x._dtype in (D.float16, D.bfloat16)  # the norm and the scaling in float32, as PyTorch
    n = R.norm(x, p, dims, keepdim=True, dtype=D.float32 if low else None)
    factor = PW.where(CMP.gt(n, maxnorm), maxnorm / (n + 1e-7), 1.0)
    return (x.to(D.float32) * factor).to(x._dtype) if low else x * factor


renorm_ = renorm.inplace
