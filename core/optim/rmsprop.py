"""RMSprop (Hinton's lecture 6e), optionally centered and with momentum."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _step0, _use_grad, _zeros

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    capturable=False, foreach=None, maximize=False, differentiable=False)``.

    Per step: ``v = alpha v + (1 - alpha) g^2``; centered also tracks ``gbar = lerp(gbar, g,
    1 - alpha)`` and uses ``v - gbar^2``; ``avg = sqrt(...) + eps``; with momentum ``b = momentum b
    + g / avg`` and ``p -= lr b``, else ``p -= lr g / avg``. State: ``step``, ``square_avg``,
    ``momentum_buffer`` (momentum > 0), ``grad_avg`` (centered).
    """

    _state_shape_keys = ("square_avg", "momentum_buffer", "grad_avg")

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group, "momentum", "alpha")

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            momentum, centered = group["momentum"], group["centered"]
            init = {"step": _step0, "square_avg": _zeros}
            if momentum > 0:
                init["momentum_buffer"] = _zeros
            if centered:
                init["grad_avg"] = _zeros
            params, grads, s = self._gather(group, init)
            square_avgs, steps = s["square_avg"], s["step"]
            bufs, grad_avgs = s.get("momentum_buffer", []), s.get("grad_avg", [])
            if params:
                self._update("rmsprop", group, (params, grads, square_avgs, grad_avgs, bufs, steps), group["lr"],
                             group["alpha"], group["eps"], group["weight_decay"], momentum, centered,
                             group["maximize"])
        return loss
