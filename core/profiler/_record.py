"""Recording: while a profiler records, three tables that ember already looks things up in are
swapped for timing ones, and swapped back when it stops; dispatch itself is untouched, so a
program that is not being profiled pays nothing (no flag is read on the hot path).

* **ops**: each op's generated front end (``ember.add``, ``Tensor.add``, ``Tensor.add_``) gets
  a timing ``__code__`` (the original is kept in a copy of the function); the event is the whole
  public call (argument checks, promotion, dispatch, autograd recording), named ``ember::add``;
* **kernels**: each device's kernel table (``device._kernels``, the one lookup
  :func:`ember.ops.registry.run` makes; the ONNX exporter traces through it the same way) is a
  :class:`ProfilingKernels` whose entries time the backend's kernel (``cpu_numpy::add``,
  ``opencl::add``). An op reached without its front end (``x + y``, an op inside a decomposition)
  gets its ``ember::`` event here. With a device activity on an asynchronous backend the kernel
  is bracketed by ``backend.synchronize`` so its time is the device's;
* **backward nodes**: the ``_apply`` of every autograd node class, which the engine calls once
  per node, times the node (``AddBackward0``).
"""
from __future__ import annotations

import os
import sys
import threading
import time
import types

from .. import _devices
from .._graph import Node
from .._layout import SparseKernels
from .._tensor import Tensor
from ..ops import registry as REG
from ..ops.registry import OPS
from ._events import DeviceType, FunctionEvent

__all__: list = []

_now = time.perf_counter_ns
_active: list = []   # the recorder running, if any (one at a time)
_lock = threading.Lock()


def _stub(key):
    src = f"def _front(*args, **kwargs):\n    return {key}(args, kwargs)\n"
    ns: dict = {}
    exec(compile(src, "<ember profiler>", "exec"), ns)
    return ns["_front"].__code__


_FRONT_CODE = {"fn": _stub("_ember_prof_fn"), "inplace": _stub("_ember_prof_inplace")}


class Recorder:
    """Collects :class:`FunctionEvent` s while installed (``start`` / ``stop``)."""

    def __init__(self, record_shapes=False, profile_memory=False, device_activity=False, with_stack=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.device_activity = device_activity
        self.with_stack = with_stack
        self.events: list = []
        self.local = threading.local()
        self.t0 = _now()
        self._fronts: list = []
        self._tables: list = []
        self._nodes: list = []
        self._next_id = 0
        self.on = False
        self.cpu = True

    # -- events -------------------------------------------------------------------------------
    def _stack(self) -> list:
        s = getattr(self.local, "stack", None)
        if s is None:
            s = self.local.stack = []
        return s

    def begin(self, name: str, kind: str, args=None, kwargs=None):
        stack = self._stack()
        self._next_id += 1
        shapes = _shapes(args, kwargs) if (self.record_shapes and args is not None) else None
        ev = FunctionEvent(self._next_id, name, threading.get_ident(), 0.0, 0.0, shapes, kind=kind)
        if self.with_stack and kind != "backward":  # (the engine, not user code, calls backward nodes)
            ev.stack = _user_stack()
        if stack:
            ev.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(ev)
        stack.append(ev)
        ev.start_us = (_now() - self.t0) / 1e3
        return ev

    def end(self, ev, out=None, inputs=None) -> None:
        ev.end_us = (_now() - self.t0) / 1e3
        stack = self._stack()
        if stack and stack[-1] is ev:
            stack.pop()
        elif ev in stack:
            del stack[stack.index(ev):]
        if self.profile_memory and out is not None:
            cpu, dev = _new_bytes(out, inputs)
            ev.cpu_memory_usage, ev.device_memory_usage = cpu, dev
        self.events.append(ev)

    def top(self):
        s = getattr(self.local, "stack", None)
        return s[-1] if s else None

    # -- installing ---------------------------------------------------------------------------
    def start(self) -> None:
        with _lock:
            if _active:
                raise RuntimeError("ember.profiler: another profiler is already recording in this process")
            _active.append(self)
        self.on = True
        self._install_fronts()
        for d in {id(d): d for d in _devices._canon.values()}.values():
            self._install_table(d)
        _devices.new_device_hooks.append(self._install_table)
        self._install_nodes()

    def stop(self) -> None:
        if not self.on:
            return
        self.on = False
        if self._install_table in _devices.new_device_hooks:
            _devices.new_device_hooks.remove(self._install_table)
        for fn, code, ns, key in self._fronts:
            fn.__code__ = code
            ns.pop(key, None)
        for d, k in self._tables:
            if d._kernels.__class__ is ProfilingKernels:
                d._kernels = k
        for cls, apply in self._nodes:
            cls._apply = apply
        self._fronts.clear()
        self._tables.clear()
        self._nodes.clear()
        with _lock:
            if self in _active:
                _active.remove(self)

    def _install_fronts(self) -> None:
        for op in list(OPS.values()):
            for which, fn in (("fn", op.fn), ("inplace", op.inplace_fn)):
                if (fn is None or not isinstance(fn, types.FunctionType) or fn.__code__.co_freevars
                        or not fn.__code__.co_filename.startswith("<ember op ")):
                    continue  # only the generated front ends (ember.ops.declare)
                key = f"_ember_prof_{which}"
                ns = fn.__globals__
                if key in ns:
                    continue
                plain = types.FunctionType(fn.__code__, ns, fn.__name__, fn.__defaults__)
                plain.__kwdefaults__ = fn.__kwdefaults__
                ns[key] = self._front(op.name if which == "fn" else op.name + "_", plain)
                self._fronts.append((fn, fn.__code__, ns, key))
                fn.__code__ = _FRONT_CODE[which]

    def _front(self, name, plain):
        label = "ember::" + name

        def timed(args, kwargs):
            ev = self.begin(label, "op", args, kwargs)
            ev.op_name = name
            out = None
            try:
                out = plain(*args, **kwargs)
                return out
            finally:
                self.end(ev, out, args)
        return timed

    def _install_table(self, d) -> None:
        k = d._kernels
        if k is None or k.__class__ is SparseKernels or k.__class__ is ProfilingKernels:
            return
        self._tables.append((d, k))
        d._kernels = ProfilingKernels(k, self, d)

    def _install_nodes(self) -> None:
        seen = set()
        todo = [Node]
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            todo.extend(cls.__subclasses__())
            if "_apply" in cls.__dict__:
                real = cls.__dict__["_apply"]
                self._nodes.append((cls, real))
                cls._apply = self._node(real)

    def _node(self, real):
        rec = self

        def _apply(node, grads, create_graph):
            ev = rec.begin(node.name(), "backward")
            out = None
            try:
                out = real(node, grads, create_graph)
                return out
            finally:
                rec.end(ev, out if rec.profile_memory else None, grads)
        return _apply


class ProfilingKernels(dict):
    """A device's kernel table while a profiler records: each entry times the real kernel (and,
    for an op reached without its front end, the op around it)."""

    def __init__(self, real, rec: Recorder, dev):
        super().__init__()
        self.real = real
        self.rec = rec
        self.dev = dev
        self.backend = getattr(real, "backend", None)
        be = dev._backend
        self.prefix = (be.name if be is not None else dev._type) + "::"
        self.sync = None
        if dev._type != "cpu" and rec.device_activity and be is not None:
            self.sync = be.synchronize
        self.device_type = {"cpu": DeviceType.CPU, "cuda": DeviceType.CUDA}.get(dev._type, dev._type.upper())
        self._cache: dict = {}

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __contains__(self, name):
        return name in self.real

    def __getitem__(self, name):
        return self._wrap(name, self.real[name], False)

    def get(self, name, default=None):
        k = self.real.get(name)
        top = self.rec.top()
        own = top is not None and getattr(top, "op_name", None) == name
        if k is None:
            op = OPS.get(name)
            if own or op is None or op.decomposition is None:
                return default
            return self._wrap(name, None, True)
        return self._wrap(name, k, not own)

    def _wrap(self, name, k, with_op: bool):
        key = (name, with_op)
        fn = self._cache.get(key)
        if fn is None:
            fn = self._cache[key] = self._make(name, k, with_op)
        return fn

    def _make(self, name, k, with_op):
        rec, sync, dev = self.rec, self.sync, self.dev
        kname = self.prefix + name
        dtype = self.device_type
        index = dev._index or 0
        op = OPS.get(name)

        def kernel(*args, **kw):
            if sync is not None:
                sync(dev)   # earlier queued work is not this kernel's
            ev = rec.begin(kname, "kernel", args, kw)
            ev.device_type = dtype
            ev.device_index = index
            out = None
            try:
                if sync is not None:
                    t0 = _now()
                    out = k(*args, **kw)
                    sync(dev)
                    ev.own_device_time = (_now() - t0) / 1e3
                else:
                    out = k(*args, **kw)
                return out
            finally:
                rec.end(ev, out, args)

        if not with_op:
            return kernel
        label = "ember::" + name

        def op_then_kernel(*args, **kw):
            ev = rec.begin(label, "op", args, kw)
            ev.op_name = name
            out = None
            try:
                out = kernel(*args, **kw) if k is not None else REG._no_kernel(op, dev, args)
                return out
            finally:
                rec.end(ev, out, args)
        return op_then_kernel


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stack() -> list:
    """The python frames of the code calling into ember, innermost first, as PyTorch writes them
    (``"train.py(42): forward"``); ember's own frames are left out."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        name = code.co_filename
        if not (name.startswith(_EMBER_DIR) or name.startswith("<ember")):  # (generated front ends)
            out.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out


def _shapes(args, kwargs) -> list:
    out = []
    for a in list(args) + list((kwargs or {}).values()):
        if isinstance(a, Tensor):
            out.append(list(a._shape))
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            out.append([list(t._shape) for t in a if isinstance(t, Tensor)])
        else:
            out.append([])
    return out


def _new_bytes(out, inputs) -> tuple:
    """Bytes of the storages among ``out`` that none of ``inputs`` uses: (cpu, device)."""
    seen = {id(t._storage) for t in _flat(inputs)}
    cpu = dev = 0
    for t in _flat(out if isinstance(out, (tuple, list)) else (out,)):
        s = t._storage
        if id(s) in seen:
            continue
        seen.add(id(s))
        n = s.nbytes()
        if t._device._type == "cpu":
            cpu += n
        else:
            dev += n
    return cpu, dev


def _flat(xs) -> list:
    if xs is None:
        return []
    return REG.tensors_in(xs)
