"""What plugins register besides backends: ops, ``nn`` modules and optimizers.

Ops become ``ember.ops.<name>`` (and ``ember.<name>`` when free); modules and optimizers are
collected on first lookup of a name ``ember.nn`` / ``ember.optim`` does not define itself.
"""
from __future__ import annotations

from . import _plugins

modules: dict = {}      # name -> (cls, plugin)
optimizers: dict = {}   # name -> (cls, plugin)
plugin_ops: dict = {}   # plugin -> [op names]
modules_pending = False
optimizers_pending = False


def register_op_from_plugin(name, fn=None, **kwargs):
    from . import ops
    from .ops.registry import OpDef, register_op
    plugin = _plugins._current_plugin[0]
    op = register_op(name, fn, plugin=plugin, **kwargs)
    plugin_ops.setdefault(plugin, []).append(name)
    front = fn if fn is not None else _generic_front_end(op)
    op.fn = front
    if not hasattr(ops, name):
        setattr(ops, name, front)
    import ember
    if not hasattr(ember, name):
        setattr(ember, name, front)
    assert isinstance(op, OpDef)
    return op


def _generic_front_end(op):
    """A front end for an op registered without one: runs ``meta`` (which validates and may
    raise), finds the tensors among the arguments, and dispatches."""
    import inspect

    from ._tensor import Tensor
    from .ops._args import common_device
    from .ops.registry import dispatch
    sig_src = op.meta or op.decomposition
    sig = inspect.signature(sig_src) if sig_src is not None else None

    def front(*args, **kwargs):
        if sig is not None and kwargs:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        elif sig is not None:
            bound = sig.bind(*args)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        if op.meta is not None:
            op.meta(*args)
        tensors = []
        for a in args:
            if isinstance(a, Tensor):
                tensors.append(a)
            elif isinstance(a, (list, tuple)):
                tensors.extend(x for x in a if isinstance(x, Tensor))
        if not tensors:
            raise TypeError(f"{op.name}(): expected at least one Tensor argument")
        dev = common_device(op.name, *tensors)
        return dispatch(op, dev, args, tuple(tensors))
    front.__name__ = op.name
    front.__doc__ = op.doc
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
    from . import ops
    from .ops.registry import OPS
    import ember
    for name in plugin_ops.pop(plugin, []):
        op = OPS.pop(name, None)
        for mod in (ops, ember):
            if op is not None and getattr(mod, name, None) is op.fn:
                delattr(mod, name)
    for table in (modules, optimizers):
        for k in [k for k, (_, p) in table.items() if p == plugin]:
            del table[k]
