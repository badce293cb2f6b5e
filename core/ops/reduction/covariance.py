"""Covariance and correlation of variables (rows) over observations (columns): cov, with Bessel's
``correction`` and frequency and importance weights, and corrcoef; written in other ops with
PyTorch's formulas."""
from __future__ import annotations

import warnings

from ... import _dtype as D
from ..._tensor import Tensor
from .. import _args as U
from .. import comparison as CMP
from .. import linalg as LA
from .. import pointwise as PW
from .. import unary as UN
from ..declare import composite
from . import reductions as RD

__all__ = ["cov", "corrcoef"]

_CNAME = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}


def _weights(w, what, n, integral):
    if not isinstance(w, Tensor):
        raise TypeError(f"cov(): argument '{what}' must be Tensor, not {type(w).__name__}")
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {what} to have one or fewer dimensions but got {what} with {w.dim()} "
                           "dimensions")
    ok = w._dtype.category == D._INT if integral else w._dtype.category == D._FLOAT
    if not ok:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {what} to have {kind} dtype but got {what} with "
                           f"{U.type_name(w._dtype)} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {what} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if n and bool(CMP.lt(RD.amin(w), 0)):
        raise RuntimeError(f"cov(): {what} cannot be negative")
    return w


@composite("cov")
def cov(input, *, correction: int = 1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (a 1-D input is one
    variable), weighted by ``fweights`` (integer counts) and ``aweights`` (importances), with
    ``correction`` (1: Bessel's) subtracted from the observations' weight; 0-d for one variable."""
    x = U.tensor_arg(input, "cov")
    if x.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {x.dim()} "
                           "dimensions")
    if x._dtype is D.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if isinstance(correction, bool) or not isinstance(correction, int):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
    obs = x if x.dim() == 2 else x.reshape(1, -1)
    n = obs._shape[1]
    w = None
    if fweights is not None:
        w = _weights(fweights, "fweights", n, True)
    aw = None
    if aweights is not None:
        aw = _weights(aweights, "aweights", n, False)
        w = aw if w is None else w * aw
    if w is not None:
        w_sum = RD.sum(w)
        if not bool(CMP.ne(w_sum, 0)):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = RD.sum(obs * w, 1) / w_sum
    else:
        w_sum = n
        avg = RD.sum(obs, 1) / n
    if aw is not None and correction != 0:
        norm = w_sum - correction * RD.sum(w * aw) / w_sum
    else:
        norm = w_sum - correction
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=3)
        norm = norm * 0 + 0.0  # +0: the result's infinities take the covariance's sign
    centred = obs - avg.unsqueeze(1)
    other = centred * w if w is not None else centred
    if other._dtype is not centred._dtype:  # PyTorch's mm refuses the mixed dtypes weights can bring
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CNAME[centred._dtype.name]} != "
                           f"{_CNAME[other._dtype.name]}")
    c = LA.matmul(centred, other.t())
    return (c / norm).squeeze()


@composite("corrcoef")
def corrcoef(input):
    """Pearson's correlation coefficients of the variables in the rows of ``input`` (clipped to
    [-1, 1]); NaN where a variable is constant."""
    x = U.tensor_arg(input, "corrcoef")
    if x.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{x.dim()} dimensions")
    c = cov(x)
    if c.dim() == 0:
        return c / c
    sd = UN.sqrt(c.diagonal())
    c = c / sd.reshape(-1, 1)
    c = c / sd.reshape(1, -1)
    return PW.clamp(c, -1, 1)
