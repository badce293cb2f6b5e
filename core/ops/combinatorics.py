"""Sets and products of elements: isin, cartesian_prod, combinations, and the Vandermonde matrix
(``torch.vander``; ``torch.linalg.vander`` is in the linalg modules). All are written in other
ops."""
from __future__ import annotations

import itertools

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import comparison as CMP
from . import copy as CP
from . import creation as CR
from . import indexing as IX
from . import reduction as R
from . import shape as SH
from .declare import composite

__all__ = ["isin", "cartesian_prod", "combinations", "vander"]


# -- isin -------------------------------------------------------------------------------------------

@composite("isin", method=False)
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each of ``elements`` is in ``test_elements`` (either may be a number), compared in
    their promoted dtype; NaN is in nothing. ``invert`` negates the answer."""
    te, tt = isinstance(elements, Tensor), isinstance(test_elements, Tensor)
    if not te and not tt:
        raise TypeError("isin() received an invalid combination of arguments: expected at least one Tensor, got "
                        f"{type(elements).__name__} and {type(test_elements).__name__}")
    for v in (elements, test_elements):
        if not isinstance(v, Tensor) and not U.is_scalar(v):
            raise TypeError(f"isin(): expected a Tensor or a number, got {type(v).__name__}")
    ct = D.result_type(elements, test_elements)
    if any(v._dtype is D.bool if isinstance(v, Tensor) else isinstance(v, bool) for v in (elements, test_elements)):
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    dev = (elements if te else test_elements)._device
    e = CP.cast(elements.detach(), ct) if te else CR.tensor(elements, dtype=ct, device=dev)
    t = CP.cast(test_elements.detach(), ct) if tt else CR.tensor(test_elements, dtype=ct, device=dev)
    flat = IX.sort(t.reshape(-1)).values
    if flat.numel() == 0:
        hit = CR.zeros(e._shape, dtype=D.bool, device=dev)
    else:
        pos = IX.searchsorted(flat, e.reshape(-1)).clamp(max=flat.numel() - 1)
        hit = CMP.eq(IX.gather(flat, 0, pos), e.reshape(-1)).reshape(e._shape)
    return CMP.logical_not(hit) if invert else hit


# -- cartesian_prod, combinations -------------------------------------------------------------------

def _check_1d(tensors):
    for t in tensors:
        U.tensor_arg(t, "cartesian_prod", "tensors")
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._shape)}")


@composite("cartesian_prod", out=False, method=False)
def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors: one row per combination, the last tensor varying
    fastest (a single tensor is returned as is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _check_1d(tensors)
    if len(tensors) == 1:
        return tensors[0]
    if len({t._dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    grids = SH.meshgrid(*tensors, indexing="ij")
    return SH.stack([g.reshape(-1) for g in grids], 1)


@composite("combinations", out=False, method=False)
def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-``r`` combinations of the elements of a 1-D tensor, in lexicographic order of
    their positions (as ``itertools.combinations``, or ``combinations_with_replacement``)."""
    x = U.tensor_arg(input, "combinations")
    if x.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x._shape)}")
    r = int(r)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return CR.empty((0,), dtype=x._dtype, device=x._device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    flat = [i for c in pick(range(x._shape[0]), r) for i in c]
    idx = CR.tensor(flat, dtype=D.int64, device=x._device)
    return IX.index_select(x, 0, idx).reshape(-1, r)


# -- vander -----------------------------------------------------------------------------------------

@composite("vander", out=False, method=False)
def vander(x, N=None, increasing: bool = False):
    """The Vandermonde matrix of a 1-D tensor: columns ``x**(N-1), ..., x, 1`` (reversed when
    ``increasing``); integers and bool give int64."""
    x = U.tensor_arg(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = D.promote_types(x._dtype, D.int64)
    rows = x._shape[0]
    if n == 0:
        return CR.empty((rows, 0), dtype=dt, device=x._device)
    ones = CR.ones((rows, 1), dtype=dt, device=x._device)
    if n == 1:
        res = ones
    else:
        powers = R.cumprod(CP.cast(x, dt).unsqueeze(1).expand(rows, n - 1), 1)
        res = SH.cat([ones, powers], 1)
    return res if increasing else SH.flip(res, (1,))
