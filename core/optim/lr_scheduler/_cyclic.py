"""Cyclical schedules, stepped once per batch: CyclicLR (Smith 2015) and OneCycleLR (Smith &
Topin 2017). Both move the momentum (or Adam's beta1) opposite to the learning rate by default.

The attributes a scheduler keeps are its state dict, so their names and values follow
PyTorch's (``total_size``, ``step_ratio``, ``_schedule_phases``...): state dicts load across.
"""
from __future__ import annotations

import math
import types
from functools import partial
from typing import Callable

from ember.optim.optimizer import Optimizer

from ._base import LRScheduler, format_param, set_group_value, warn_get_lr_outside_step


def _uses_beta1(optimizer) -> bool:
    """Whether the optimizer's momentum is ``betas[0]`` (Adam-like) rather than ``momentum``."""
    hyper = optimizer.defaults
    if "betas" in hyper:
        return True
    if "momentum" in hyper:
        return False
    raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")


def _write_momentum(group: dict, beta1: bool, value) -> None:
    if beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _start_momentum(optimizer, beta1: bool, highs, lows, fresh: bool) -> None:
    """At a fresh start, each group begins at its high momentum and records both bounds."""
    if not fresh:
        return
    for group, high, low in zip(optimizer.param_groups, highs, lows):
        _write_momentum(group, beta1, high)
        group["max_momentum"], group["base_momentum"] = high, low


def _require_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _flat(x: float) -> float:
    return 1.0


def _halving(x: float) -> float:
    return 1 / (2.0 ** (x - 1))


def _decaying(gamma: float, x: float) -> float:
    return gamma ** x


# mode -> (amplitude function, what it is evaluated at)
_BUILTIN_SCALES = {"triangular": (_flat, "cycle"), "triangular2": (_halving, "cycle"),
                   "exp_range": (_decaying, "iterations")}


class CyclicLR(LRScheduler):
    """The learning rate cycles between ``base_lr`` and ``max_lr`` (``step_size_up`` steps up,
    ``step_size_down`` down) with amplitude scaled per cycle ('triangular', 'triangular2'), per
    iteration ('exp_range': ``gamma ** iteration``) or by ``scale_fn``."""

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Callable | None = None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9, last_epoch: int = -1) -> None:
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        lows = format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, low in zip(optimizer.param_groups, lows):
                set_group_value(group, "lr", low)
        self.max_lrs = format_param("max_lr", optimizer, max_lr)
        rising = float(step_size_up)
        falling = rising if step_size_down is None else float(step_size_down)
        self.total_size = rising + falling
        self.step_ratio = rising / self.total_size  # the rising share of a cycle
        if scale_fn is None and mode not in _BUILTIN_SCALES:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma, self.scale_mode = mode, gamma, scale_mode
        self._scale_fn_custom = scale_fn
        self._pick_scale()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            self.base_momentums = format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = format_param("max_momentum", optimizer, max_momentum)
            _start_momentum(optimizer, self.use_beta1, self.max_momentums, self.base_momentums, last_epoch == -1)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = lows

    def _pick_scale(self) -> None:
        """Bind the built-in amplitude function of ``mode`` (unless the user gave one)."""
        if self._scale_fn_custom is not None or self.mode not in _BUILTIN_SCALES:
            return
        fn, per = _BUILTIN_SCALES[self.mode]
        self._builtin_scale = partial(fn, self.gamma) if self.mode == "exp_range" else fn
        self.scale_mode = per

    def scale_fn(self, x) -> float:
        """The amplitude factor at cycle (or iteration) ``x``."""
        fn = self._scale_fn_custom if self._scale_fn_custom is not None else self._builtin_scale
        return fn(x)

    def get_lr(self) -> list:
        warn_get_lr_outside_step(self)
        progress = self.last_epoch / self.total_size
        cycle = math.floor(1 + progress)
        within = 1.0 + progress - cycle  # position in the current cycle, in [0, 1)
        if within <= self.step_ratio:
            height = within / self.step_ratio
        else:
            height = (within - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        rates = [low + (high - low) * height * scale for low, high in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _write_momentum(group, self.use_beta1, high - (high - low) * height * scale)
        return rates

    def state_dict(self) -> dict:
        """The base's, without the bound scale functions; a custom one that is not a plain
        function (a callable object) is saved as its ``__dict__``."""
        state = super().state_dict()
        state.pop("_builtin_scale", None)
        custom = state.pop("_scale_fn_custom")
        keep = custom is not None and not isinstance(custom, types.FunctionType)
        state["_scale_fn_custom"] = custom.__dict__.copy() if keep else None
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        rest = dict(state_dict)
        custom = rest.pop("_scale_fn_custom")
        super().load_state_dict(rest)
        if custom is not None:
            self._scale_fn_custom.__dict__.update(custom)
        self._pick_scale()


def _cos_anneal(start, end, pct):
    """From ``start`` (pct 0) to ``end`` (pct 1) along half a cosine."""
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear_anneal(start, end, pct):
    return (end - start) * pct + start


def _phase(end_step, lr_from: str, lr_to: str, momentum_from: str, momentum_to: str) -> dict:
    """One phase of OneCycleLR: it ends at ``end_step`` and moves between the named group entries."""
    return {"end_step": end_step, "start_lr": lr_from, "end_lr": lr_to, "start_momentum": momentum_from,
            "end_momentum": momentum_to}


def _positive_int(value, what: str) -> int:
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"Expected positive integer {what}, but got {value}")
    return value


class OneCycleLR(LRScheduler):
    """One cycle over ``total_steps`` (or ``epochs * steps_per_epoch``): from ``max_lr /
    div_factor`` up to ``max_lr`` during the first ``pct_start`` of the steps, then down to
    ``initial_lr / final_div_factor`` (cosine or linear annealing); ``three_phase`` goes back
    down to the initial rate symmetrically before the final decay. Stepping past ``total_steps``
    is an error."""

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1) -> None:
        _require_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            self.total_steps = _positive_int(total_steps, "total_steps")
        elif epochs is None or steps_per_epoch is None:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        else:
            self.total_steps = _positive_int(epochs, "epochs") * _positive_int(steps_per_epoch, "steps_per_epoch")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        peak = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        rise = _phase(peak, "initial_lr", "max_lr", "max_momentum", "base_momentum")
        if three_phase:
            back = _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                          "max_momentum")
            self._schedule_phases = [rise, back, _phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._schedule_phases = [rise, _phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        peaks = format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, peaks):
                first = top / div_factor
                group.update(initial_lr=first, max_lr=top, min_lr=first / final_div_factor)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            highs = format_param("max_momentum", optimizer, max_momentum)
            lows = format_param("base_momentum", optimizer, base_momentum)
            _start_momentum(optimizer, self.use_beta1, highs, lows, last_epoch == -1)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        return (_cos_anneal if self._anneal_func_type == "cos" else _linear_anneal)(start, end, pct)

    def _where(self, step: int):
        """The phase ``step`` falls in and how far through it (a fraction; past the end on the
        last phase only)."""
        begin = 0.0
        for phase in self._schedule_phases:
            end = phase["end_step"]
            if step <= end or phase is self._schedule_phases[-1]:
                return phase, (step - begin) / (end - begin)
            begin = end
        raise AssertionError("OneCycleLR has no phases")

    def get_lr(self) -> list:
        warn_get_lr_outside_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        phase, pct = self._where(step)
        rates = []
        for group in self.optimizer.param_groups:
            rates.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                _write_momentum(group, self.use_beta1, momentum)
        return rates
