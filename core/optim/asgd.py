"""Averaged SGD (Polyak & Juditsky 1992) with PyTorch's step-size schedule."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _scalar_state, _step0, _to_float, _use_grad, _zeros

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
    maximize=False, differentiable=False, capturable=False)``.

    Per step: ``p *= 1 - lambd eta``, ``p -= eta g``; the average ``ax`` follows ``p`` exactly
    until step ``t0`` and then averages (``ax += mu (p - ax)``); afterwards ``eta = lr / (1 + lambd
    lr t)^alpha`` and ``mu = 1 / max(1, t - t0)``. State: ``step``, ``eta``, ``mu`` (0-d tensors),
    ``ax``.
    """

    _state_shape_keys = ("ax",)
    _scalar_state_keys = ("step", "eta", "mu")

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _to_float(group["lr"])
            params, grads, s = self._gather(group, {"step": _step0, "eta": lambda p: _scalar_state(lr, p),
                                                    "mu": lambda p: _scalar_state(1.0, p), "ax": _zeros})
            axs, mus, etas, steps = s["ax"], s["mu"], s["eta"], s["step"]
            if params:
                self._update("asgd", group, (params, grads, axs, mus, etas, steps), group["lr"], group["lambd"],
                             group["alpha"], group["t0"], group["weight_decay"], group["maximize"])
        return loss
