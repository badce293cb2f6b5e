"""Helpers shared by the distributions: broadcasting parameters, probabilities and logits,
cached properties, packing lower triangles."""
from __future__ import annotations

import numbers

from .. import _dtype as _D
from .. import ops as _ops
from .._tensor import Tensor
from ..autograd import enable_grad

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

#: the Euler-Mascheroni constant
euler_constant = 0.57721566490153286061


def broadcast_all(*values):
    """Tensors of one broadcast shape from tensors and numbers (numbers take the tensors'
    dtype and device, else the default dtype)."""
    for v in values:
        if not isinstance(v, (Tensor, numbers.Number)):
            raise ValueError("Input arguments must all be instances of Number, "
                             "torch.Tensor or objects implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    if like is None:
        dt = _D.get_default_dtype()
        return tuple(_ops.tensor(float(v), dtype=dt) for v in values)
    made = [v if isinstance(v, Tensor) else _ops.tensor(v, dtype=like.dtype, device=like.device) for v in values]
    return tuple(_ops.broadcast_tensors(*made))


def _eps(t: Tensor) -> float:
    return _D.finfo(t.dtype).eps


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` kept eps away from 0 and 1."""
    e = _eps(probs)
    return probs.clamp(min=e, max=1 - e)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: a sigmoid for binary events, else a softmax over the last dim."""
    return logits.sigmoid() if is_binary else _ops.softmax(logits, -1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (log-odds when binary, log-probabilities otherwise)."""
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


class lazy_property:
    """A property computed on first access and stored in the instance's ``__dict__``
    (read on the class, it returns itself, so that introspection still sees it)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def _tril_index(n: int, diag: int, device):
    return _ops.tril_indices(n, n, offset=diag, device=device)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (from diagonal ``diag``) of the last two dims, row by row."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_index(n, diag, mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: a square matrix with zeros above ``diag``."""
    m = vec.shape[-1]
    # m = n (n + 1) / 2 + diag n - ... : solve the triangle count for n
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)
    rows, cols = _tril_index(n, diag, vec.device)
    if rows.numel() != m:
        raise ValueError(f"cannot form a lower triangular matrix from {m} entries")
    mat = vec.new_zeros(vec.shape[:-1] + (n, n))
    mat[..., rows, cols] = vec
    return mat
