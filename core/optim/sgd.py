"""Stochastic gradient descent, optionally with momentum (PyTorch's formulation: the buffer
starts as the first gradient and ``lr`` multiplies the whole step)."""
from __future__ import annotations

from ..ops.creation import empty_like

from . import _checks
from .optimizer import Optimizer, _check_fused, _use_grad

__all__ = ["SGD"]


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
    maximize=False, foreach=None, differentiable=False, fused=None)``.

    Per step: ``g = grad (+ weight_decay * p)``; with momentum ``b = momentum * b + (1 - dampening)
    * g`` (``b = g`` on the first step) and ``g = g + momentum * b`` (nesterov) or ``g = b``;
    then ``p -= lr * g``. State: ``momentum_buffer`` (when momentum is not 0).

    Example::

        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    _state_shape_keys = ("momentum_buffer",)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused("SGD", fused, foreach, differentiable)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group, "momentum")
        if group.get("nesterov") and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _dense_grad(self, g, group):
        """A sparse gradient (``nn.Embedding(sparse=True)``) is applied as its dense equivalent (the
        same values as PyTorch's sparse update; a momentum buffer is dense)."""
        if g.is_sparse:
            if group.get("fused"):
                raise RuntimeError("`_fused_sgd` does not support sparse gradients")
            if group["weight_decay"] != 0:  # PyTorch adds the dense decay term to the sparse gradient: refused
                raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
            return g.to_dense()
        return g

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, bufs, first = [], [], [], []
            momentum = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                params.append(p)
                grads.append(self._dense_grad(p.grad, group))
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    first.append(buf is None)
                    if buf is None:
                        buf = state["momentum_buffer"] = empty_like(p).detach()
                    bufs.append(buf)
            if params:
                self._update("sgd", group, (params, grads, bufs, first), group["lr"], group["weight_decay"], momentum,
                             group["dampening"], group["nesterov"], group["maximize"])
        return loss
