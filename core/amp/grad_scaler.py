"""``ember.amp.GradScaler``: dynamic loss scaling for mixed-precision training.

Each iteration follows ``scale(loss).backward()`` -> optional ``unscale_(opt)`` -> ``step(opt)``
-> ``update()``. The scale is a float32 tensor created on the device of the first tensor scaled;
it halves (``backoff_factor``) whenever a step found an inf or NaN gradient and doubles
(``growth_factor``) after ``growth_interval`` clean steps in a row. Every optimizer moves
through the stages of :class:`OptState` between two updates; the stage and the inf flags found
per device are recorded in ``_per_optimizer_states``, keyed by ``id(optimizer)``.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from .. import _dtype as D
from .. import ops
from .._tensor import Tensor
from ..autograd import no_grad
from .autocast_mode import _cuda_available

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    """Where an optimizer stands in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_record() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """Copies of one tensor, made on demand for each device that needs one."""

    def __init__(self, source: Tensor):
        self.source = source
        self.copies: dict = {}

    def on(self, device) -> Tensor:
        if device not in self.copies:
            self.copies[device] = self.source.to(device=device, copy=True)
        return self.copies[device]


def _flag_and_divide(grads, found_inf: Tensor, inv_scale: Tensor) -> None:
    """Multiply each gradient by ``inv_scale`` in place; ``found_inf`` becomes 1 as soon as one
    of them holds an inf or a NaN (the work of PyTorch's fused unscale kernel)."""
    for g in grads:
        found_inf.masked_fill_(ops.logical_not(ops.isfinite(g).all()), 1.0)  # stays on the device: no sync
        g.mul_(inv_scale)


def _grads_by_device_and_dtype(optimizer, allow_fp16: bool) -> dict:
    """``{device: {dtype: [grad, ...]}}`` for the parameters of ``optimizer`` that have one."""
    buckets: dict = defaultdict(lambda: defaultdict(list))
    for group in optimizer.param_groups:
        for param in group["params"]:
            if not isinstance(param, Tensor):
                raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
            g = param.grad
            if g is None:
                continue
            if g.dtype is D.float16 and not allow_fp16:
                raise ValueError("Attempting to unscale FP16 gradients.")
            buckets[g.device][g.dtype].append(g)
    return buckets


def _adjust(scale: Tensor, streak: Tensor, had_inf: bool, growth: float, backoff: float, interval: int) -> None:
    """One update of the scale and of the count of clean steps (``streak``), in place: back off
    and restart the count after an inf; grow once the count reaches ``interval``, unless the
    grown float32 scale would overflow."""
    if had_inf:
        scale.mul_(backoff)
        streak.fill_(0)
        return
    clean = int(streak.item()) + 1
    if clean < interval:
        streak.fill_(clean)
        return
    candidate = scale * growth
    if bool(ops.isfinite(candidate)):
        scale.copy_(candidate)
    streak.fill_(0)


class GradScaler:
    """Dynamic loss scaling (PyTorch's ``torch.amp.GradScaler``).

    ``scale(outputs)`` multiplies the loss (or a nested collection of tensors) by the current
    scale; ``unscale_(optimizer)`` divides the gradients back in place and notes any inf/NaN;
    ``step(optimizer)`` unscales if that was not done yet and runs ``optimizer.step()`` only
    when all gradients were finite; ``update()`` adjusts the scale. A disabled scaler passes
    everything through; one asked for on cuda without a GPU warns and disables itself.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        if enabled and device == "cuda" and not _cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            enabled = False
        self._enabled = enabled
        if not enabled:
            return
        if not growth_factor > 1.0:
            raise AssertionError("The growth factor must be > 1.0.")
        if not backoff_factor < 1.0:
            raise AssertionError("The backoff factor must be < 1.0.")
        self._growth, self._backoff, self._interval = growth_factor, backoff_factor, growth_interval
        # the values the tensors start from when they are created (and after unpickling)
        self._start_scale, self._start_streak = init_scale, 0
        self._scale: Tensor | None = None
        self._growth_tracker: Tensor | None = None
        self._per_optimizer_states = defaultdict(_fresh_record)

    # --- the scale and growth-tracker tensors -------------------------------------------------

    def _create_tensors(self, device) -> None:
        self._scale = ops.full((), self._start_scale, dtype=D.float32, device=device)
        self._growth_tracker = ops.full((), self._start_streak, dtype=D.int32, device=device)

    def _check_scale_growth_tracker(self, funcname: str):
        hint = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        for attr in ("_scale", "_growth_tracker"):
            if getattr(self, attr) is None:
                raise AssertionError(f"Attempted {funcname} but {attr} is None.  {hint}")
        return self._scale, self._growth_tracker

    def _get_scale_async(self):
        return self._scale

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._start_streak if self._growth_tracker is None else int(self._growth_tracker.item())

    # --- the iteration --------------------------------------------------------------------------

    def scale(self, outputs):
        """``outputs`` times the scale: a tensor, or tensors nested in lists, tuples and other
        iterables (lists and tuples keep their type, other iterables become ``map`` objects)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._create_tensors(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        copies: list = []  # one _PerDevice, made at the first tensor met

        def walk(item):
            if isinstance(item, Tensor):
                if not copies:
                    if self._scale is None:
                        self._create_tensors(item.device)
                    copies.append(_PerDevice(self._scale))
                return item * copies[0].on(item.device)
            if isinstance(item, (list, tuple)):
                return type(item)(walk(x) for x in item)
            if hasattr(item, "__iter__"):
                return map(walk, item)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return walk(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> dict:
        """Divide the gradients of ``optimizer`` in place; returns ``{device: found_inf}``."""
        inv = _PerDevice(inv_scale)
        flags = _PerDevice(found_inf)
        with no_grad():
            for device, by_dtype in _grads_by_device_and_dtype(optimizer, allow_fp16).items():
                for grads in by_dtype.values():
                    _flag_and_divide(grads, flags.on(device), inv.on(device))
        return flags.copies

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale now (at most once per iteration, before
        :meth:`step`), e.g. to clip or inspect the true gradients."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        record = self._per_optimizer_states[id(optimizer)]
        stage = record["stage"]
        if stage is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if stage is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inverse = self._scale.double().reciprocal().float()  # the reciprocal in double, as PyTorch
        flag = ops.zeros((), dtype=D.float32, device=self._scale.device)
        record["found_inf_per_device"] = self._unscale_grads_(optimizer, inverse, flag, False)
        record["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Run ``optimizer.step(*args, **kwargs)`` on unscaled gradients if they are all finite;
        returns its result, or None when the step is skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        record = self._per_optimizer_states[id(optimizer)]
        if record["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if record["stage"] is OptState.READY:
            self.unscale_(optimizer)
        flags = record["found_inf_per_device"]
        if not flags:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        clean = all(f.item() == 0 for f in flags.values())
        result = optimizer.step(*args, **kwargs) if clean else None
        record["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """End the iteration: set the scale to ``new_scale`` (a float, or a one-element tensor of
        the scaler's device type that does not require grad) or, without it, back off or grow
        from the inf checks of this iteration's steps."""
        if not self._enabled:
            return
        scale, streak = self._check_scale_growth_tracker("update")
        if new_scale is None:
            flags = [f for record in self._per_optimizer_states.values()
                     for f in record["found_inf_per_device"].values()]
            if not flags:
                raise AssertionError("No inf checks were recorded prior to update.")
            had_inf = any(f.to(device=scale.device).item() != 0 for f in flags)
            _adjust(scale, streak, had_inf, self._growth, self._backoff, self._interval)
        elif isinstance(new_scale, float):
            scale.fill_(new_scale)
        else:
            acceptable = (isinstance(new_scale, Tensor) and new_scale.device.type == self._device
                          and new_scale.numel() == 1 and not new_scale.requires_grad)
            if not acceptable:
                raise AssertionError("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                                     "torch.FloatTensor with requires_grad=False.")
            scale.copy_(new_scale.reshape(()))
        self._per_optimizer_states = defaultdict(_fresh_record)

    # --- settings ---------------------------------------------------------------------------------

    def get_scale(self) -> float:
        """The current scale as a python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._start_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff = new_factor

    def get_growth_interval(self) -> int:
        return self._interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._interval = new_interval

    def is_enabled(self) -> bool:
        return self._enabled

    # --- saving ---------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker``; empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth, "backoff_factor": self._backoff,
                "growth_interval": self._interval, "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._start_scale, self._start_streak = state_dict["scale"], state_dict["_growth_tracker"]
        self._growth = state_dict["growth_factor"]
        self._backoff = state_dict["backoff_factor"]
        self._interval = state_dict["growth_interval"]
        for tensor, value in ((self._scale, self._start_scale), (self._growth_tracker, self._start_streak)):
            if tensor is not None:
                tensor.fill_(value)

    def __getstate__(self) -> dict:
        # pickled between iterations only: the tensors are dropped and recreated on first use
        state = dict(self.__dict__)
        if not self._enabled:
            return state
        if self._per_optimizer_states:
            raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, or "
                                 "at the end after scaler.update().")
        state.update(_start_scale=self.get_scale(), _start_streak=self._get_growth_tracker(), _scale=None,
                     _growth_tracker=None, _per_optimizer_states=None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_record)
