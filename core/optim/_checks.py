"""Hyperparameter checks shared by the optimizers, raising PyTorch's ValueErrors (and a
TypeError naming the option for a value that is not a number at all)."""
from __future__ import annotations

import numbers

from ember._tensor import Tensor
from .optimizer import required


def _number(name: str, value):
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"Tensor {name} must be 1-element")
        return value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"optimizer option '{name}' must be a real number, got {type(value).__name__} {value!r}")
    return value


def lr(value) -> None:
    if not 0.0 <= _number("lr", value):
        raise ValueError(f"Invalid learning rate: {value}")


def nonneg(name: str, value, label: str | None = None) -> None:
    """``Invalid <label> value: v`` unless ``v >= 0`` (NaN is refused too)."""
    if not 0.0 <= _number(name, value):
        raise ValueError(f"Invalid {label or name} value: {value}")


def betas(value) -> None:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {value!r}")
    for i, b in enumerate(value):
        if not 0.0 <= _number(f"betas[{i}]", b) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")


def common(group: dict, *names: str) -> None:
    """Check ``lr``, ``eps``, ``weight_decay`` and ``betas`` when ``group`` has them (values
    still ``required`` are checked once a group gives them)."""
    group = {k: v for k, v in group.items() if v is not required}
    if "lr" in group:
        lr(group["lr"])
    if "eps" in group:
        nonneg("eps", group["eps"], "epsilon")
    if "betas" in group:
        betas(group["betas"])
    if "weight_decay" in group:
        nonneg("weight_decay", group["weight_decay"])
    for n in names:
        if n in group:
            nonneg(n, group[n])
