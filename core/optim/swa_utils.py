"""``ember.optim.swa_utils``: stochastic weight averaging and exponential moving averages.

:class:`AveragedModel` keeps a copy of a model whose weights are a running average of the
model's, :class:`SWALR` anneals the learning rate towards a constant SWA rate, and
:func:`update_bn` recomputes BatchNorm statistics for averaged weights. The ``get_*_avg_fn``
factories build the averaging rules (PyTorch's API throughout).
"""
from __future__ import annotations

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


# --- averaging rules -------------------------------------------------------------------------

def _interpolates(t) -> bool:
    """Whether ``lerp_`` applies to ``t`` (floating or complex dtypes)."""
    return t.is_floating_point() or t.is_complex()


def _valid_decay(decay):
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")
    return decay


def get_ema_multi_avg_fn(decay=0.999):
    """A rule for lists of tensors that moves each average ``1 - decay`` of the way towards the
    current value, in place."""
    keep = _valid_decay(decay)
    step = 1 - keep

    def _ema_lists(averages, currents, _count):
        with _state.grad_disabled():
            integral = not _interpolates(averages[0])
            for avg, now in zip(averages, currents):
                if integral:
                    avg.copy_(avg * keep + now * step)
                else:
                    avg.lerp_(now, step)
    return _ema_lists


def get_swa_multi_avg_fn():
    """A rule for lists of tensors that keeps each one the equal-weight mean of all the values
    seen so far (``count`` of them before this call), in place."""
    def _mean_lists(averages, currents, count):
        with _state.grad_disabled():
            if _interpolates(averages[0]):
                share = 1 / (count + 1)
                for avg, now in zip(averages, currents):
                    avg.lerp_(now, share)
                return
            for avg, now in zip(averages, currents):
                gap = now - avg
                if isinstance(count, int):
                    avg.add_(gap, alpha=1.0 / (count + 1))
                else:
                    avg.addcdiv_(gap, count + 1)
    return _mean_lists


def get_ema_avg_fn(decay=0.999):
    """A rule for one tensor returning its exponential moving average with weight ``decay``."""
    keep = _valid_decay(decay)

    def _ema_one(ema_param, current_param, num_averaged):
        with _state.grad_disabled():
            return keep * ema_param + (1 - keep) * current_param
    return _ema_one


def get_swa_avg_fn():
    """A rule for one tensor returning the running mean after one more value."""
    def _mean_one(averaged_param, current_param, num_averaged):
        with _state.grad_disabled():
            return averaged_param + (current_param - averaged_param).div(num_averaged + 1)
    return _mean_one


def _by_device_and_dtype(averages, currents) -> dict:
    """``{(device, dtype): ([averages], [currents])}``, keeping the order inside each bucket."""
    buckets: dict = {}
    for avg, now in zip(averages, currents):
        left, right = buckets.setdefault((avg.device, avg.dtype), ([], []))
        left.append(avg)
        right.append(now)
    return buckets


# --- the averaged model ----------------------------------------------------------------------

class AveragedModel(Module):
    """Holds ``module``, a deep copy of ``model`` (moved to ``device``), and averages its
    parameters (and its buffers too with ``use_buffers=True``) over the calls of
    :meth:`update_parameters`.

    The first call copies the model's values; the later ones apply ``avg_fn`` (tensor by
    tensor) or ``multi_avg_fn`` (on lists of tensors sharing a device and dtype), the equal-weight
    mean when neither is given. The number of averaged models is the int64 buffer ``n_averaged``.
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if None not in (avg_fn, multi_avg_fn):
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        copied = deepcopy(model)
        self.module = copied if device is None else copied.to(device)
        self.register_buffer("n_averaged", _factory.tensor(0, dtype=D.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model):
        """The matching (ours, model's) tensors that take part in the average."""
        ours, theirs = list(self.module.parameters()), list(model.parameters())
        if self.use_buffers:
            ours += list(self.module.buffers())
            theirs += list(model.buffers())
        return ours, theirs

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current values into the average."""
        ours, theirs = self._averaged_tensors(model)
        with _state.grad_disabled():
            ours = [t.detach() for t in ours]
            theirs = [src.detach().to(dst.device) for dst, src in zip(ours, theirs)]
            if int(self.n_averaged.item()) == 0:
                for dst, src in zip(ours, theirs):
                    dst.copy_(src)
            elif self.avg_fn is not None:
                for dst, src in zip(ours, theirs):
                    dst.copy_(self.avg_fn(dst, src, self.n_averaged.to(dst.device)))
            else:
                rule = self.multi_avg_fn if self.multi_avg_fn is not None else get_swa_multi_avg_fn()
                for (device, _), (dsts, srcs) in _by_device_and_dtype(ours, theirs).items():
                    rule(dsts, srcs, self.n_averaged.to(device))
            if not self.use_buffers:  # buffers are not averaged: they follow the model
                for dst, src in zip(self.module.buffers(), model.buffers()):
                    dst.detach().copy_(src.detach().to(dst.device))
            self.n_averaged += 1


def _first_tensor(batch):
    """The model's input in a batch: the batch itself, or its first item for a list/tuple."""
    return batch[0] if isinstance(batch, (list, tuple)) else batch


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running mean and variance of each BatchNorm layer of ``model`` from one
    pass over ``loader`` (a plain average over the batches), with ``model`` in train mode; the
    layers' momenta and the model's mode are restored afterwards."""
    norms = [m for m in model.modules() if isinstance(m, _BatchNorm)]
    if not norms:
        return
    saved = [(m, m.momentum) for m in norms]
    mode = model.training
    with _state.grad_disabled():
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # None makes BatchNorm keep a cumulative average
        model.train()
        for batch in loader:
            x = _first_tensor(batch)
            model(x if device is None else x.to(device))
        for m, momentum in saved:
            m.momentum = momentum
        model.train(mode)


# --- the SWA learning-rate schedule ----------------------------------------------------------

def _cos_ramp(frac):
    """0 at 0, 1 at 1, following half a cosine period."""
    return 0.5 * (1 - math.cos(frac * math.pi))


def _linear_ramp(frac):
    return frac


_RAMPS = {"cos": _cos_ramp, "linear": _linear_ramp}


def _fraction(step, span):
    """How far ``step`` is through an annealing of ``span`` steps, clipped to [0, 1]."""
    return min(1.0, max(0.0, step / max(1, span)))


class SWALR(LRScheduler):
    """Moves each group's learning rate from its value to ``swa_lr`` (one per group, or one
    for all) over ``anneal_epochs`` steps along a ``"cos"`` or ``"linear"`` ramp, then keeps it
    at ``swa_lr``. The ramp is ``anneal_func``; the state dict records its name."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        groups = optimizer.param_groups
        targets = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr for _ in groups]
        if len(targets) != len(groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups. swa_lr has "
                             f"{len(targets)} values, param_groups has {len(groups)}.")
        for group, target in zip(groups, targets):
            group["swa_lr"] = target.clone() if hasattr(target, "clone") else target
        if anneal_strategy not in _RAMPS:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._use_ramp(anneal_strategy)
        if isinstance(anneal_epochs, int) and anneal_epochs >= 0:
            self.anneal_epochs = anneal_epochs
        else:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        super().__init__(optimizer, last_epoch)

    def _use_ramp(self, strategy) -> None:
        self._anneal_strategy = strategy
        self.anneal_func = _RAMPS[strategy]

    def get_lr(self):
        # The groups' rates already include the previous step's annealing: undo it to find the
        # rate the ramp started from, then apply this step's position on the ramp.
        warn_get_lr_outside_step(self)
        n = self._step_count - 1
        if self.anneal_epochs == 0:
            n = max(n, 1)
        before = self.anneal_func(_fraction(n - 1, self.anneal_epochs))
        now = self.anneal_func(_fraction(n, self.anneal_epochs))
        rates = []
        for group in self.optimizer.param_groups:
            target = group["swa_lr"]
            start = target if before == 1 else (group["lr"] - before * target) / (1 - before)
            rates.append(now * target + (1 - now) * start)
        return rates

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and k != "anneal_func"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._use_ramp(self._anneal_strategy)
