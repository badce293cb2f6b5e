"""The op registry and dispatch: the hottest code in ember.

An op is declared once, here in the core (or by a plugin through ``ember_register_ops``), as an
:class:`OpDef`: a name, an optional decomposition into other ops, an optional backward formula
written in ember ops, and what the formula needs saved. Its python front end (``ember.add``...)
validates and normalises the arguments (the meta step: bad input is refused there, naming the op,
shapes, dtypes and devices), then calls :func:`dispatch`:

1. if grad mode is on and an input requires grad, the op is recorded (one node for an op with a
   backward formula; an op without one runs its decomposition and is differentiated through it);
2. the device's kernel runs if the backend has one; else the decomposition; else the op's
   declared **host path** (``host``: a function on numpy arrays, for the factorizations numpy
   has and a backend may lack: the inputs are copied to the host with the backend's
   ``to_numpy``, computed there and copied back with ``from_numpy``; the coverage table reports
   these ops as "host"); else, with ``EMBER_CPU_FALLBACK=1``, the op runs on cpu with a one-time
   warning; else ``NotImplementedError`` naming the op, the backend and what would provide it.
"""
from __future__ import annotations

import os
import warnings
from typing import Callable

import numpy as np

from .. import _devices, _state
from .._layout import SparseKernels, SparseParts
from .._tensor import Tensor, _alias
from .._graph import OpNode, TensorMeta, accumulate_node, grad_fn_of, pack_saved, view_requires_grad
from .._graph import _seq, _stack

_grad = _state.grad
_vm = _state.vmap
_vmap_open = _state.vmap_open
_autocast = _state.autocast
_hooks_open = _state.saved_hooks_open
_anomaly = _state.anomaly
_new = object.__new__
ALL = "all"
_NO_EDGE = (None, 0)

OPS: dict = {}

#: ``(op, x, view, args)`` -> None, called for every view made while a tracer (``ember.onnx.export``)
#: records the ops a model runs; None otherwise (one global read per view). Kernel and
#: decomposed ops reach a tracer through the device's kernel table, which it swaps while it traces.
view_tracer = None


class OpDef:
    """The declaration of one op (see the module docstring and :func:`ember.ops.declare.defop`).

    ``fn`` is the public front end (``ember.<name>``), ``inplace_fn`` its in-place form
    (``Tensor.<name>_``) when the op has one; ``composite`` ops are written in other ops and have
    no dispatch boundary of their own. ``result`` says what an in-place form may assume of the
    kernel's result: ``"elementwise"`` (the first argument's dtype, the broadcast shape of the
    tensor arguments), ``"first"`` (the first argument's shape and dtype) or None (unknown: the
    in-place form computes out of place and writes back).
    """

    __slots__ = ("name", "fn", "inplace_fn", "meta", "decomposition", "backward", "saves", "save_output",
                 "differentiable", "composite", "result", "method", "group", "node_name", "plugin", "doc", "host",
                 "materialize")

    def __init__(self, name, fn=None, meta=None, decomposition=None, backward=None, saves=ALL,
                 save_output=False, differentiable=None, group="", plugin="", doc="", composite=False,
                 result=None, method=False, host=None, materialize=True):
        self.name = name
        self.host = host
        self.materialize = materialize
        self.fn = fn
        self.inplace_fn = None
        self.meta = meta
        self.decomposition = decomposition
        self.backward = backward
        self.saves = saves
        self.save_output = save_output
        self.differentiable = ((backward is not None or decomposition is not None) if differentiable is None
                               else differentiable)
        self.composite = composite
        self.result = result
        self.method = method
        self.group = group
        self.node_name = "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_")) + "Backward0"
        self.plugin = plugin
        self.doc = doc

    def __repr__(self):
        return f"<ember op {self.name}>"

    def __call__(self, *args, **kwargs):
        """The public front end; an internal op without one takes its kernel arguments."""
        if self.fn is not None:
            return self.fn(*args, **kwargs)
        if kwargs:
            raise TypeError(f"op {self.name!r} has no python front end: call it with its kernel arguments, "
                            "positionally")
        tensors = tensors_in(args)
        if not tensors:
            raise TypeError(f"{self.name}(): expected at least one Tensor argument")
        return dispatch(self, tensors[0]._device, args, tuple(tensors))


def saved_inputs(op: OpDef, args: tuple, inputs: tuple) -> tuple | str:
    """The indices of the inputs ``op``'s backward reads (or ALL), for these arguments."""
    saves = op.saves
    if callable(saves):
        return saves(args, tuple(t._requires_grad or (t._base is not None and view_requires_grad(t)) for t in inputs))
    return saves


def tensors_in(args) -> list:
    """The tensors among ``args``, looking one level into lists and tuples."""
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(x for x in a if isinstance(x, Tensor))
    return out


def register_op(name: str, fn: Callable | None = None, *, meta=None, decomposition=None, backward=None,
                saves=ALL, save_output=False, differentiable=None, group="", plugin="", doc="", composite=False,
                result=None, method=False, replace=False, host=None, materialize=True) -> OpDef:
    """Enter an op into :data:`OPS` (the low-level step of :func:`ember.ops.declare.defop`, which
    also builds the front ends). ``backward(ctx, grad)`` returns one gradient per tensor input
    (None where not needed: ``ctx.needs_input_grad[i]``), reading ``ctx.args`` (the kernel
    arguments; tensors not listed in ``saves`` are replaced by their shape/dtype/device) and
    ``saves`` may also be a function ``(args, needs_input_grad) -> indices``, for formulas that
    read an input only for another input's gradient (``mul``: ``a`` only when ``b`` needs one).
    ``ctx.out`` (with ``save_output``: True saves the output, or every output of an op with
    several; a tuple of indices saves those outputs only, the others read as None). Only what is
    saved is version-checked, so save only what the formula reads. Broadcast gradients are
    reduced and cast back to each input by the engine. ``host`` is the op's host path: a function
    of the kernel arguments with numpy arrays for tensors, returning an array or a tuple of
    arrays, run (copying through the host) where the backend has no kernel and the op no
    decomposition. ``materialize=False``: the backward of an op with several outputs receives
    None, not zeros, for the outputs that got no gradient (the factorizations' formulas tell an
    unused factor from a zero gradient, as PyTorch's undefined gradients do).
    """
    if name in OPS and not replace:
        raise ValueError(f"op {name!r} is already registered (by {OPS[name].plugin or 'ember'})")
    op = OpDef(name, fn, meta, decomposition, backward, saves, save_output, differentiable, group, plugin,
               doc or (fn.__doc__ if fn is not None and fn.__doc__ else ""), composite, result, method, host,
               materialize)
    OPS[name] = op
    return op


# -- dispatch ------------------------------------------------------------------------------

def dispatch(op: OpDef, dev, args: tuple, inputs: tuple):
    """Run ``op`` on canonical device ``dev`` with kernel arguments ``args``; ``inputs`` are
    the tensors autograd sees as the op's inputs, in the order the backward formula uses."""
    mode = _grad.enabled
    if mode and op.differentiable:
        for t in inputs:
            if t._requires_grad or (t._base is not None and view_requires_grad(t)):
                if op.backward is None or dev._kernels.__class__ is SparseKernels:
                    return _through_parts(op, dev, args)
                k = dev._kernels.get(op.name)
                _grad.enabled = False  # the kernel runs with grad mode off; one node is recorded
                try:
                    if k is not None and not _vmap_open[0]:
                        out = k(*args)  # (_run's kernel path, inline)
                    else:
                        out = _run(op, dev, k, args)
                except MemoryError as e:
                    raise RuntimeError(f"{op.name}: can't allocate memory: {e}") from None
                finally:
                    _grad.enabled = mode
                record(op, args, inputs, out)
                return out
    k = dev._kernels.get(op.name)
    if k is not None and not _vmap_open[0]:
        try:  # (run's kernel path, inline)
            return k(*args)
        except MemoryError as e:
            raise RuntimeError(f"{op.name}: can't allocate memory: {e}") from None
    return _run(op, dev, k, args)


def run(op: OpDef, dev, args: tuple):
    """Kernel, else decomposition, else fallback; no autograd recording. A result too large for
    memory raises PyTorch's RuntimeError (numpy's MemoryError is not one)."""
    return _run(op, dev, dev._kernels.get(op.name), args)


def _run(op, dev, k, args):
    """:func:`run` with the device's kernel ``k`` for the op (or None) looked up."""
    try:
        if k is not None:
            if _vmap_open[0] and _vm.depth and _batched(args):
                return _below_vmap(op, args)
            return k(*args)
        return _no_kernel(op, dev, args)
    except MemoryError as e:
        raise RuntimeError(f"{op.name}: can't allocate memory: {e}") from None


def _batched(args) -> bool:
    """Whether a kernel argument is an ``ember.func.vmap`` batched tensor (it has no storage)."""
    for a in args:
        if isinstance(a, Tensor) and a._storage is None:
            return True
        if a.__class__ in (list, tuple) and _batched(a):
            return True
    return False


def _below_vmap(op, args):
    """A batched tensor reached a kernel through a direct ``dispatch`` (inside a composite op):
    the op's decomposition batches it through its parts."""
    if op.decomposition is not None:
        return op.decomposition(*args)
    raise RuntimeError(f"vmap: {op.name} was reached with a batched tensor below the op fronts and has no "
                       "decomposition; ember.func.vmap has no batching rule for the op that called it")


def _no_kernel(op, dev, args):
    if op.decomposition is not None:
        if _autocast.active:
            return _decompose_suspended(op, args)
        return op.decomposition(*args)
    if op.host is not None:
        return _host_run(op, dev, args)
    if os.environ.get("EMBER_CPU_FALLBACK") == "1" and dev._type != "cpu":
        return _cpu_fallback(op, dev, args)
    raise NotImplementedError(_missing_message(op, dev))


def _decompose_suspended(op, args):
    """An op's decomposition under autocast: the ops it is made of run as the kernel would, not
    cast again (PyTorch's kernels run below the Autocast dispatch key)."""
    _autocast.suspended += 1
    _autocast.active = False
    try:
        return op.decomposition(*args)
    finally:
        _autocast.suspended -= 1
        _autocast.refresh()


def _missing_message(op, dev) -> str:
    be = dev._backend
    return (f"{op.name}: backend '{be.name}' (device {dev}) has no kernel for this op and the op has no "
            f"decomposition. A plugin implementing ember_register_kernels for backend '{be.name}' can "
            f"provide it, or set EMBER_CPU_FALLBACK=1 to run it on cpu.")


def _host_run(op, dev, args):
    """The op's declared host path: tensor arguments copied to numpy arrays (the backend's
    ``to_numpy``), ``op.host`` run on them, its arrays copied back (``from_numpy``)."""
    be = dev._backend
    harg = tuple(be.to_numpy(a) if isinstance(a, Tensor) else a for a in args)
    out = op.host(*harg)
    if isinstance(out, tuple):
        return tuple(be.from_numpy(np.asarray(o, order="C"), dev) for o in out)
    return be.from_numpy(np.asarray(out, order="C"), dev)  # (ascontiguousarray would make a 0-d array 1-d)


_warned: set = set()


def _cpu_fallback(op, dev, args):
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


def _through_parts(op, dev, args):
    """An op recorded through what it is made of: a sparse tensor's composition over its values,
    or the decomposition of an op without a backward formula."""
    if dev._kernels.__class__ is SparseKernels:
        return dev._kernels.get(op.name)(*args)
    if _autocast.active:
        return _decompose_suspended(op, args)
    return op.decomposition(*args)


def record(op, args, inputs, out) -> None:
    """Attach one graph node for ``op`` to ``out`` (a tensor or a tuple of tensors)."""
    node = _new(OpNode)  # (ember._graph.op_node, inline)
    node._seq = next(_seq)
    node._pre_hooks = node._hooks = node._tensor_hooks = node._retain = None
    node._trace = _stack(2) if _anomaly.enabled else None  # (up to dispatch)
    node.op = op
    nf = []
    needs = []
    metas = []
    for t in inputs:
        if t._requires_grad or (t._base is not None and view_requires_grad(t)):
            # (edge_of, inline: this loop runs for every input of every recorded op)
            fn = t._grad_fn if t._base is None else grad_fn_of(t)
            if fn is None:
                ref = t._accum
                fn = ref() if ref is not None else None
                nf.append((accumulate_node(t) if fn is None else fn, 0))
            else:
                nf.append((fn, t._output_nr))
            needs.append(True)
        else:
            nf.append(_NO_EDGE)
            needs.append(False)
        metas.append((t._shape, t._dtype))
    node.next_functions = tuple(nf)
    node.needs_input_grad = needs = tuple(needs)
    node.in_meta = tuple(metas)
    saves = op.saves
    if saves.__class__ is not tuple and callable(saves):
        saves = saves(args, needs)
    saved = []
    if saves == ():  # (add, sub and the like: nothing saved, the arguments' metadata only)
        node.args = _strip(args, inputs, saved)
    elif saves == ALL:
        node.args = args
        for t in inputs:
            saved.append((t, t._version[0]))
    else:
        for i in saves:
            t = inputs[i]
            saved.append((t, t._version[0]))
        node.args = _strip(args, inputs, saved)
    node._freed = False
    if isinstance(out, tuple):
        node.n_out = len(out)
        node.out_meta = tuple((o._shape, o._dtype, o._device) if isinstance(o, Tensor) and o._dtype.category >= 2
                              else None for o in out)
        so = op.save_output
        if so:
            # only the outputs the formula reads are saved (and version-checked): an in-place op on
            # another output (batch_norm's result, sort's values) must not break backward
            node._out = tuple(_saved_alias(o) if so is True or i in so else None for i, o in enumerate(out))
            saved.extend((a, o._version[0]) for a, o in zip(node._out, out) if isinstance(a, Tensor))
        else:
            node._out = None
        for i, o in enumerate(out):
            if isinstance(o, Tensor) and o._dtype.category >= 2:
                _own_history(o)
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
            saved.append((node._out, out._version[0]))
        else:
            node._out = None
        if out._dtype.category >= 2:
            b = out._base
            if b is not None and not b._requires_grad:  # (_own_history, inline)
                out._base = b = None
            out._requires_grad = True
            out._grad_fn = node
            if b is not None:
                out._fn_version = out._version[0]
    node.saved = tuple(saved)
    if _hooks_open[0] and _grad.saved_hooks is not None:
        pack_saved(node)


def _own_history(o: Tensor) -> None:
    """An op's output that is a view of a tensor outside autograd (a decomposition's ``r.squeeze()``)
    stops being a view: its history is the op's node, which an in-place op on it must extend,
    not rebase onto the untracked base (that would drop the op's gradient)."""
    if o._base is not None and not o._base._requires_grad:
        o._base = None


def make_view(op: OpDef, x: Tensor, shape: tuple, stride: tuple, offset: int, args: tuple) -> Tensor:
    """The view op ``op`` of ``x``: an alias sharing storage and version counter with the given
    geometry, with one graph node recorded (``op.backward``) when ``x`` takes part in autograd.
    Views are made here, in the core, for every backend; a sparse tensor's view ops are its
    kernel table's (:class:`~ember._layout.SparseKernels`: ``t()``/``transpose``, or refused)."""
    if x._storage.__class__ is SparseParts:
        return x._device._kernels.view(op, x, args)
    if offset != x._offset and 0 in shape:
        offset = x._offset  # an empty view addresses nothing: never point it past the end of the storage
    v = _alias(x, shape, stride, offset)
    if view_tracer is not None:
        view_tracer(op, x, v, args)
    if _grad.enabled and (x._requires_grad or (x._base is not None and view_requires_grad(x))):
        record(op, args, (x,), v)
        if v._base is None and x._base is not None:
            # a view of a leaf view (``t[1:].requires_grad_()``) stays a view of its base, as in
            # PyTorch, where an in-place op on it is refused (a view of a leaf)
            v._base = x._base
    return v


def _saved_alias(o):
    if not isinstance(o, Tensor):
        return o
    a = _alias(o, o._shape, o._stride, o._offset)
    a._base = None
    return a


def _strip(args, inputs, saved):
    """Replace the inputs the formula does not need (those not in ``saved``, the ``(tensor,
    version)`` pairs kept) by their metadata (other tensor arguments, such as a condition or an
    index, are kept)."""
    if not saved:  # (the common plans of add, sub and the like, nothing saved)
        n = len(args)
        if args is inputs:  # two tensors, or one
            if n == 2:
                return (TensorMeta(args[0]), TensorMeta(args[1]))
            if n == 1:
                return (TensorMeta(args[0]),)
        elif n == 2 and len(inputs) == 1 and args[0] is inputs[0] and args[1].__class__ in (float, int, bool):
            return (TensorMeta(args[0]), args[1])  # a tensor and a number
    if len(inputs) > 4:
        drop = set(map(id, inputs))
        for t, _ in saved:
            drop.discard(id(t))
        return tuple(_strip_one(a, drop) for a in args) if drop else args
    drop = None  # a few inputs (almost every op): identity scans, no sets of ids
    for t in inputs:
        for k, _ in saved:
            if t is k:
                break
        else:
            if drop is None:
                drop = [t]
            else:
                drop.append(t)
    if drop is None:
        return args
    out = []
    for a in args:
        if isinstance(a, Tensor):
            for d in drop:
                if a is d:
                    a = TensorMeta(a)
                    break
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            a = _strip_one(a, set(map(id, drop)))
        out.append(a)
    return tuple(out)


def _strip_one(a, drop):
    if isinstance(a, Tensor):
        return TensorMeta(a) if id(a) in drop else a
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
        return type(a)(_strip_one(x, drop) for x in a)
    return a
