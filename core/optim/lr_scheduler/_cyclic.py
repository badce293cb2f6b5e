"""Cyclical schedules, stepped once per batch: CyclicLR (Smith 2015) and OneCycleLR (Smith &
Topin 2017); both also cycle the momentum (or Adam's beta1) inversely by default."""
from __future__ import annotations

import math
import types
from typing import Callable

from ember.optim.optimizer import Optimizer

from ._base import LRScheduler, format_param, set_group_value, warn_get_lr_outside_step

# built-in CyclicLR modes -> what their amplitude factor is a function of
_MODE_AXIS = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}


def _momentum_key(optimizer) -> bool:
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    return "betas" in optimizer.defaults


def _set_momentum(group: dict, use_beta1: bool, value) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


def _start_momentum_at_top(optimizer, use_beta1: bool, tops: list, bottoms: list) -> None:
    """A fresh schedule begins every group at its highest momentum, and records both bounds in
    the group (``max_momentum``, ``base_momentum``) as PyTorch does."""
    for group, top, bottom in zip(optimizer.param_groups, tops, bottoms):
        _set_momentum(group, use_beta1, top)
        group["max_momentum"], group["base_momentum"] = top, bottom


def _require_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


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
        fresh = last_epoch == -1
        if fresh:
            for group, lr in zip(optimizer.param_groups, lows):
                set_group_value(group, "lr", lr)
        self.max_lrs = format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = up if step_size_down is None else float(step_size_down)
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if scale_fn is None and mode not in _MODE_AXIS:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        # a custom function keeps the caller's scale_mode; a built-in mode fixes its own
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._settle_scale_mode()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_key(optimizer)
            self.base_momentums = format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = format_param("max_momentum", optimizer, max_momentum)
            if fresh:
                _start_momentum_at_top(optimizer, self.use_beta1, self.max_momentums, self.base_momentums)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = lows

    def _settle_scale_mode(self) -> None:
        if self._scale_fn_custom is None:
            self.scale_mode = _MODE_AXIS.get(self.mode, self.scale_mode)

    def scale_fn(self, x) -> float:
        """The amplitude factor at cycle (or iteration) ``x``."""
        custom = self._scale_fn_custom
        if custom is not None:
            return custom(x)
        if self.mode == "exp_range":
            return self.gamma ** x
        if self.mode == "triangular2":  # the amplitude halves at each new cycle
            return 1 / (2.0 ** (x - 1))
        return 1.0

    def get_lr(self) -> list:
        warn_get_lr_outside_step(self)
        progress = self.last_epoch / self.total_size
        cycle = math.floor(1 + progress)
        where = 1.0 + progress - cycle          # position inside the cycle, in [0, 1)
        ratio = self.step_ratio
        rise = where / ratio if where <= ratio else (where - 1) / (ratio - 1)
        amp = rise * self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, self.use_beta1, hi - (hi - lo) * amp)
        return [lo + (hi - lo) * amp for lo, hi in zip(self.base_lrs, self.max_lrs)]

    def state_dict(self) -> dict:
        """As the base; a custom scale function is saved as its attribute dict when it is a
        callable object, and as None when it is a plain function."""
        state = super().state_dict()
        custom = state.pop("_scale_fn_custom")
        keep = custom is not None and not isinstance(custom, types.FunctionType)
        state["_scale_fn_custom"] = dict(vars(custom)) if keep else None
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        rest = {k: v for k, v in state_dict.items() if k != "_scale_fn_custom"}
        attrs = state_dict["_scale_fn_custom"]
        super().load_state_dict(rest)
        if attrs is not None:
            vars(self._scale_fn_custom).update(attrs)
        self._settle_scale_mode()


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    def positive(name, value):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"Expected positive integer {name}, but got {value}")
        return value
    if total_steps is not None:
        return positive("total_steps", total_steps)
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    return positive("epochs", epochs) * positive("steps_per_epoch", steps_per_epoch)


# OneCycleLR's phases as (lr from, lr to, momentum from, momentum to): PyTorch's layout of
# ``_schedule_phases``, which is part of the state dict
_TWO_PHASES = (("initial_lr", "max_lr", "max_momentum", "base_momentum"),
               ("max_lr", "min_lr", "base_momentum", "max_momentum"))
_THREE_PHASES = (("initial_lr", "max_lr", "max_momentum", "base_momentum"),
                 ("max_lr", "initial_lr", "base_momentum", "max_momentum"),
                 ("initial_lr", "min_lr", "max_momentum", "max_momentum"))


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
        self.total_steps = n = _total_steps(total_steps, epochs, steps_per_epoch)
        if three_phase:
            ends, table = (float(pct_start * n) - 1, float(2 * pct_start * n) - 2, n - 1), _THREE_PHASES
        else:
            ends, table = (float(pct_start * n) - 1, n - 1), _TWO_PHASES
        self._schedule_phases = [
            {"end_step": end, "start_lr": a, "end_lr": b, "start_momentum": c, "end_momentum": d}
            for end, (a, b, c, d) in zip(ends, table)]
        if not isinstance(pct_start, float) or pct_start < 0 or pct_start > 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        peaks = format_param("max_lr", optimizer, max_lr)
        fresh = last_epoch == -1
        if fresh:
            for group, peak in zip(optimizer.param_groups, peaks):
                start = peak / div_factor
                group.update(initial_lr=start, max_lr=peak, min_lr=start / final_div_factor)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_key(optimizer)
            tops = format_param("max_momentum", optimizer, max_momentum)
            bottoms = format_param("base_momentum", optimizer, base_momentum)
            if fresh:
                _start_momentum_at_top(optimizer, self.use_beta1, tops, bottoms)
        super().__init__(optimizer, last_epoch)

    def _blend(self, a, b, t):
        """From ``a`` (t=0) to ``b`` (t=1): half a cosine wave, or a straight line."""
        if self._anneal_func_type == "cos":
            return b + (a - b) / 2.0 * (math.cos(math.pi * t) + 1)
        return (b - a) * t + a

    def _phase_at(self, step) -> tuple[dict, float]:
        """The phase that ``step`` falls in, and how far into it (the last phase takes the rest)."""
        begin = 0.0
        phases = self._schedule_phases
        for phase in phases[:-1]:
            if step <= phase["end_step"]:
                break
            begin = phase["end_step"]
        else:
            phase = phases[-1]
        return phase, (step - begin) / (phase["end_step"] - begin)

    def get_lr(self) -> list:
        warn_get_lr_outside_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is "
                             f"{self.total_steps}")
        phase, t = self._phase_at(step)
        lr_ends = phase["start_lr"], phase["end_lr"]
        m_ends = phase["start_momentum"], phase["end_momentum"]
        out = []
        for group in self.optimizer.param_groups:
            out.append(self._blend(group[lr_ends[0]], group[lr_ends[1]], t))
            if self.cycle_momentum:
                _set_momentum(group, self.use_beta1, self._blend(group[m_ends[0]], group[m_ends[1]], t))
        return out
