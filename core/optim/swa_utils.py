"""``ember.optim.swa_utils``: weight averaging (SWA and EMA) with ``AveragedModel``, the ``SWALR``
schedule and ``update_bn``, as PyTorch's."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy

from .. import _dtype as D
from .. import _state
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops import creation as _factory
from .lr_scheduler._base import LRScheduler, warn_get_lr_outside_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _is_float(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In-place EMA of lists of tensors: ``ema = decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with _state.grad_disabled():
            if _is_float(ema_param_list[0]):
                for e, c in zip(ema_param_list, current_param_list):
                    e.lerp_(c, 1 - decay)
            else:
                for e, c in zip(ema_param_list, current_param_list):
                    e.copy_(e * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """In-place running mean of lists of tensors: ``avg += (current - avg) / (n + 1)``."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with _state.grad_disabled():
            if _is_float(averaged_param_list[0]):
                w = 1 / (num_averaged + 1)
                for a, c in zip(averaged_param_list, current_param_list):
                    a.lerp_(c, w)
            else:
                for a, c in zip(averaged_param_list, current_param_list):
                    if isinstance(num_averaged, int):
                        a.add_(c - a, alpha=1.0 / (num_averaged + 1))
                    else:
                        a.addcdiv_(c - a, num_averaged + 1)
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """EMA of one tensor: returns ``decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with _state.grad_disabled():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """Running mean of one tensor: returns ``avg + (current - avg) / (n + 1)``."""
    def swa_update(averaged_param, current_param, num_averaged):
        with _state.grad_disabled():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` (on ``device``) whose parameters (and buffers, with
    ``use_buffers=True``) are running averages of ``model``'s, updated by
    ``update_parameters(model)``: the first call copies, later calls apply ``avg_fn`` (one tensor)
    or ``multi_avg_fn`` (lists, in place), by default the equal-weight SWA mean. ``n_averaged``
    is a long buffer (in the state dict, next to ``module.*``)."""

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _factory.tensor(0, dtype=D.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        mine, theirs = [], []
        copy_param = bool(self.n_averaged == 0)
        with _state.grad_disabled():
            for p_avg, p_model in zip(self_param, model_param):
                p_model_ = p_model.detach().to(p_avg.device)
                mine.append(p_avg.detach())
                theirs.append(p_model_)
                if copy_param:
                    p_avg.detach().copy_(p_model_)
            if self.n_averaged > 0:
                if self.multi_avg_fn is not None or self.avg_fn is None:
                    fn = self.multi_avg_fn or get_swa_multi_avg_fn()
                    for (dev, _), (a, b) in _group(mine, theirs).items():
                        fn(a, b, self.n_averaged.to(dev))
                else:
                    for p_avg, p_model in zip(mine, theirs):
                        p_avg.copy_(self.avg_fn(p_avg, p_model, self.n_averaged.to(p_avg.device)))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def _group(mine, theirs) -> dict:
    """Pairs grouped by (device, dtype), in order, as PyTorch's foreach grouping."""
    groups: dict = {}
    for a, b in zip(mine, theirs):
        g = groups.setdefault((a.device, a.dtype), ([], []))
        g[0].append(a)
        g[1].append(b)
    return groups


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of every BatchNorm of ``model`` with one pass over
    ``loader`` (a cumulative average: momentum None), in train mode."""
    with _state.grad_disabled():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
        for bn_module in momenta:
            bn_module.momentum = momenta[bn_module]
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` epochs (``"cos"`` or
    ``"linear"``), then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        if isinstance(swa_lr, (list, tuple)):
            if len(swa_lr) != len(optimizer.param_groups):
                raise ValueError(f"swa_lr must have the same length as optimizer.param_groups. swa_lr has "
                                 f"{len(swa_lr)} values, param_groups has {len(optimizer.param_groups)}.")
            swa_lrs = list(swa_lr)
        else:
            swa_lrs = [swa_lr] * len(optimizer.param_groups)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr.clone() if hasattr(lr, "clone") else lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        warn_get_lr_outside_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
