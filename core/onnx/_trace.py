"""Tracing: record the ops a model runs on example inputs, converting each into ONNX nodes as it
runs.

The tracer sees every op through the two places ops reach the device, so the normal path pays
nothing for it:

* kernel ops: while tracing, each device's kernel table (``device._kernels``, one attribute
  lookup in :func:`ember.ops.registry.dispatch`) is a :class:`TracingKernels`, whose entries
  convert the op (the converter table, :data:`ember.onnx._ops.CONVERTERS`) before running the real
  kernel. An op without a converter runs its decomposition instead, whose parts are traced (so
  any op made of mapped ops exports); an op with neither raises
  :class:`~ember.onnx.errors.UnsupportedOperatorError` naming it and the module running;
* view ops: :data:`ember.ops.registry.view_tracer` is called for each view made.

Inside a converted op (its kernel, or the decomposition standing in for it) nothing is traced.
Ops whose tensor arguments are all constants are not recorded: their results are constants.
"""
from __future__ import annotations

from ..ops import registry as REG
from ..ops.registry import OPS, tensors_in
from . import _ops
from ._graph import Graph
from .errors import UnsupportedOperatorError

__all__: list = []

_active: list = []  # the running tracer, if any (ember.onnx.is_in_onnx_export)


def exporting() -> bool:
    return bool(_active)


class TracingKernels(dict):
    """A device's kernel table while a tracer runs: each entry converts, then runs the real one."""

    def __init__(self, real, tracer):
        super().__init__()
        self.real = real
        self.tracer = tracer
        self.backend = getattr(real, "backend", None)

    def get(self, name, default=None):
        return self.tracer.kernel(name, self.real)

    def __getitem__(self, name):
        k = self.tracer.kernel(name, self.real)
        return k if k is not None else self.real[name]

    def __contains__(self, name):
        return name in self.real


class Tracer:
    """Installs itself on ``devices`` for the ``with`` block, converting into ``graph``."""

    def __init__(self, graph: Graph, devices):
        self.g = graph
        self.devices = list(devices)
        self.depth = 0
        self._saved: list = []
        self._cache: dict = {}

    def __enter__(self):
        if _active or REG.view_tracer is not None:
            raise RuntimeError("ember.onnx.export: another export is tracing in this process")
        for d in self.devices:
            self._saved.append((d, d._kernels))
            d._kernels = TracingKernels(d._kernels, self)
        REG.view_tracer = self.on_view
        _active.append(self)
        return self

    def __exit__(self, *exc):
        for d, k in self._saved:
            d._kernels = k
        REG.view_tracer = None
        _active.clear()

    # -- kernel ops ---------------------------------------------------------------------------
    def kernel(self, name: str, real):
        key = (name, id(real))
        fn = self._cache.get(key)
        if fn is None:
            k = real.get(name)
            op = OPS.get(name)
            decomp = op.decomposition if op is not None else None
            if k is None and decomp is None:
                return None
            fn = self._cache[key] = self._make(name, k, decomp)
        return fn

    def _make(self, name, k, decomp):
        conv = _ops.CONVERTERS.get(name)

        def run(*args, **kw):
            if k is not None:
                return k(*args, **kw)
            return decomp(*args)

        def traced(*args, **kw):
            if self.depth:
                return run(*args, **kw)
            g = self.g
            target = kw.get("out")
            if not any(g.traced(t) for t in tensors_in(args)):
                out = run(*args, **kw)
                if target is not None:
                    g.forget(target)
                elif name in ("copy_", "fill_") and args:
                    g.forget(args[0])  # overwritten with constants
                return out
            if conv is None:
                if decomp is not None and target is None:
                    return decomp(*args)  # converted through its parts
                raise UnsupportedOperatorError(
                    f"ember.onnx.export: op {name!r}{g.where()} has no ONNX mapping (and no decomposition into "
                    "ops that have one)")
            self.depth += 1
            try:
                out = run(*args, **kw)
                conv(g, args, target if target is not None else out)
            finally:
                self.depth -= 1
            return out

        traced.__name__ = f"traced_{name}"
        return traced

    # -- views --------------------------------------------------------------------------------
    def on_view(self, op, x, v, args):
        if self.depth or not self.g.traced(x):
            return
        conv = _ops.VIEWS.get(op.name)
        if conv is None:
            raise UnsupportedOperatorError(
                f"ember.onnx.export: view op {op.name!r}{self.g.where()} has no ONNX mapping")
        self.depth += 1
        try:
            conv(self.g, x, v, args)
        finally:
            self.depth -= 1
