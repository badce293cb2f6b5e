"""Cosine annealing (Loshchilov & Hutter, SGDR), without and with warm restarts."""
from __future__ import annotations

import math

from ember.optim.optimizer import Optimizer

from ._base import LRScheduler, _within_step, group_values, set_group_value, warn_get_lr_outside_step


def _half_cosine(t, period):
    """``(1 + cos(pi t / period)) / 2``: 1 at t = 0, 0 at t = period."""
    return (1 + math.cos(math.pi * t / period)) / 2


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``, computed
    recursively from the current ``lr`` (so it composes with other schedulers, as in PyTorch);
    past ``T_max`` it rises again (a cosine of period ``2 T_max``)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        warn_get_lr_outside_step(self)
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:  # resumed at a later epoch: the closed form
            return self._get_closed_form_lr()
        low, period, epoch = self.eta_min, self.T_max, self.last_epoch
        current = [g["lr"] for g in self.optimizer.param_groups]
        if (epoch - 1 - period) % (2 * period) == 0:
            # the step out of a trough, where the ratio below would divide by zero
            rise = 1 - _half_cosine(1, period)
            return [lr + (base - low) * rise for base, lr in zip(self.base_lrs, current)]
        ratio = _half_cosine(epoch, period) / _half_cosine(epoch - 1, period)
        return [low + ratio * (lr - low) for lr in current]

    def _get_closed_form_lr(self) -> list:
        share = _half_cosine(self.last_epoch, self.T_max)
        return [self.eta_min + (base - self.eta_min) * share for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs, ``T_0`` first and multiplied by ``T_mult``
    after each restart. ``step(epoch)`` accepts fractional epochs (``epoch + i / iters``), which
    is the intended way to step it per batch."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = self.T_i = T_0  # the first period, and the current one
        self.T_mult, self.eta_min = T_mult, eta_min
        self.T_cur = last_epoch  # epochs since the last restart
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        warn_get_lr_outside_step(self)
        share = _half_cosine(self.T_cur, self.T_i)
        return [self.eta_min + (base - self.eta_min) * share for base in self.base_lrs]

    def _place(self, epoch):
        """``(T_cur, T_i)`` at ``epoch``, counting the restarts from the start."""
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            return epoch, self.T_0
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_i
        # periods T_0 * T_mult^k: the n-th restart happens at T_0 (T_mult^n - 1) / (T_mult - 1)
        n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
        return epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1), self.T_0 * self.T_mult ** n

    def step(self, epoch=None) -> None:
        """Advance by one epoch, or jump to ``epoch`` (a float is allowed)."""
        if epoch is None and self.last_epoch >= 0:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:  # a restart
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        else:
            epoch = 0 if epoch is None else epoch
            self.T_cur, self.T_i = self._place(epoch)
        self.last_epoch = math.floor(epoch)
        with _within_step(self):
            for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
                set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")
