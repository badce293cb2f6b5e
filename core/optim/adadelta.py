"""Adadelta (Zeiler 2012): step sizes from running averages of squared gradients and updates."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _step0, _use_grad, _zeros

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
    capturable=False, maximize=False, differentiable=False)``.

    Per step: ``v = rho v + (1 - rho) g^2``, ``delta = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho u + (1 - rho) delta^2``, ``p -= lr delta``. State: ``step``, ``square_avg``,
    ``acc_delta``.
    """

    _state_shape_keys = ("square_avg", "acc_delta")

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)
        if "rho" in group and not 0.0 <= _checks._number("rho", group["rho"]) <= 1.0:
            raise ValueError(f"Invalid rho value: {group['rho']}")

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, s = self._gather(group, {"step": _step0, "square_avg": _zeros, "acc_delta": _zeros})
            if params:
                self._update("adadelta", group, (params, grads, s["square_avg"], s["acc_delta"], s["step"]),
                             group["lr"], group["rho"], group["eps"], group["weight_decay"], group["maximize"])
        return loss
