"""``ember.amp.GradScaler``: dynamic loss scaling for mixed-precision training, PyTorch's
algorithm and per-optimizer state machine (``scale`` -> ``backward`` -> [``unscale_``] ->
``step`` -> ``update``)."""
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
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """A tensor served on each device that asks for it (copies cached per device)."""

    def __init__(self, master: Tensor):
        self.master = master
        self._per_device_tensors: dict = {}

    def get(self, device) -> Tensor:
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self.master.to(device=device, copy=True)
            self._per_device_tensors[device] = t
        return t


def _non_finite_check_and_unscale_(grads, found_inf: Tensor, inv_scale: Tensor) -> None:
    """PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``: ``found_inf`` becomes 1.0 if a
    gradient holds an inf or a NaN; every gradient is multiplied by ``inv_scale`` in place."""
    for g in grads:
        bad = ops.logical_not(ops.isfinite(g)).any()
        found_inf.copy_(ops.maximum(found_inf, bad.to(found_inf.dtype)))
        g.mul_(inv_scale)


class GradScaler:
    """``GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``: ``scale(loss)`` multiplies the loss by the scale;
    ``step(optimizer)`` unscales the gradients (unless :meth:`unscale_` did) and runs
    ``optimizer.step()`` only when they are all finite; ``update()`` multiplies the scale by
    ``backoff_factor`` after a skipped step and by ``growth_factor`` after ``growth_interval``
    steps in a row without one. Disabled, it passes everything through (``step`` calls
    ``optimizer.step()``). A disabled scaler on cuda without a GPU warns, as PyTorch's."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        if not self._enabled:
            return  # a disabled scaler keeps no state: every method passes through
        for ok, what in ((growth_factor > 1.0, "growth factor must be > 1.0"),
                         (backoff_factor < 1.0, "backoff factor must be < 1.0")):
            if not ok:
                raise AssertionError(f"The {what}.")
        self._init_scale, self._init_growth_tracker = init_scale, 0
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        # the scale and the count of good steps are tensors made on the first scale() call, on
        # the device of what it scales
        self._scale: Tensor | None = None
        self._growth_tracker: Tensor | None = None
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        self._scale = ops.full((), self._init_scale, dtype=D.float32, device=dev)
        self._growth_tracker = ops.full((), self._init_growth_tracker, dtype=D.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor, or an iterable of them, nested) multiplied by the scale;
        unchanged when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        stash: list = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(map(apply_scale, val))
            if hasattr(val, "__iter__"):
                return map(apply_scale, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> dict:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grads_by_device: dict = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads_by_device[param.grad.device][param.grad.dtype].append(param.grad)
            for device, per_dtype in grads_by_device.items():
                for grads in per_dtype.values():
                    _non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                   per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (once per step, before
        :meth:`step`), recording whether any is inf or NaN: for clipping or inspecting the true
        gradients between ``backward`` and ``step``."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ops.full((), 0.0, dtype=D.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless :meth:`unscale_` was called) and run ``optimizer.step(*args,
        **kwargs)`` if every gradient is finite; returns what it returns (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Update the scale: ``new_scale`` (a float, or a one-element tensor on the scaler's
        device type that does not require grad) if given; else back off after a skipped step,
        grow after ``growth_interval`` unskipped ones."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f.to(device=_scale.device) for s in self._per_optimizer_states.values()
                          for f in s["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            _update_scale_(_scale, _growth_tracker, sum(f.item() for f in found_infs), self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker`` (an empty dict when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, or "
                                     "at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)


def _update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: float, growth_factor: float,
                   backoff_factor: float, growth_interval: int) -> None:
    """PyTorch's ``_amp_update_scale_``, in place on the scale and growth-tracker tensors."""
    if found_inf:
        scale.mul_(backoff_factor)
        growth_tracker.fill_(0)
        return
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        grown = scale * growth_factor  # in float32, as PyTorch: a scale that would overflow is kept
        if bool(ops.isfinite(grown)):
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)
