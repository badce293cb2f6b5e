"""Guards: what must hold for a recorded program to replay.

:func:`call_key` is the cache key of one call: for each tensor argument its shape, strides
(contiguity), offset, dtype, device and ``requires_grad``; python numbers, strings and None by value
(they were recorded into the program); a tensor passed twice by the index of its first place
(one input of the program); numpy scalars by value; tuples of any class (named tuples, ``Size``)
by their items; other objects by identity
(the key holds them, so that their ids are not reused while the entry lives); and the process state the
recording depends on: grad mode, inference mode, the default dtype and device, autocast. The
tensors are collected in order into ``flat``, the inputs of the program.

:func:`modules_guard` builds the check of a compiled module's state: every submodule's ``training``
flag, that no submodule has forward hooks, and that each parameter and buffer is still the object
the capture read (a parameter replaced by assignment is a different tensor). Parameter versions
are not guarded: the program reads parameters live, so in-place updates (an optimizer step) need
no new capture. External tensors' storage, shape, strides and ``requires_grad`` are checked by
the program itself (:mod:`._program`).
"""
from __future__ import annotations

import operator
import types

import numpy as np

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
        for j in range(len(flat)):
            if flat[j] is a:  # the same tensor passed again: one input of the program, and a key
                return j      # of its own (a capture of f(a, a) must not replay for f(a, b))
        flat.append(a)
        return (a._shape, a._stride, a._offset, a._dtype, a._device, a._requires_grad, a.__class__)
    if a.__class__ in _SCALARS:
        return (a.__class__, a)
    if isinstance(a, np.generic):  # a numpy scalar (np.float32(0.5)): by value, as a python number
        return (a.__class__, a.item())
    if a.__class__ in (tuple, list) or isinstance(a, tuple):  # (named tuples, ember.Size)
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


def modules_guard(modules):
    """A function ``() -> bool`` checking the state of each module in ``modules`` against the
    present one: its ``training`` flag, that it has no forward hooks, each parameter and buffer
    the same object, and every other attribute as it is now: python numbers, strings and None by
    value, anything else (tuples, functions, configs, plain tensors) the same object or an equal
    one. Forward code reads these (``self.scale``, ``self.use_bias``, ``self.act``); the program
    recorded the values the capture read, so a changed one must capture again. Objects changed in
    place (a list appended to, a config's field set) are not seen. Module's own bookkeeping
    (hook dicts, the parameter, buffer and child dicts) is left out: it is checked above or never
    replaced. The attributes are compared only when ``Module.__setattr__``/``__delattr__`` ran
    since the last passing check (a counter in ``_state``): a replay in a loop that assigns no
    module attribute pays one integer comparison for them (a write straight into a module's
    ``__dict__`` is not seen)."""
    g = {"_writes": _state.module_attribute_writes, "_seen": [_state.module_attribute_writes[0]]}
    conds = []
    attrs = []  # compared only when some module attribute was assigned since the last check passed
    for i, m in enumerate(modules):
        d = m.__dict__
        g[f"m{i}"] = m
        g[f"a{i}"] = d
        conds.append(f"m{i}.training is {bool(m.training)!r}")
        conds.append(f"not m{i}._forward_hooks and not m{i}._forward_pre_hooks")
        for kind in ("_parameters", "_buffers"):
            entries = d.get(kind) or {}
            for name, t in entries.items():
                j = len(g)
                g[f"d{j}"] = entries
                g[f"p{j}"] = t
                conds.append(f"d{j}.get({name!r}) is p{j}")
        internal = m._internal_attributes
        own = [(k, v) for k, v in d.items() if k not in internal]
        if own:  # one tuple comparison: identical items match without their __eq__ being called
            g[f"k{i}"], g[f"v{i}"] = tuple(k for k, _ in own), tuple(v for _, v in own)
            attrs.append(f"tuple(map(a{i}.get, k{i})) == v{i}")
    # (an attribute replaced by an object whose == raises, an array or a tensor: not the same state)
    src = ("def attributes():\n    try:\n        return " + (" and ".join(attrs) or "True")
           + "\n    except Exception:\n        return False\n"
           "def guard():\n    if not (" + (" and ".join(conds) or "True") + "):\n        return False\n"
           "    n = _writes[0]\n    if n == _seen[0]:\n        return True\n"
           "    if attributes():\n        _seen[0] = n\n        return True\n    return False\n")
    exec(compile(src, "<ember.compile guard>", "exec"), g)  # noqa: S102 - generated from the modules
    return g["guard"]


def function_snapshot(fn):
    """The python variables ``fn`` itself reads besides its arguments: the globals its code names
    and the cells of its closure, as ``(place, key, value)`` triples (none for an object that is not
    a python function, or ember's own ``Module.__call__``)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None or fn.__module__ == "ember.nn.modules.module":
        return []
    out = []
    glob = fn.__globals__
    for name in code.co_names:
        if name in glob:
            out.append((glob, name, glob[name]))
    for cell in fn.__closure__ or ():
        try:
            out.append((cell, None, cell.cell_contents))
        except ValueError:  # an empty cell (a variable assigned later)
            pass
    return out


def argument_snapshot(key) -> list:
    """The attributes of the objects the call's key holds by identity (``self`` of a compiled
    method, a config or trainer passed as an argument), as ``(obj.__dict__, name, value)`` triples
    like :func:`function_snapshot`'s: the function reads them as it reads its globals."""
    out = []
    todo = list(key)
    while todo:
        k = todo.pop()
        if k.__class__ is tuple:
            todo.extend(k)
        elif k.__class__ is _Same:
            d = getattr(k.obj, "__dict__", None)
            if d.__class__ is dict and not isinstance(k.obj, _NOT_STATE):
                internal = getattr(k.obj, "_internal_attributes", ())  # (an nn.Module's bookkeeping)
                out.extend((d, name, v) for name, v in d.items() if name not in internal)
                out.append((d, _NAMES, frozenset(d)))  # an attribute added inside the call is one assigned
    return out


_NAMES = object()  # the key of an argument_snapshot entry holding the attribute names
_NOT_STATE = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType)


def _now(place, key):
    if key is None:
        try:
            return place.cell_contents
        except ValueError:
            return _missing
    return place.get(key, _missing)


def changed_variables(snapshot) -> list:
    """The names in ``snapshot`` assigned since (inside the call: a replay would not assign them)."""
    return [key or "(a closure variable)" for place, key, v in snapshot
            if key is not _NAMES and _now(place, key) is not v]


def added_attributes(snapshot) -> list:
    """The attributes added since to the objects of ``snapshot`` (a first use's lazy set-up,
    ``self.cache = ...``; the call captures again next time, when they exist)."""
    return [name for place, key, v in snapshot if key is _NAMES for name in sorted(set(place) - v)]


def variables_guard(snapshot):
    """A function ``() -> bool``: the variables of ``snapshot`` hold what they held (python numbers,
    strings and None by value, anything else by identity), or None where there are none."""
    if not snapshot:
        return None
    g = {"_is": operator.is_}
    conds = []
    by_dict: dict = {}
    for place, key, v in snapshot:
        if key is _NAMES:
            continue  # (read by changed_variables only)
        if key is None:  # a closure cell
            n = len(g)
            g[f"c{n}"], g[f"v{n}"] = place, v
            conds.append(f"c{n}.cell_contents {'==' if v.__class__ in _SCALARS else 'is'} v{n}")
        else:
            by_dict.setdefault(id(place), (place, []))[1].append((key, v))
    for i, (place, items) in enumerate(by_dict.values()):
        g[f"g{i}"] = place
        scalars = [(k, v) for k, v in items if v.__class__ in _SCALARS]
        objects = [(k, v) for k, v in items if v.__class__ not in _SCALARS]
        if scalars:
            g[f"ks{i}"], g[f"vs{i}"] = tuple(k for k, _ in scalars), tuple(v for _, v in scalars)
            conds.append(f"tuple(map(g{i}.get, ks{i})) == vs{i}")
        if objects:
            g[f"ko{i}"], g[f"vo{i}"] = tuple(k for k, _ in objects), tuple(v for _, v in objects)
            conds.append(f"all(map(_is, map(g{i}.get, ko{i}), vo{i}))")
    src = ("def guard():\n    try:\n        return " + (" and ".join(conds) or "True")
           + "\n    except ValueError:  # a closure cell emptied since\n        return False\n")
    exec(compile(src, "<ember.compile guard>", "exec"), g)  # noqa: S102 - generated from the snapshot
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
