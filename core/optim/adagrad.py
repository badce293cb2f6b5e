"""Adagrad (Duchi et al. 2011): per-element step sizes from the sum of squared gradients."""
from __future__ import annotations

from ..ops.creation import full_like

from . import _checks
from .optimizer import Optimizer, _check_fused, _scalar_state, _use_grad

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None)``.

    Per step: ``s += g^2``, ``p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)``. State
    (created for every parameter at construction, as PyTorch): ``step``, ``sum``. Unlike PyTorch,
    a group's own ``initial_accumulator_value`` is honoured (PyTorch uses the constructor's).
    """

    _state_shape_keys = ("sum",)

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused("Adagrad", fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group) -> dict:
        state = self.state[p]
        state["step"] = _scalar_state(0.0, p)
        state["sum"] = full_like(p, group["initial_accumulator_value"]).detach()
        return state

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group, "lr_decay")
        if "initial_accumulator_value" in group:
            _checks.nonneg("initial_accumulator_value", group["initial_accumulator_value"])

    def share_memory(self) -> None:
        """Accepted for compatibility (ember's cpu tensors are not shared between processes)."""

    def _dense_grad(self, g, group):
        """A sparse gradient is applied as its dense equivalent: the entries it does not hold add
        nothing to ``sum`` and move nothing, as PyTorch's sparse update."""
        if g.is_sparse:
            if group["weight_decay"] != 0:
                raise RuntimeError("weight_decay option is not compatible with sparse gradients")
            return g.to_dense()
        return g

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, sums, steps = [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                params.append(p)
                grads.append(self._dense_grad(p.grad, group))
                state = self.state[p]
                if len(state) == 0:
                    state = self._init_state(p, group)
                sums.append(state["sum"])
                steps.append(state["step"])
            if params:
                self._update("adagrad", group, (params, grads, sums, steps), group["lr"], group["weight_decay"],
                             group["lr_decay"], group["eps"], group["maximize"])
        return loss
