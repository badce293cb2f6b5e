"""Argument helpers shared by the functional forms."""
from __future__ import annotations

import collections.abc
import warnings

from ..._tensor import Tensor
from ...ops._args import desc


def ntuple(x, n: int, name: str = "argument", op: str = "") -> tuple:
    """``x`` (an int or a sequence of ``n`` ints) as a tuple of ``n`` ints."""
    if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
        t = tuple(int(v) for v in x)
        if len(t) == 1 and n > 1:
            t = t * n
        if len(t) != n:
            raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} values to match "
                               f"the spatial dimensions, but got {name}={list(t)}")
        return t
    return (int(x),) * n


def check_tensor(x, op: str, name: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's translation of the deprecated ``size_average`` / ``reduce`` flags."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='mean' (or 'sum', 'none') "
                  "instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    if reduce:
        return "sum"
    return "none"


def reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


__all__ = ["ntuple", "check_tensor", "legacy_reduction", "reduce_loss", "check_reduction", "desc"]
