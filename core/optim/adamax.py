"""Adamax: the infinity-norm variant of Adam (Kingma & Ba 2014, section 7)."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _step0, _use_grad, _zeros

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
    maximize=False, differentiable=False, capturable=False)``.

    Per step: ``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 u, |g| + eps)``,
    ``p -= lr / (1 - beta1^t) * m / u``. State: ``step``, ``exp_avg``, ``exp_inf``.
    """

    _state_shape_keys = ("exp_avg", "exp_inf")

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if isinstance(betas, list):
            betas = tuple(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, s = self._gather(group, {"step": _step0, "exp_avg": _zeros, "exp_inf": _zeros})
            if params:
                beta1, beta2 = group["betas"]
                self._update("adamax", group, (params, grads, s["exp_avg"], s["exp_inf"], s["step"]), group["lr"],
                             beta1, beta2,
                             group["weight_decay"], group["eps"], group["maximize"])
        return loss
