"""Running tests under ``ember.compile``: the switch ``EMBER_TEST_COMPILE=1``.

With the variable set, :func:`ember.testing.check_once` and every outermost ``nn.Module`` call
made inside a test that uses the ``device`` fixture are checked against ``ember.compile``: after
the eager call, the same function (or module) is compiled, captured on copies of the arguments
(same values, shapes, strides and storage offsets), and replayed on fresh copies; the replay's
result must equal the eager one exactly in float64 (and for integers and booleans), and within the
backend's tolerance otherwise. The random generators are put back to their state before the eager
call for each compiled run, and a module's buffers to their values before it (a batch norm's
running statistics), so that draws and updates are the eager ones; the eager result and state are
what the test goes on with. The compiled runs are made without grad mode (forward replay) and, when
``EMBER_TEST_COMPILE=train`` and the call takes part in autograd, with it too: then the gradients
of a sum of the outputs with respect to the floating inputs and the module's parameters are
compared as well.

``stats`` counts the calls compared, those whose replay ran a captured program and those the
capture sent to eager (with the reasons); the suite's pytest plugin prints them at the end.
"""
from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

import ember
from ember import _dtype as D
from ember.nn.modules.module import Module
from .. import _devices, _state
from ..compiler import _frontend as CF
from ..ops import random as RNG

__all__ = ["enabled", "training_enabled", "check_call", "module_calls_checked", "stats", "reset_stats", "summary"]

ENV = "EMBER_TEST_COMPILE"
_local = threading.local()
stats: dict = {"compared": 0, "replayed": 0, "eager": 0, "grads": 0, "reasons": {}}


def enabled() -> bool:
    """Whether ``EMBER_TEST_COMPILE`` asks for the compiled comparison (any value but "" or "0")."""
    return os.environ.get(ENV, "") not in ("", "0")


def training_enabled() -> bool:
    """Whether the comparison also replays under autograd and compares gradients."""
    return os.environ.get(ENV, "") == "train"


def reset_stats() -> None:
    stats.update(compared=0, replayed=0, eager=0, grads=0, reasons={})


def summary() -> str:
    lines = [f"ember.compile check: {stats['compared']} calls compared, {stats['replayed']} replayed a program, "
             f"{stats['eager']} ran eagerly (breaks by reason below), {stats['grads']} gradient comparisons"]
    for r, n in sorted(stats["reasons"].items(), key=lambda kv: -kv[1])[:10]:
        lines.append(f"  {n:4d}x {r}")
    return "\n".join(lines)


# -- state -------------------------------------------------------------------------------------

def _rng_state():
    return [(g, g._gen.get_state().copy()) for g in list(RNG._defaults.values())]


def _set_rng(saved):
    for g, s in saved:
        g._gen.set_state(s.copy())


def _buffers(module):
    if module is None:
        return []
    return [(b, b.detach().clone(), b._version[0]) for b in module.buffers()]


def _set_buffers(saved):
    with ember.no_grad():
        for b, v, ver in saved:
            b.copy_(v)
            b._version[0] = ver


# -- copies of the arguments ------------------------------------------------------------------

def _copy_tensor(t, requires_grad):
    """A new tensor with ``t``'s values, shape, strides and storage offset."""
    with ember.no_grad():
        span = t.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 0)
        if t.numel() == 0:
            span = t.storage_offset()
        base = t.detach().as_strided((span,), (1,), 0).clone()
        c = base.as_strided(t.shape, t.stride(), t.storage_offset())
    if requires_grad:
        if t.storage_offset() == 0 and t.is_contiguous():
            return c.detach().requires_grad_(True)
        leaf = base.detach().requires_grad_(True)
        return leaf.as_strided(t.shape, t.stride(), t.storage_offset())
    return c


def _copy(a, grad, leaves):
    if isinstance(a, ember.Tensor):
        rg = grad and a.requires_grad
        c = _copy_tensor(a, rg)
        if rg:
            leaves.append(c if c._base is None else c._base)
        return c
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*(_copy(x, grad, leaves) for x in a))
    if a.__class__ in (tuple, list):
        return a.__class__(_copy(x, grad, leaves) for x in a)
    if a.__class__ is dict:
        return {k: _copy(v, grad, leaves) for k, v in a.items()}
    return a


def _tensors(o, acc):
    if isinstance(o, ember.Tensor):
        acc.append(o)
    elif isinstance(o, (tuple, list)):
        for x in o:
            _tensors(x, acc)
    elif isinstance(o, dict):
        for x in o.values():
            _tensors(x, acc)
    return acc


# -- comparison --------------------------------------------------------------------------------

def _host(t):
    a = t.detach().numpy(force=True)
    return a.astype(np.float64) if a.dtype.name == "bfloat16" else a


def _same(got, exp, what, device):
    if isinstance(exp, ember.Tensor):
        if not isinstance(got, ember.Tensor):
            raise AssertionError(f"{what}: compiled returned {type(got).__name__}, eager a tensor")
        if got.shape != exp.shape or got.dtype is not exp.dtype:
            raise AssertionError(f"{what}: compiled {tuple(got.shape)} {got.dtype}, "
                                 f"eager {tuple(exp.shape)} {exp.dtype}")
        a, e = _host(got), _host(exp)
        if exp.dtype in (D.float64, D.complex128) or not (exp.dtype.is_floating_point or exp.dtype.is_complex):
            if not np.array_equal(a, e, equal_nan=a.dtype.kind in "fc"):
                bad = np.argwhere(~((a == e) | (np.isnan(a) & np.isnan(e)) if a.dtype.kind in "fc" else a == e))
                raise AssertionError(f"{what}: compiled differs from eager ({exp.dtype}, must be identical) at "
                                     f"{bad[:4].tolist()}: {a[tuple(bad[0])]!r} vs {e[tuple(bad[0])]!r}")
            return
        rt, at = _devices.canonical(device)._backend.tolerances.get(exp.dtype.name, (1e-5, 1e-6))
        ok = np.isclose(a, e, rtol=rt, atol=at, equal_nan=True)
        if not ok.all():
            i = tuple(np.argwhere(~ok)[0])
            raise AssertionError(f"{what}: compiled differs from eager beyond rtol={rt}, atol={at} in "
                                 f"{(~ok).sum()} of {ok.size} values, e.g. at {i}: {a[i]!r} vs {e[i]!r}")
        return
    if isinstance(exp, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(exp):
            raise AssertionError(f"{what}: compiled returned {type(got).__name__}, eager {type(exp).__name__}")
        for i, (g, e) in enumerate(zip(got, exp)):
            _same(g, e, f"{what}[{i}]", device)
        return
    if isinstance(exp, dict):
        for k in exp:
            _same(got[k], exp[k], f"{what}[{k!r}]", device)
        return
    if exp != got and not (isinstance(exp, float) and exp != exp and got != got):
        raise AssertionError(f"{what}: compiled returned {got!r}, eager {exp!r}")


def _device_of(out, args):
    ts = _tensors(out, []) or _tensors(args, [])
    return ts[0].device if ts else ember.device("cpu")


# -- the check ---------------------------------------------------------------------------------

def check_call(fn, args, kwargs, expected, *, rng=None, module=None, buffers=None, what="call",
               grad_expected=None) -> None:
    """Compare ``ember.compile(fn)`` with the eager result ``expected`` of ``fn(*args, **kwargs)``
    (``args`` as they were before the eager call; ``rng`` the generators' states then; ``module``
    and ``buffers`` the compiled module and its buffers' values then). ``grad_expected``, when
    given, is ``(grads of the leaves, grads of the parameters)`` of the eager call (see
    :func:`_grads`) and the comparison is also made under autograd."""
    device = _device_of(expected, args)
    after_rng = _rng_state()
    after_buf = _buffers(module)
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        with ember.no_grad():
            _forward_check(fn, args, kwargs, expected, rng, module, buffers, what, device, grad=False)
        if grad_expected is not None:
            _forward_check(fn, args, kwargs, expected, rng, module, buffers, what, device, grad=grad_expected)
    finally:
        _local.depth -= 1
        _set_rng(after_rng)
        _set_buffers(after_buf)


def _forward_check(fn, args, kwargs, expected, rng, module, buffers, what, device, grad):
    cf = CF.CompiledFunction(fn, module)
    try:
        for attempt in ("capture", "replay"):
            if rng is not None:
                _set_rng(rng)
            if buffers:
                _set_buffers(buffers)
            leaves: list = []
            a = _copy(args, grad is not False, leaves)
            k = _copy(kwargs, grad is not False, leaves)
            out = cf(*a, **k)
            _same(out, expected, f"{what} ({attempt}{', autograd' if grad is not False else ''})", device)
        stats["compared"] += 1
        progs = cf.programs()
        if progs:
            stats["replayed"] += 1
        else:
            stats["eager"] += 1
            for e in cf._cache.values():
                for b in getattr(e, "reasons", ()):
                    stats["reasons"][b.reason] = stats["reasons"].get(b.reason, 0) + 1
        if grad is not False:
            got = _grads(out, leaves, module)
            if got is not None:
                _same(list(got[0]), list(grad[0]), f"{what} (gradient of the inputs)", device)
                _same(list(got[1]), list(grad[1]), f"{what} (gradient of the parameters)", device)
                stats["grads"] += 1
    finally:
        CF._registry.remove(cf)


def _grads(out, leaves, module):
    """Gradients of the sum of the floating outputs that require grad, with respect to ``leaves``
    and the module's parameters; None when nothing requires grad."""
    outs = [o for o in _tensors(out, []) if o.requires_grad and o.dtype.is_floating_point]
    params = [p for p in module.parameters() if p.requires_grad] if module is not None else []
    wrt = list(leaves) + params
    if not outs or not wrt:
        return None
    total = sum(o.sum() for o in outs)
    gs = ember.autograd.grad(total, wrt, allow_unused=True)
    gs = [g if g is not None else ember.zeros_like(w) for g, w in zip(gs, wrt)]
    return gs[:len(leaves)], gs[len(leaves):]


def busy() -> bool:
    """Whether a compiled check is running in this thread (nested calls are not checked again)."""
    return getattr(_local, "depth", 0) > 0


# -- module calls ------------------------------------------------------------------------------

@contextlib.contextmanager
def module_calls_checked():
    """Within the block, each outermost ``nn.Module`` call is compared with its compiled replay."""
    orig = Module.__call__

    def checked_call(self, *args, **kwargs):
        if busy() or CF.C._active or getattr(CF._disabled, "on", False) or _state.grad.inference:
            return orig(self, *args, **kwargs)
        rng = _rng_state()
        bufs = _buffers(self)
        before = _copy((args, kwargs), True, [])  # leaves where the arguments require grad
        train = training_enabled() and _state.grad.enabled
        if train:
            grad_leaves: list = []
            before_g = _copy(before, True, grad_leaves)
        _local.depth = getattr(_local, "depth", 0) + 1
        try:
            out = orig(self, *args, **kwargs)
        finally:
            _local.depth -= 1
        gexp = None
        if train:
            after_rng, after_buf = _rng_state(), _buffers(self)
            _set_rng(rng)
            _set_buffers(bufs)
            _local.depth += 1
            try:
                gexp = _grads(orig(self, *before_g[0], **before_g[1]), grad_leaves, self)
            finally:
                _local.depth -= 1
                _set_rng(after_rng)
                _set_buffers(after_buf)
        check_call(orig.__get__(self), before[0], before[1], out, rng=rng, module=self, buffers=bufs,
                   what=f"{type(self).__name__} call", grad_expected=gexp)
        return out

    Module.__call__ = checked_call
    try:
        yield
    finally:
        Module.__call__ = orig
