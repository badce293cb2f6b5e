"""``ember.utils.checkpoint``: activation checkpointing (``checkpoint``, ``checkpoint_sequential``).

Two variants, as in PyTorch:

* ``use_reentrant=False`` (recommended): the function runs with autograd on, under
  :class:`ember.autograd.graph.saved_tensors_hooks` whose pack hook drops every tensor the graph
  would save and keeps a handle; the first unpack in backward reruns the function (same RNG
  state and autocast state) and hands back the recomputed tensors, in the order they were saved.
  It works with ``autograd.grad``, keyword arguments, inputs that do not require grad, and
  checks that the recomputation saved tensors of the same shapes, dtypes and devices
  (``determinism_check="default"``).
* ``use_reentrant=True``: an ``autograd.Function`` that runs the function under no_grad and, in
  backward, reruns it with grad on and calls ``ember.autograd.backward`` on its outputs (a
  nested backward pass, so it cannot serve ``autograd.grad`` or ``backward(inputs=...)``).

Not passing ``use_reentrant`` warns and picks ``True``, as PyTorch 2.13 does.
"""
from __future__ import annotations

import contextlib
import warnings

from .. import _state
from .. import autograd as _autograd
from .._tensor import Tensor
from ..autograd.graph import saved_tensors_hooks
from ..ops import random as _random

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "get_device_states", "set_device_states", "noop_context_fn",
           "set_checkpoint_early_stop", "DefaultDeviceType", "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_debug_enabled = [None]
_early_stop_enabled = [None]


class CheckpointError(RuntimeError):
    """The recomputation in backward did not save what the original forward saved."""


class _StopRecomputation(Exception):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def _overriding(cell: list, value):
    """Hold ``value`` in the one-item list ``cell`` for the duration of the block."""
    saved, cell[0] = cell[0], value
    try:
        yield
    finally:
        cell[0] = saved


def _setting(cell: list, argument):
    """The value a block-wide override puts in ``cell``, else the call's own ``argument``."""
    return argument if cell[0] is None else cell[0]


def set_checkpoint_debug_enabled(enabled):
    """A context manager overriding ``debug=`` of the checkpoints run inside it (None: defer to
    each call's argument)."""
    return _overriding(_debug_enabled, enabled)


def set_checkpoint_early_stop(enable: bool):
    """A context manager setting whether non-reentrant checkpoints made inside it stop
    recomputing once every saved tensor has been recomputed (default True)."""
    return _overriding(_early_stop_enabled, enable)


class DefaultDeviceType:
    """The device type whose RNG state checkpoint saves when no input is on an accelerator."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Choose the device type used when the inputs give none."""
        setattr(DefaultDeviceType, "_default_device_type", device)

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type or "cpu"


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies of the tensors of ``inputs``, keeping their ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(_cut_from_graph(item) for item in inputs)


def _cut_from_graph(item):
    """A tensor detached from its history but with its ``requires_grad``; anything else as is."""
    if isinstance(item, Tensor):
        return item.detach().requires_grad_(item.requires_grad)
    return item


def check_backward_validity(inputs) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def get_device_states(*args):
    """``(devices, states)``: the RNG states of the non-cpu devices of the tensors in ``args``."""
    devices = []
    for a in args:
        if isinstance(a, Tensor) and a.device.type != "cpu" and a._device not in devices:
            devices.append(a._device)
    return devices, [_random.default_generator(d).get_state() for d in devices]


def set_device_states(devices, states, *, device_type=None) -> None:
    for d, s in zip(devices, states):
        _random.default_generator(d).set_state(s)


def _rng_snapshot() -> list:
    """The states of the cpu generator and every device generator in use (device generators are
    created on first use, so the list covers every device a checkpointed function can draw on)."""
    _random.get_rng_state()  # makes sure cpu's default generator exists
    return [(g, g.get_state()) for g in list(_random._defaults.values())]


@contextlib.contextmanager
def _forked_rng(snapshot, enabled: bool):
    """Run the block with the generators set to ``snapshot``; restore the current states after."""
    if not enabled:
        yield
        return
    now = _rng_snapshot()
    for g, s in snapshot:
        g.set_state(s)
    try:
        yield
    finally:
        for g, s in now:
            g.set_state(s)


def _autocast_snapshot():
    ac = _state.autocast
    return dict(ac.enabled), dict(ac.dtype)


@contextlib.contextmanager
def _autocast_as(snapshot):
    ac = _state.autocast
    prev = (ac.enabled, ac.dtype)
    ac.enabled, ac.dtype = dict(snapshot[0]), dict(snapshot[1])
    ac.refresh()
    try:
        yield
    finally:
        ac.enabled, ac.dtype = prev
        ac.refresh()


class CheckpointFunction(_autograd.Function):
    """The reentrant checkpoint: forward without a graph, backward reruns the function."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        # tensors go through save_for_backward (version-checked); the other arguments are
        # kept as they are, with None holding the tensors' places
        is_tensor = [isinstance(a, Tensor) for a in args]
        ctx.save_for_backward(*(a for a, t in zip(args, is_tensor) if t))
        ctx.ckpt_args = [None if t else a for a, t in zip(args, is_tensor)]
        ctx.ckpt_tensor_at = [i for i, t in enumerate(is_tensor) if t]
        ctx.ckpt_fn = run_function
        ctx.ckpt_rng = _rng_snapshot() if preserve_rng_state else None
        ctx.ckpt_autocast = _autocast_snapshot()
        with _autograd.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not _autograd._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
                "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
                ".backward() without passing the `inputs` argument.")
        inputs = list(ctx.ckpt_args)
        for i, t in zip(ctx.ckpt_tensor_at, ctx.saved_tensors):
            inputs[i] = t
        with _forked_rng(ctx.ckpt_rng, ctx.ckpt_rng is not None):
            detached = detach_variable(tuple(inputs))
            with _autograd.enable_grad(), _autocast_as(ctx.ckpt_autocast):
                outputs = ctx.ckpt_fn(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad, grads_for = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o.requires_grad:
                with_grad.append(o)
                grads_for.append(g)
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _autograd.backward(with_grad, grads_for)
        return (None, None) + tuple(t.grad if isinstance(t, Tensor) else None for t in detached)


def _meta(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


_metadata_fns = {_DEFAULT_DETERMINISM_MODE: _meta, "none": lambda _: None}


class _Frame:
    """One non-reentrant checkpoint call: the handles saved in forward and the recomputation."""

    def __init__(self, recompute, early_stop, metadata_fn):
        self.recompute, self.early_stop, self.metadata_fn = recompute, early_stop, metadata_fn
        self.metas: list = []       # per saved tensor, in save order
        self.recomputed: dict = {}  # save index -> recomputed tensor, emptied as they are unpacked

    def pack(self, t):
        self.metas.append(self.metadata_fn(t))
        return (self, len(self.metas) - 1)

    def unpack(self, handle):
        _, idx = handle
        if idx not in self.recomputed:
            self._recompute()
        return self.recomputed.pop(idx)

    def _recompute(self):
        got = []
        n = len(self.metas)

        def pack(t):
            got.append(t.detach())
            if self.early_stop and len(got) == n:
                raise _StopRecomputation
            return None

        def unpack(_):  # pragma: no cover - the recomputed graph is never run backward
            raise RuntimeError("torch.utils.checkpoint: the recomputed graph cannot be differentiated")

        stopped = False
        try:
            with saved_tensors_hooks(pack, unpack):
                self.recompute()
        except _StopRecomputation:
            stopped = True
        if len(got) != n and not (stopped and len(got) == n):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {n}\n"
                f"Number of tensors saved during recomputation: {len(got)}.\n")
        bad = []
        for i, (t, m) in enumerate(zip(got, self.metas)):
            rm = self.metadata_fn(t)
            if rm != m:
                bad.append(f"tensor at position {i}:\nsaved metadata: {m}\nrecomputed metadata: {rm}\n")
        if bad:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                                  "metadata than during the forward pass.\n" + "".join(bad))
        self.recomputed = dict(enumerate(got))


def _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, early_stop, args, kwargs):
    if _setting(_debug_enabled, debug) and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _metadata_fns:
        raise ValueError(f"determinism_check should be one of {list(_metadata_fns)}, but got {determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    rng = _rng_snapshot() if preserve else None
    autocast = _autocast_snapshot()
    saved_inputs = tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in args)
    versions = [a._version[0] if isinstance(a, Tensor) else None for a in args]
    originals = args

    def recompute():
        for a, v in zip(originals, versions):
            if v is not None and a._version[0] != v:
                raise RuntimeError("torch.utils.checkpoint: an input of the checkpointed function was modified in "
                                   "place after the forward; the recomputation would read the new values")
        with _forked_rng(rng, preserve), _autograd.enable_grad(), _autocast_as(autocast), recompute_ctx:
            function(*saved_inputs, **kwargs)

    frame = _Frame(recompute, _setting(_early_stop_enabled, early_stop), _metadata_fns[determinism_check])
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_ctx:
        return function(*args, **kwargs)


_CHECKPOINT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
    "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
    "recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
    "Refer to docs for more details on the differences between the two variants.")
_SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
    "In version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
    "recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
    "Refer to docs for more details on the differences between the two variants.")


def _variant(use_reentrant, warning) -> bool:
    """``use_reentrant`` as given; when omitted, warn and choose the reentrant variant."""
    if use_reentrant is None:
        warnings.warn(warning, stacklevel=3)
        return True
    return bool(use_reentrant)


def _refuse_extra(kwargs) -> None:
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check: str = _DEFAULT_DETERMINISM_MODE, debug: bool = False, early_stop: bool = True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate tensors for backward;
    backward recomputes them (``preserve_rng_state=True`` by default: dropout draws the same
    masks). See the module docstring for the two variants."""
    reentrant = _variant(use_reentrant, _CHECKPOINT_WARNING)
    preserve = kwargs.pop("preserve_rng_state", True)
    if not reentrant:
        return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, early_stop,
                                             args, kwargs)
    _refuse_extra(kwargs)  # the reentrant Function passes positional arguments only
    if debug is not False or context_fn is not noop_context_fn:
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    return CheckpointFunction.apply(function, preserve, *args)


def _run_span(layers, span):
    """A function applying ``layers[span]`` one after the other."""
    def run(x):
        for layer in layers[span]:
            x = layer(x)
        return x
    return run


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential``, or a list of callables) on ``input`` in
    ``segments`` consecutive chunks of ``len(functions) // segments``; every chunk but the last
    (which also takes the remainder) is checkpointed."""
    reentrant = _variant(use_reentrant, _SEQUENTIAL_WARNING)
    preserve = kwargs.pop("preserve_rng_state", True)
    _refuse_extra(kwargs)
    is_module = hasattr(functions, "children") and hasattr(functions, "_modules")
    layers = list(functions.children()) if is_module else list(functions)
    size = len(layers) // segments
    if size == 0 and segments > 1:
        raise ValueError(f"checkpoint_sequential: cannot split {len(layers)} functions into {segments} segments")
    done = 0
    for _ in range(segments - 1):
        input = checkpoint(_run_span(layers, slice(done, done + size)), input, use_reentrant=reentrant,
                           preserve_rng_state=preserve)
        done += size
    return _run_span(layers, slice(done, None))(input)
