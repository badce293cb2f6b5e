"""Adam (Kingma & Ba 2014) with amsgrad, and with decoupled weight decay (which is AdamW)."""
from __future__ import annotations

from . import _checks
from .optimizer import Optimizer, _check_fused, _step0, _use_grad, _zeros

__all__ = ["Adam"]


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
    decoupled_weight_decay=False)``.

    Per step ``t``: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g^2`` (amsgrad keeps
    ``v_max = max(v_max, v)`` and uses it), ``p -= lr / (1 - beta1^t) * m / (sqrt(v) /
    sqrt(1 - beta2^t) + eps)``. ``weight_decay`` adds ``wd * p`` to the gradient, or with
    ``decoupled_weight_decay`` multiplies ``p`` by ``1 - lr * wd`` first (AdamW). State: ``step``
    (0-d tensor), ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq`` (amsgrad). ``capturable`` is
    accepted for compatibility (ember has no graph capture; the values are the same).
    """

    _sparse_grad_error = "Adam does not support sparse gradients, please consider SparseAdam instead"
    _state_shape_keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        if isinstance(betas, list):
            betas = tuple(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(type(self).__name__, fused, foreach, differentiable)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            amsgrad = group["amsgrad"]
            init = {"step": _step0, "exp_avg": _zeros, "exp_avg_sq": _zeros}
            if amsgrad:
                init["max_exp_avg_sq"] = _zeros
            params, grads, s = self._gather(group, init)
            exp_avgs, exp_avg_sqs, steps = s["exp_avg"], s["exp_avg_sq"], s["step"]
            max_sqs = s.get("max_exp_avg_sq", [])
            if params:
                beta1, beta2 = group["betas"]
                self._update("adam", group, (params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps), group["lr"],
                             beta1, beta2, group["weight_decay"], group["eps"], amsgrad, group["maximize"],
                             group["decoupled_weight_decay"])
        return loss
