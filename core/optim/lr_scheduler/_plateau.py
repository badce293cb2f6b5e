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
        groups = len(optimizer.param_groups)
        per_group = isinstance(min_lr, (list, tuple))
        if per_group and len(min_lr) != groups:
            raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
        # default_min_lr: the one value to extend min_lrs with if groups are added later
        self.default_min_lr = None if per_group else min_lr
        self.min_lrs = list(min_lr) if per_group else [min_lr for _ in range(groups)]
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = group_values(optimizer, "lr")
        self._set_comparison(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        """Forget the best value, the bad epochs and any cooldown."""
        self.best = self.mode_worse
        self.cooldown_counter = self.num_bad_epochs = 0

    def step(self, metrics, epoch=None) -> None:
        """Record one value of the metric and reduce the rates if it has plateaued."""
        value = float(metrics)
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._improves(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:  # epochs right after a reduction do not count as bad
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._lower_rates()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = group_values(self.optimizer, "lr")

    def _lower_rates(self) -> None:
        groups = self.optimizer.param_groups
        if len(self.min_lrs) != len(groups):  # groups were added since
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from "
                    f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param group "
                    f"being added to the optimizer. Please modify the `min_lrs` field to match the length of the "
                    f"`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr for _ in groups]
        for group, floor in zip(groups, self.min_lrs):
            before = float(group["lr"])
            after = max(before * self.factor, floor)
            if before - after > self.eps:  # changes below eps are not made
                set_group_value(group, "lr", after)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _improves(self, value) -> bool:
        """Whether ``value`` beats ``best`` by the threshold (relative or absolute)."""
        lower_is_better = self.mode == "min"
        if self.threshold_mode == "rel":
            bar = self.best * (1.0 - self.threshold) if lower_is_better else self.best * (self.threshold + 1.0)
        else:
            bar = self.best - self.threshold if lower_is_better else self.best + self.threshold
        return value < bar if lower_is_better else value > bar

    def _set_comparison(self, mode, threshold, threshold_mode) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + str(mode) + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + str(threshold_mode) + " is unknown!")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf  # the initial best

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_comparison(self.mode, self.threshold, self.threshold_mode)
