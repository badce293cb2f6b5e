"""Rprop (Riedmiller & Braun 1993): sign-based steps with per-element adaptive step sizes."""
from __future__ import annotations

from ..ops.creation import full_like

from . import _checks
from .optimizer import Optimizer, _step0, _to_float, _use_grad, _zeros

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """``Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
    foreach=None, maximize=False, differentiable=False)``.

    Each element's step size (starting at ``lr``) is multiplied by ``etaplus`` while its gradient
    keeps its sign and by ``etaminus`` when the sign flips (that element then skips the step),
    clamped to ``step_sizes``; ``p -= sign(g) * step_size``. State: ``step``, ``prev``,
    ``step_size``.
    """

    _state_shape_keys = ("prev", "step_size")

    def __init__(self, params, lr: float = 1e-2, etas: tuple = (0.5, 1.2), step_sizes: tuple = (1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)
        if "etas" in group:
            etas = group["etas"]
            if not 0.0 < _checks._number("etas[0]", etas[0]) < 1.0 < _checks._number("etas[1]", etas[1]):
                raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        if "step_sizes" in group:
            lo, hi = group["step_sizes"]
            if not 0.0 <= _checks._number("step_sizes[0]", lo) <= _checks._number("step_sizes[1]", hi):
                raise ValueError(f"Invalid step_sizes: {lo}, {hi} (expected 0 <= min <= max)")

    @_use_grad
    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _to_float(group["lr"])
            params, grads, s = self._gather(group, {"step": _step0, "prev": _zeros,
                                                    "step_size": lambda p: full_like(p, lr).detach()})
            prevs, step_sizes, steps = s["prev"], s["step_size"], s["step"]
            if params:
                etaminus, etaplus = group["etas"]
                lo, hi = group["step_sizes"]
                self._update("rprop", group, (params, grads, prevs, step_sizes, steps), etaminus, etaplus, lo, hi,
                             group["maximize"])
        return loss
