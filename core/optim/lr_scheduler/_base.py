"""The scheduler base class and the helpers every scheduler shares.

A scheduler sets ``group["lr"]`` of its optimizer's parameter groups each time ``step()`` is
called (once per epoch, or per batch for the cyclic ones), after ``optimizer.step()``. Like
PyTorch, it warns when ``scheduler.step()`` comes first (the first value of the schedule would be
skipped), when an epoch is passed to ``step`` (deprecated) and when ``get_lr()`` is called
directly (use ``get_last_lr()``). ``state_dict()`` is the scheduler's attributes except the
optimizer, as in PyTorch.
"""
from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any

from ember._tensor import Tensor
from ember.optim.optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use "
    "`scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed "
    "form is used instead of the new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")

_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call "
    "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in "
    "PyTorch skipping the first value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")

_OVERRIDDEN_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. Please, make "
    "sure to call `optimizer.step()` before `lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def _copy(v):
    return v.clone() if isinstance(v, Tensor) else v


def format_param(name: str, optimizer: Optimizer, param) -> list:
    """``param`` per group: a list of one value per group, or one value repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has {len(param)} "
                             f"values, param_groups has {len(optimizer.param_groups)}.")
    else:
        param = [param] * len(optimizer.param_groups)
    return [_copy(p) for p in param]


def group_values(optimizer: Optimizer, key: str) -> list:
    return [_copy(group[key]) for group in optimizer.param_groups]


def set_group_value(group: dict, key: str, value) -> None:
    """Set ``group[key]``; a tensor learning rate is updated in place (it may be shared)."""
    if isinstance(group[key], Tensor):
        group[key].fill_(value.item() if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _patch_optimizer_step(opt: Optimizer) -> None:
    """Wrap ``opt.step`` so that calling it is recorded (``opt._opt_called``), which is how the
    call-order warning is decided. The wrapper holds the optimizer weakly (no reference cycle)."""
    step = opt.step
    if getattr(step, "_wrapped_by_lr_sched", False):
        return
    func = getattr(step, "__func__", None)
    ref = weakref.ref(opt)
    if func is None:  # a plain callable assigned by the user
        inner = step

        @functools.wraps(inner)
        def wrapper(*args, **kwargs):
            o = ref()
            if o is not None:
                o._opt_called = True
            return inner(*args, **kwargs)
    else:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            o = ref()
            o._opt_called = True
            return func.__get__(o, o.__class__)(*args, **kwargs)
    wrapper._wrapped_by_lr_sched = True
    opt.step = wrapper


class _within_step:
    def __init__(self, sched):
        self.sched = sched

    def __enter__(self):
        self.sched._get_lr_called_within_step = True

    def __exit__(self, *exc):
        self.sched._get_lr_called_within_step = False


class _initial_mode:
    def __init__(self, sched):
        self.sched = sched

    def __enter__(self):
        self.sched._is_initial = True

    def __exit__(self, *exc):
        self.sched._is_initial = False


class LRScheduler:
    """Base class of the learning-rate schedulers. Subclasses implement :meth:`get_lr` (the next
    values, from the current ones: the "chainable" form) and may implement
    ``_get_closed_form_lr`` (the values as a function of ``last_epoch``, used when ``step`` is
    given an epoch).

    ``last_epoch=-1`` starts a new schedule (each group's current ``lr`` becomes its
    ``initial_lr``); a value >= 0 resumes one and needs ``initial_lr`` in every group.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with "
                        f"last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from a "
                        f"checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch >= 0 "
                        f"for a fresh training run (not recommended)")
        self.base_lrs: list = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _patch_optimizer_step(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the learning rates of step 0 (called by the constructor)."""
        self._step_count = 0
        with _initial_mode(self):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every attribute except the optimizer (PyTorch's layout)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state made by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The learning rates of the current step (called by ``step()``; use ``get_last_lr()``)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one step (after ``optimizer.step()``) and set the new rates."""
        if self._step_count == 1:
            if not getattr(self.optimizer.step, "_wrapped_by_lr_sched", False):
                warnings.warn(_OVERRIDDEN_WARNING, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with _within_step(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """Old name of :class:`LRScheduler`, kept for code that subclasses it."""


def warn_get_lr_outside_step(sched: LRScheduler) -> None:
    if not sched._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=3)
