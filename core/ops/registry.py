"""The op registry and dispatch: the hottest code in ember.

An op is declared once, here in the core (or by a plugin through ``ember_register_ops``), as an
:class:`OpDef`: a name, an optional decomposition into other ops, an optional backward formula
written in ember ops, and what the formula needs saved. Its python front end (``ember.add``...)
validates and normalises the arguments (the meta step: bad input is refused there, naming the op,
shapes, dtypes and devices), then calls :func:`dispatch`:

1. if grad mode is on and an input requires grad, the op is recorded (one node for an op with a
   backward formula; an op without one runs its decomposition and is differentiated through it);
2. the device's kernel runs if the backend has one; else the decomposition; else, with
   ``EMBER_CPU_FALLBACK=1``, the op runs on cpu with a one-time warning; else
   ``NotImplementedError`` naming the op, the backend and what would provide it.
"""
from __future__ import annotations

import os
import warnings
from typing import Callable

from .. import _state
from .._tensor import Tensor
from ..autograd.graph import OpNode, TensorMeta, edge_of, grad_fn_of, view_requires_grad

_grad = _state.grad
ALL = "all"

OPS: dict = {}


class OpDef:
    """The declaration of one op (see the module docstring)."""

    __slots__ = ("name", "fn", "meta", "decomposition", "backward", "saves", "save_output",
                 "differentiable", "primitive", "group", "node_name", "plugin", "doc", "inplace_of")

    def __init__(self, name, fn=None, meta=None, decomposition=None, backward=None, saves=ALL,
                 save_output=False, differentiable=None, primitive=False, group="", plugin="", doc="",
                 inplace_of=None):
        self.name = name
        self.fn = fn
        self.meta = meta
        self.decomposition = decomposition
        self.backward = backward
        self.saves = saves
        self.save_output = save_output
        self.differentiable = (backward is not None or decomposition is not None) if differentiable is None else differentiable
        self.primitive = primitive
        self.group = group
        self.node_name = "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_")) + "Backward0"
        self.plugin = plugin
        self.doc = doc
        self.inplace_of = inplace_of

    def __repr__(self):
        return f"<ember op {self.name}>"

    def __call__(self, *args, **kwargs):
        if self.fn is None:
            raise TypeError(f"op {self.name!r} has no python front end")
        return self.fn(*args, **kwargs)


def register_op(name: str, fn: Callable | None = None, *, meta=None, decomposition=None, backward=None,
                saves=ALL, save_output=False, differentiable=None, primitive=False, group="", plugin="",
                doc="", replace=False) -> OpDef:
    """Declare an op. ``backward(ctx, grad)`` returns one gradient per tensor input (None where
    not needed: ``ctx.needs_input_grad[i]``), reading ``ctx.args`` (the kernel arguments; tensors
    not listed in ``saves`` are replaced by their shape/dtype/device) and ``ctx.out`` (with
    ``save_output``). Broadcast gradients are reduced and cast back to each input by the engine.
    """
    if name in OPS and not replace:
        raise ValueError(f"op {name!r} is already registered (by {OPS[name].plugin or 'ember'})")
    op = OpDef(name, fn, meta, decomposition, backward, saves, save_output, differentiable, primitive,
               group, plugin, doc or (fn.__doc__ if fn is not None and fn.__doc__ else ""))
    OPS[name] = op
    return op


def op(name: str, **kwargs):
    """Decorator form: ``@op("add", backward=...)`` on the front end."""
    def deco(fn):
        register_op(name, fn, **kwargs)
        return fn
    return deco


# -- dispatch ------------------------------------------------------------------------------

def dispatch(op: OpDef, dev, args: tuple, inputs: tuple):
    """Run ``op`` on canonical device ``dev`` with kernel arguments ``args``; ``inputs`` are
    the tensors autograd sees as the op's inputs, in the order the backward formula uses."""
    if _grad.enabled and op.differentiable:
        for t in inputs:
            if t._requires_grad or (t._base is not None and view_requires_grad(t)):
                return _dispatch_grad(op, dev, args, inputs)
    k = dev._kernels.get(op.name)
    if k is not None:
        return k(*args)
    return _no_kernel(op, dev, args)


def run(op: OpDef, dev, args: tuple):
    """Kernel, else decomposition, else fallback; no autograd recording."""
    k = dev._kernels.get(op.name)
    if k is not None:
        return k(*args)
    return _no_kernel(op, dev, args)


def _no_kernel(op, dev, args):
    if op.decomposition is not None:
        return op.decomposition(*args)
    if os.environ.get("EMBER_CPU_FALLBACK") == "1" and dev._type != "cpu":
        return _cpu_fallback(op, dev, args)
    raise NotImplementedError(_missing_message(op, dev))


def _missing_message(op, dev) -> str:
    be = dev._backend
    return (f"{op.name}: backend '{be.name}' (device {dev}) has no kernel for this op and the op has no "
            f"decomposition. A plugin implementing ember_register_kernels for backend '{be.name}' can "
            f"provide it, or set EMBER_CPU_FALLBACK=1 to run it on cpu.")


_warned: set = set()


def _cpu_fallback(op, dev, args):
    from .. import _devices
    cpu = _devices.cpu()
    if op.name not in _warned:
        _warned.add(op.name)
        warnings.warn(f"{op.name}: no kernel on {dev._backend.name}; running it on cpu (EMBER_CPU_FALLBACK=1)",
                      RuntimeWarning, stacklevel=4)
    moved = _map_tensors(args, lambda t: t.to(cpu))
    out = run(op, cpu, moved)
    return _map_out(out, lambda t: t.to(dev))


def _map_tensors(args, f):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(f(a))
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            out.append(type(a)(f(x) for x in a))
        else:
            out.append(a)
    return tuple(out)


def _map_out(out, f):
    if isinstance(out, Tensor):
        return f(out)
    if isinstance(out, (tuple, list)):
        return type(out)(_map_out(o, f) for o in out)
    return out


def _dispatch_grad(op, dev, args, inputs):
    if op.backward is None:
        # differentiated through its parts
        return op.decomposition(*args)
    prev = _grad.enabled
    _grad.enabled = False
    try:
        k = dev._kernels.get(op.name)
        out = k(*args) if k is not None else _no_kernel(op, dev, args)
    finally:
        _grad.enabled = prev
    record(op, args, inputs, out)
    return out


def record(op, args, inputs, out) -> None:
    """Attach one graph node for ``op`` to ``out`` (a tensor or a tuple of tensors)."""
    node = OpNode()
    node.op = op
    nf = []
    needs = []
    metas = []
    for t in inputs:
        e = edge_of(t) if (t._requires_grad or (t._base is not None and view_requires_grad(t))) else (None, 0)
        nf.append(e)
        needs.append(e[0] is not None)
        metas.append((t._shape, t._dtype))
    node.next_functions = tuple(nf)
    node.needs_input_grad = tuple(needs)
    node.in_meta = tuple(metas)
    saves = op.saves
    if saves == ALL:
        node.args = args
        node.saved = tuple((t, t._version[0]) for t in inputs)
    else:
        keep = [inputs[i] for i in saves]
        node.args = _strip(args, inputs, keep)
        node.saved = tuple((t, t._version[0]) for t in keep)
    node._freed = False
    if isinstance(out, tuple):
        node.n_out = len(out)
        node.out_meta = tuple((o._shape, o._dtype, o._device) if isinstance(o, Tensor) and o._dtype.category >= 2 else None
                              for o in out)
        node._out = tuple(_saved_alias(o) for o in out) if op.save_output else None
        if op.save_output:
            node.saved = node.saved + tuple((a, o._version[0]) for a, o in zip(node._out, out) if isinstance(o, Tensor))
        for i, o in enumerate(out):
            if isinstance(o, Tensor) and o._dtype.category >= 2:
                o._requires_grad = True
                o._grad_fn = node
                o._output_nr = i
                if o._base is not None:
                    o._fn_version = o._version[0]
    else:
        node.n_out = 1
        node.out_meta = None
        if op.save_output:
            node._out = _saved_alias(out)
            node.saved = node.saved + ((node._out, out._version[0]),)
        else:
            node._out = None
        if out._dtype.category >= 2:
            out._requires_grad = True
            out._grad_fn = node
            if out._base is not None:
                out._fn_version = out._version[0]


def _saved_alias(o):
    if not isinstance(o, Tensor):
        return o
    from .._tensor import _alias
    a = _alias(o, o._shape, o._stride, o._offset)
    a._base = None
    return a


def _strip(args, inputs, keep):
    """Replace the inputs the formula does not need by their metadata (other tensor arguments,
    such as a condition or an index, are kept)."""
    drop = {id(t) for t in inputs} - {id(t) for t in keep}
    return tuple(_strip_one(a, drop) for a in args)


def _strip_one(a, drop):
    if isinstance(a, Tensor):
        return TensorMeta(a) if id(a) in drop else a
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
        return type(a)(_strip_one(x, drop) for x in a)
    return a


# -- in-place ops -----------------------------------------------------------------------------

def check_inplace(t, opname: str) -> None:
    """PyTorch's refusals for in-place ops under grad mode."""
    if not _grad.enabled:
        return
    if t._requires_grad and t._grad_fn is None and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    b = t._base
    if b is not None and b._requires_grad and b._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def inplace(op: OpDef, target: Tensor, dev, args: tuple, inputs: tuple, self_index: int | None = 0):
    """Run ``op`` writing into ``target``; ``inputs[self_index]`` is ``target`` (None: the op
    does not read target's old value, as ``copy_`` and ``fill_``).

    Without autograd the kernel writes through ``out=`` when it can, else its result is copied.
    With autograd the op is recorded out of place and ``target`` takes over its history; a
    view's base is rebased through ``CopySlices``.
    """
    if _grad.enabled:
        tracked = target._requires_grad or (target._base is not None and target._base._requires_grad)
        if not tracked:
            for t in inputs:
                if t._requires_grad or (t._base is not None and view_requires_grad(t)):
                    tracked = True
                    break
        if tracked:
            check_inplace(target, op.name)
            return _inplace_grad(op, target, dev, args, inputs, self_index)
    _write(op, target, dev, args)
    return target


def _write(op, target, dev, args):
    check_overlap(target, op.name)
    if op.name in dev._backend.out_kernels:
        dev._kernels[op.name](*args, out=target)
    else:
        r = run(op, dev, args)
        if r is not target:
            dev._kernels["copy_"](target, r)
    target._version[0] += 1


def _inplace_grad(op, target, dev, args, inputs, self_index):
    from ..autograd.graph import CopySlices
    if self_index is not None and op.differentiable and (op.saves == ALL or self_index in op.saves):
        # the formula needs the old value of target, which the write destroys: save a copy
        from . import clone as _clone
        old = _clone(target)
        args = tuple(old if a is target else a for a in args)
        inputs = tuple(old if a is target else a for a in inputs)
    r = dispatch(op, dev, args, inputs)
    prev = _grad.enabled
    _grad.enabled = False
    try:
        check_overlap(target, op.name)
        dev._kernels["copy_"](target, r)
        target._version[0] += 1
    finally:
        _grad.enabled = prev
    fn = r._grad_fn if r._requires_grad else None
    base = target._base
    if base is None:
        if fn is None:
            target._grad_fn = None
            target._requires_grad = False
        else:
            target._grad_fn = fn
            target._output_nr = r._output_nr
            target._requires_grad = True
        return target
    if fn is None and not base._requires_grad:
        return target
    node = CopySlices()
    node.fn = fn
    node.self_index = self_index
    node.geometry = (target._shape, target._stride, target._offset)
    node.base_geom = (base._shape, base._stride, base._offset)
    base_edge = edge_of(base) if base._requires_grad else (None, 0)
    if fn is None:
        rest, rest_meta = [], []
    elif self_index is None:
        rest, rest_meta = list(fn.next_functions), list(fn.in_meta)
    else:
        rest = [e for i, e in enumerate(fn.next_functions) if i != self_index]
        rest_meta = [m for i, m in enumerate(fn.in_meta) if i != self_index]
    node.next_functions = (base_edge, *rest)
    node.needs_input_grad = tuple(e[0] is not None for e in node.next_functions)
    node.in_meta = ((base._shape, base._dtype), *rest_meta)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    # the view itself becomes as_strided of the base's new history
    target._requires_grad = True
    target._fn_version = -1
    grad_fn_of(target)
    return target


def check_overlap(t, opname: str) -> None:
    """Refuse writes into tensors where several elements share one memory location."""
    for s, st in zip(t._shape, t._stride):
        if st == 0 and s > 1:
            raise RuntimeError(
                f"{opname}: unsupported operation: more than one element of the written-to tensor refers to a "
                "single memory location. Please clone() the tensor before performing the operation.")
