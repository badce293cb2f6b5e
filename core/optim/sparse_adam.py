"""SparseAdam: Adam restricted to the entries a sparse gradient holds, as PyTorch's
``torch.optim.SparseAdam`` (for dense parameters with sparse COO gradients, such as the weight of
``nn.Embedding(sparse=True)``)."""
from __future__ import annotations

import math

from .. import ops as _ops
from .._tensor import Tensor
from .optimizer import Optimizer, _use_grad

__all__ = ["SparseAdam"]


def _check_settings(lr, betas, eps) -> None:
    """ValueError (PyTorch's messages) for a non-positive lr or eps, or a beta outside [0, 1)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not lr > 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not eps > 0.0:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


class SparseAdam(Optimizer):
    """``SparseAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False)``.

    Per step, at the rows ``i`` the coalesced gradient holds (values ``g``):
    ``m[i] = lerp(m[i], g, 1 - beta1)``, ``v[i] = lerp(v[i], g^2, 1 - beta2)``,
    ``p[i] -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m[i] / (sqrt(v[i]) + eps)``; other entries of
    ``p``, ``m`` and ``v`` are untouched. State: ``step`` (a python int, as PyTorch's),
    ``exp_avg``, ``exp_avg_sq``. A dense gradient raises RuntimeError.
    """

    def __init__(self, params, lr=1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        _check_settings(lr, betas, eps)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"])
                         if p.is_sparse]
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        complex_params = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"])
                          if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = _ops.zeros_like(p)
                    state["exp_avg_sq"] = _ops.zeros_like(p)
                state["step"] += 1
                _update(p, p.grad, state, beta1, beta2, float(group["lr"]), group["eps"], group["maximize"])
        return loss


def _update(p, grad, state, beta1, beta2, lr, eps, maximize) -> None:
    grad = (-grad if maximize else grad).coalesce()
    values = grad._values()
    if values.numel() == 0:
        return
    where = tuple(grad._indices())  # one index tensor per sparse dim: unique positions once coalesced
    exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], state["step"]
    old_avg = exp_avg[where]
    avg_update = (values - old_avg) * (1 - beta1)
    exp_avg.index_put_(where, avg_update, accumulate=True)
    old_sq = exp_avg_sq[where]
    sq_update = (values * values - old_sq) * (1 - beta2)
    exp_avg_sq.index_put_(where, sq_update, accumulate=True)
    numer = avg_update + old_avg
    denom = (sq_update + old_sq).sqrt_().add_(eps)
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    p.index_put_(where, -step_size * (numer / denom), accumulate=True)
