"""Adafactor (Shazeer & Stern 2018), as PyTorch's ``torch.optim.Adafactor``."""
from __future__ import annotations


from .. import _dtype as D
from .. import ops as _ops
from .._tensor import Tensor
from .optimizer import Optimizer, _step0, _use_grad

__all__ = ["Adafactor"]


def _check_settings(lr, beta2_decay, eps, d, weight_decay) -> None:
    """ValueError, with PyTorch's messages, for hyper-parameters outside their ranges."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    eps1, eps2 = eps
    problems = [(not lr >= 0.0, f"Learning rate should be >= 0 but is: {lr}"),
                (not beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                (eps1 is not None and not eps1 >= 0.0, f"epsilon1 should be >= 0 but is: {eps1}"),
                (not eps2 >= 0.0, f"epsilon2 should be >= 0 but is: {eps2}"),
                (not d >= 1.0, f"Clipping threshold d should be >= 1 but is: {d}"),
                (not weight_decay >= 0.0, f"weight_decay should be >= 0 but is: {weight_decay}")]
    for failed, message in problems:
        if failed:
            raise ValueError(message)


class Adafactor(Optimizer):
    """``Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
    foreach=None, maximize=False)``.

    Per step ``t``: ``beta2_t = t ** beta2_decay``, ``rho = min(lr, 1/sqrt(t))``,
    ``alpha = max(eps2, RMS(p)) * rho``; decoupled weight decay ``p *= 1 - lr * weight_decay``; a
    matrix (or higher) keeps row and column factors of the second moment (``row_var``,
    ``col_var``), a vector its full ``variance``; ``update = g / sqrt(max(v_hat, eps1^2))`` clipped
    to RMS ``d``; ``p -= alpha * update``. ``eps1`` None means the dtype's machine epsilon.
    Written per parameter in ember ops (no fused update op; PyTorch's foreach path is the same
    arithmetic).
    """

    def __init__(self, params, lr=1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach=None, maximize: bool = False) -> None:
        _check_settings(lr, beta2_decay, eps, d, weight_decay)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._step_one(group, p)
        return loss

    def _step_one(self, group, p) -> None:
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        if p.grad.is_sparse:
            raise RuntimeError("Adafactor does not support sparse gradients")
        grad = -p.grad if group["maximize"] else p.grad
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _step0(p)
            if grad.dim() > 1:
                state["row_var"] = grad.new_zeros(list(grad.shape[:-1]) + [1])
                state["col_var"] = grad.new_zeros(list(grad.shape[:-2]) + [1, grad.shape[-1]])
            else:
                state["variance"] = _ops.zeros_like(grad)
        lr = float(group["lr"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = D.finfo(p.dtype).eps
        state["step"] += 1
        t = state["step"].item()
        one_minus_beta2_t = t ** group["beta2_decay"]
        rho_t = min(lr, 1 / (t ** 0.5))
        alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
        if group["weight_decay"] != 0:
            p.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(_ops.norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1)), one_minus_beta2_t)
            col_var.lerp_(_ops.norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2)), one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance = state["variance"]
            variance.lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
        p.add_(update, alpha=-alpha / denom)


