"""NAdam: Adam with Nesterov momentum (Dozat 2016), with PyTorch's momentum-decay schedule."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _scalar_state, _step0, _use_grad, _zeros

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """``NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
    differentiable=False)``.

    ``mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay))``; the step combines the current gradient
    weighted by ``(1 - mu_t) / (1 - prod mu)`` and the first moment weighted by ``mu_{t+1} /
    (1 - prod mu * mu_{t+1})``, both divided by ``sqrt(v / (1 - beta2^t)) + eps``.
    ``decoupled_weight_decay`` applies the decay to ``p`` directly (NAdamW). State: ``step``,
    ``mu_product`` (0-d tensors), ``exp_avg``, ``exp_avg_sq``.
    """

    _state_shape_keys = ("exp_avg", "exp_avg_sq")
    _scalar_state_keys = ("step", "mu_product")

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        if isinstance(betas, list):
            betas = tuple(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group, "momentum_decay")

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, s = self._gather(group, {"step": _step0, "mu_product": lambda p: _scalar_state(1.0, p),
                                                    "exp_avg": _zeros, "exp_avg_sq": _zeros})
            exp_avgs, exp_avg_sqs, mu_products, steps = s["exp_avg"], s["exp_avg_sq"], s["mu_product"], s["step"]
            if params:
                beta1, beta2 = group["betas"]
                self._update("nadam", group, (params, grads, exp_avgs, exp_avg_sqs, mu_products, steps), group["lr"],
                             beta1, beta2, group["weight_decay"], group["momentum_decay"], group["eps"],
                             group["decoupled_weight_decay"], group["maximize"])
        return loss
