"""RAdam: Adam with a rectified adaptive learning rate (Liu et al. 2019)."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _step0, _use_grad, _zeros

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """``RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
    differentiable=False)``.

    With ``rho_inf = 2 / (1 - beta2) - 1`` and ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``,
    the step is ``lr * m_hat * r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps)`` when ``rho_t > 5``
    (``r_t`` the variance rectification), else plain momentum ``lr * m_hat``. State: ``step``,
    ``exp_avg``, ``exp_avg_sq``.
    """

    _state_shape_keys = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        if isinstance(betas, list):
            betas = tuple(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, s = self._gather(group, {"step": _step0, "exp_avg": _zeros, "exp_avg_sq": _zeros})
            if params:
                beta1, beta2 = group["betas"]
                self._update("radam", group, (params, grads, s["exp_avg"], s["exp_avg_sq"], s["step"]), group["lr"],
                             beta1, beta2,
                             group["weight_decay"], group["eps"], group["decoupled_weight_decay"], group["maximize"])
        return loss
