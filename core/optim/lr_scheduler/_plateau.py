"""ReduceLROnPlateau: lower the learning rate when a metric stops improving."""
from __future__ import annotations

import math
import warnings

from ember.optim.optimizer import Optimizer

from ._base import EPOCH_DEPRECATION_WARNING, LRScheduler, group_values, set_group_value


class ReduceLROnPlateau(LRScheduler):
    """Multiply each group's ``lr`` by ``factor`` (not below ``min_lr``) once the metric passed to
    ``step(metric)`` has not improved for ``patience`` steps, then wait ``cooldown`` steps.
    Improvement is relative (``threshold_mode='rel'``: better than ``best * (1 -+ threshold)``) or
    absolute; ``mode='max'`` for metrics that should grow.

    Example::

        sched = ReduceLROnPlateau(opt, patience=3)
        for epoch in range(epochs):
            train(); sched.step(validation_loss())
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0,
                 eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        n_groups = len(optimizer.param_groups)
        if not isinstance(min_lr, (list, tuple)):
            # one floor for every group, kept so that groups added later get it too
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * n_groups
        elif len(min_lr) == n_groups:
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            raise ValueError(f"expected {n_groups} min_lrs, got {len(min_lr)}")
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = group_values(optimizer, "lr")
        self._set_comparison(mode, threshold, threshold_mode)
        self._start_over()

    def _start_over(self) -> None:
        """No best value yet, no bad epochs counted, not cooling down."""
        self.best = self.mode_worse
        self.cooldown_counter = self.num_bad_epochs = 0

    def step(self, metrics, epoch=None) -> None:
        """Record one value of the metric and reduce the rates if it has plateaued."""
        value = float(metrics)
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        bad = self.num_bad_epochs + 1
        if self._improved(value):
            self.best, bad = value, 0
        if self.in_cooldown:  # epochs spent cooling down never count as bad
            self.cooldown_counter -= 1
            bad = 0
        if bad > self.patience:
            self._lower_rates()
            self.cooldown_counter, bad = self.cooldown, 0
        self.num_bad_epochs = bad
        self._last_lr = group_values(self.optimizer, "lr")

    def _lower_rates(self) -> None:
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from "
                    f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param group "
                    f"being added to the optimizer. Please modify the `min_lrs` field to match the length of the "
                    f"`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            before = float(group["lr"])
            after = max(floor, before * self.factor)
            if before - after > self.eps:  # a change within eps is not made
                set_group_value(group, "lr", after)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _improved(self, value) -> bool:
        """Whether ``value`` beats ``self.best`` by more than the threshold."""
        best, margin, relative = self.best, self.threshold, self.threshold_mode == "rel"
        if self.mode == "min":
            return value < (best * (1.0 - margin) if relative else best - margin)
        return value > (best * (margin + 1.0) if relative else best + margin)

    def _set_comparison(self, mode, threshold, threshold_mode) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + str(mode) + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + str(threshold_mode) + " is unknown!")
        self.mode_worse = -math.inf if mode == "max" else math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_comparison(self.mode, self.threshold, self.threshold_mode)
