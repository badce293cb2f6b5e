"""What plugins register besides backends: ops, ``nn`` modules and optimizers.

Ops are declared with the core's own declaration (:mod:`ember.ops.declare`) and become
``ember.ops.<name>`` (and ``ember.<name>`` when free); modules and optimizers are collected on
first lookup of a name ``ember.nn`` / ``ember.optim`` does not define itself. This module plugs
itself into the plugin manager (:data:`ember._plugins.registrars`) when ``import ember`` loads it.
"""
from __future__ import annotations

import sys

from . import _methods, _plugins
from ._tensor import Tensor
from .ops.declare import composite, defop
from .ops.registry import OPS

modules: dict = {}      # name -> (cls, plugin)
optimizers: dict = {}   # name -> (cls, plugin)
plugin_ops: dict = {}   # plugin -> [op names]
modules_pending = False
optimizers_pending = False


def register_op_from_plugin(name: str, meta=None, *, impl=None, method: bool = False, **declaration):
    """The ``register`` callable of ``ember_register_ops``: :func:`ember.ops.declare.defop` (with
    ``meta``) or :func:`~ember.ops.declare.composite` (with ``impl``), for the plugin being
    registered. The generated front end becomes ``ember.ops.<name>``, and ``ember.<name>`` (a
    ``Tensor`` method with ``method=True``) unless that name is taken; it is returned."""
    plugin = _plugins._current_plugin[0]
    info = _plugins.plugins.get(plugin)
    module = getattr(getattr(info, "module", None), "__name__", None) or plugin or "ember.ops"
    if (meta is None) == (impl is None):
        raise TypeError(f"register({name!r}): give exactly one of meta (a kernel op) or impl (a composite op)")
    if impl is not None:
        front = composite(name, impl, plugin=plugin, method=method, module=module, **declaration)
    else:
        front = defop(name, meta, plugin=plugin, method=method, module=module, **declaration)
    plugin_ops.setdefault(plugin, []).append(name)
    for mod in (sys.modules["ember.ops"], sys.modules["ember"]):
        if not hasattr(mod, name):
            setattr(mod, name, front)
    if method:
        _methods.bind_op(front.op)
    return front


def _register_module(cls, name=None):
    modules[name or cls.__name__] = (cls, _plugins._current_plugin[0])


def _register_optimizer(cls, name=None):
    optimizers[name or cls.__name__] = (cls, _plugins._current_plugin[0])


def collect_modules() -> dict:
    global modules_pending
    _plugins.load()
    if modules_pending:
        modules_pending = False
        _plugins._call_each("ember_register_modules", register=_register_module)
    return modules


def collect_optimizers() -> dict:
    global optimizers_pending
    _plugins.load()
    if optimizers_pending:
        optimizers_pending = False
        _plugins._call_each("ember_register_optimizers", register=_register_optimizer)
    return optimizers


def lookup_module(name: str):
    entry = collect_modules().get(name)
    return None if entry is None else entry[0]


def lookup_optimizer(name: str):
    entry = collect_optimizers().get(name)
    return None if entry is None else entry[0]


def unregister_plugin_names(plugin: str) -> None:
    """Remove what a plugin registered: its ops (from OPS, ember.ops, ember, Tensor), modules and
    optimizers."""
    for name in plugin_ops.pop(plugin, []):
        op = OPS.pop(name, None)
        if op is None:
            continue
        for mod in (sys.modules["ember.ops"], sys.modules["ember"]):
            if getattr(mod, name, None) is op.fn:
                delattr(mod, name)
        for fn in (op.fn, op.inplace_fn):
            if fn is not None and Tensor.__dict__.get(fn.__name__) is fn:
                delattr(Tensor, fn.__name__)
    for table in (modules, optimizers):
        for k in [k for k, (_, p) in table.items() if p == plugin]:
            del table[k]


def _mark_pending() -> None:
    """After a round of registration hooks: modules and optimizers are collected again on the
    next lookup."""
    global modules_pending, optimizers_pending
    modules_pending = optimizers_pending = True


# take part in plugin registration (the plugin manager sits below this module)
_plugins.registrars.ops = register_op_from_plugin
_plugins.registrars.after_register.append(_mark_pending)
_plugins.registrars.on_unregister.append(unregister_plugin_names)
