"""Guards: what must hold for a recorded program to replay.

:func:`call_key` is the cache key of one call: for each tensor argument its shape, strides
(contiguity), offset, dtype, device and ``requires_grad``; python numbers, strings and None by value
(they were recorded into the program); named tuples by their items; other objects by identity
(the key holds them, so that their ids are not reused while the entry lives); and the process state the
recording depends on: grad mode, inference mode, the default dtype and device, autocast. The
tensors are collected in order into ``flat``, the inputs of the program.

:func:`module_guard` builds the check of a compiled module's state: every submodule's ``training``
flag, that no submodule has forward hooks, and that each parameter and buffer is still the object
the capture read (a parameter replaced by assignment is a different tensor). Parameter versions
are not guarded: the program reads parameters live, so in-place updates (an optimizer step) need
no new capture. External tensors' storage, shape, strides and ``requires_grad`` are checked by
the program itself (:mod:`._program`).
"""
from __future__ import annotations

from .. import _dtype as D
from .. import _state
from .._layout import SparseParts
from .._tensor import Tensor

__all__: list = []

_grad = _state.grad
_autocast = _state.autocast
_dd = _state.default_device
_SCALARS = (int, float, bool, str, complex, type(None))


class Unguardable(Exception):
    """An argument the capture cannot key on (a batched vmap tensor, a sparse tensor): the call runs
    eagerly."""


def call_key(args: tuple, kwargs: dict, flat: list) -> tuple:
    key = [_grad.enabled, _grad.inference, D._default[0], _dd.current(), _autocast.active]
    for a in args:
        key.append(_arg(a, flat))
    if kwargs:
        for k in kwargs:
            key.append(k)
            key.append(_arg(kwargs[k], flat))
    return tuple(key)


def _arg(a, flat):
    if isinstance(a, Tensor):
        if a._storage is None:
            raise Unguardable("a batched (vmap) tensor argument")
        if a._storage.__class__ is SparseParts:
            raise Unguardable("a sparse tensor argument (its indices and values are not guarded)")
        flat.append(a)
        return (a._shape, a._stride, a._offset, a._dtype, a._device, a._requires_grad, a.__class__)
    if a.__class__ in _SCALARS:
        return (a.__class__, a)
    if a.__class__ in (tuple, list) or (isinstance(a, tuple) and hasattr(a, "_fields")):
        return (a.__class__,) + tuple(_arg(x, flat) for x in a)
    if a.__class__ is dict:
        return (dict,) + tuple((k, _arg(v, flat)) for k, v in a.items())
    return _Same(a)


class _Same:
    """An argument keyed by identity. It holds the object, so that a cache entry keeps it alive
    and a later object cannot take its id (and replay what the capture read from the first)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return other.__class__ is _Same and other.obj is self.obj


def module_guard(module):
    """A function ``() -> bool`` checking ``module``'s state against the present one."""
    g = {}
    conds = []
    for i, m in enumerate(module.modules()):
        g[f"m{i}"] = m
        conds.append(f"m{i}.training is {bool(m.training)!r}")
        conds.append(f"not m{i}._forward_hooks and not m{i}._forward_pre_hooks")
        for kind in ("_parameters", "_buffers"):
            d = m.__dict__.get(kind) or {}
            for name, t in d.items():
                j = len(g)
                g[f"d{j}"] = d
                g[f"p{j}"] = t
                conds.append(f"d{j}.get({name!r}) is p{j}")
    src = "def guard():\n    return " + (" and ".join(conds) or "True") + "\n"
    exec(compile(src, "<ember.compile guard>", "exec"), g)  # noqa: S102 - generated from the module
    return g["guard"]


def module_snapshot(module) -> list:
    """The attributes of every submodule (to find assignments the replay would not repeat)."""
    return [(m, dict(m.__dict__)) for m in module.modules()]


def changed_attributes(snapshot) -> list:
    out = []
    for m, before in snapshot:
        now = m.__dict__
        for k in set(before) | set(now):
            if before.get(k, _missing) is not now.get(k, _missing):
                out.append(f"{type(m).__name__}.{k}")
    return out


_missing = object()
