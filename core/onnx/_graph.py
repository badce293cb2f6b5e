"""The ONNX graph an export builds while it traces: nodes, initializers, the value each traced
tensor holds, and the symbolic dims (``dynamic_axes``) each value carries.

A tensor is *traced* when it depends on the graph's inputs; every other tensor the model reads
(a parameter, a buffer, a mask made from python numbers) is a constant: a parameter or buffer
becomes an initializer named after its state-dict entry, any other tensor an initializer holding
its value at the time it is first read. Ops whose tensor arguments are all constants are not
recorded (their results are constants too: the trace folds them, as ``do_constant_folding``).

Symbolic dims: each value records, per dim, the dynamic axes its size is made of (a tuple of
their names, ``("batch",)``, ``("batch", "seq")`` for a merged dim, with a static factor where
one is merged in: ``("batch", 4)``) or None for a fixed size.
Ops that bake sizes into the graph (reshape, expand) read the symbolic ones at run time
(``Shape``), so that a model traced with one batch size runs with another.
"""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from .errors import UnsupportedOperatorError

__all__: list = []

INT64_MAX = 2 ** 63 - 1


class Graph:
    """The graph under construction; ``onnx`` is the imported onnx package."""

    def __init__(self, onnx, opset: int):
        self.onnx = onnx
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.values: dict = {}    # id(traced tensor) -> value name
        self._alive: list = []    # the traced tensors, kept so that their ids stay theirs
        self.sym: dict = {}       # value name -> per-dim tuple of dynamic-axis names, or None
        self.sizes: dict = {}     # dynamic-axis name -> traced size
        self.params: dict = {}    # id(parameter or buffer) -> (state-dict name, tensor)
        self._consts: dict = {}   # id(constant tensor) -> (initializer name, tensor)
        self._names: set = set()
        self._shape_cache: dict = {}
        self.module_path = ""     # the module running now (for error messages)

    # -- names, nodes, initializers ---------------------------------------------------------
    def fresh(self, hint: str) -> str:
        hint = hint.replace("/", ".") or "v"
        name, i = hint, 0
        while name in self._names:
            i += 1
            name = f"{hint}_{i}"
        self._names.add(name)
        return name

    def node(self, op_type: str, inputs, outputs: int = 1, **attrs):
        """Append a node; returns its output name (a list of names when ``outputs`` > 1)."""
        outs = [self.fresh(f"{op_type}_out") for _ in range(outputs)]
        n = self.onnx.helper.make_node(op_type, list(inputs), outs, name=self.fresh(op_type),
                                       **{k: v for k, v in attrs.items() if v is not None})
        self.nodes.append(n)
        return outs[0] if outputs == 1 else outs

    def array(self, a: np.ndarray, hint: str = "const") -> str:
        """An initializer holding ``a``."""
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.array(a, order="C"), name))
        return name

    def ints(self, values, hint: str = "ints") -> str:
        """A 1-d int64 initializer (shapes, axes, indices)."""
        return self.array(np.asarray(list(values), dtype=np.int64), hint)

    def scalar(self, value, like: str | np.dtype, shape=()) -> str:
        """A constant holding ``value`` with the numpy dtype ``like``."""
        return self.array(np.full(shape, value, dtype=like), "scalar")

    # -- values -----------------------------------------------------------------------------
    def traced(self, t) -> bool:
        return isinstance(t, Tensor) and id(t) in self.values

    def inp(self, t: Tensor) -> str:
        """The value name of a tensor the model reads: its traced value, else a constant."""
        name = self.values.get(id(t))
        if name is not None:
            return name
        p = self.params.get(id(t))
        if p is not None:
            name = self.array(host(p[1]), p[0])
            self.values[id(t)] = name
            self._alive.append(t)
            del self.params[id(t)]
            return name
        c = self._consts.get(id(t))
        if c is None:
            c = self._consts[id(t)] = (self.array(host(t), "const"), t)
        return c[0]

    def forget(self, t: Tensor) -> None:
        """``t`` was overwritten with constant values: it is a constant from now on."""
        self.values.pop(id(t), None)
        self._consts.pop(id(t), None)

    def bind(self, t: Tensor, name: str, srcs=(), sym=None) -> None:
        """``t`` holds value ``name``; its symbolic dims are ``sym``, or inferred from ``srcs``
        (the values it is computed from: a dim whose size is a symbolic dim's of a source, aligned
        from the right or else anywhere, is that dim)."""
        self.values[id(t)] = name
        self._consts.pop(id(t), None)
        self._alive.append(t)
        if sym is None:
            sym = self._infer(tuple(t._shape), srcs)
        if any(sym):
            self.sym[name] = tuple(sym)

    def size(self, entry) -> int:
        """The traced size of a symbolic entry: its axes' sizes times its static factor."""
        return math.prod(self.sizes[n] if isinstance(n, str) else n for n in entry)

    def _infer(self, shape, srcs):
        cands = [(self.sym[s], len(self.sym[s])) for s in srcs if s in self.sym]
        if not cands:
            return ()
        out = []
        for j, n in enumerate(shape):
            found = None
            for ss, r in cands:
                i = j - (len(shape) - r)
                if 0 <= i < r and ss[i] and self.size(ss[i]) == n:
                    found = ss[i]
                    break
            if found is None:
                for ss, _ in cands:
                    found = next((e for e in ss if e and self.size(e) == n), None)
                    if found:
                        break
            out.append(found)
        return out

    def symbolic(self, name: str) -> bool:
        return name in self.sym

    # -- shapes read at run time --------------------------------------------------------------
    def dim(self, src: str, i: int) -> str:
        """A 1-element int64 value: dim ``i`` of value ``src`` at run time."""
        key = (src, i)
        r = self._shape_cache.get(key)
        if r is None:
            r = self._shape_cache[key] = self.node("Shape", [src], start=i, end=i + 1)
        return r

    def shape_value(self, spec) -> str:
        """A 1-d int64 shape from ``spec``: ints, or ``(value, dim[, num, den])``: that dim's size
        at run time (times num / den)."""
        if all(isinstance(s, int) for s in spec):
            return self.ints(spec, "shape")
        parts, run = [], []
        for s in spec:
            if isinstance(s, int):
                run.append(s)
                continue
            if run:
                parts.append(self.ints(run, "shape"))
                run = []
            d = self.dim(s[0], s[1])
            if len(s) == 4 and s[2] != s[3]:
                num, den = s[2], s[3]
                d = self.node("Div", [self.node("Mul", [d, self.ints([num], "factor")]), self.ints([den], "factor")])
            parts.append(d)
        if run:
            parts.append(self.ints(run, "shape"))
        return self.node("Concat", parts, axis=0)

    def reshape(self, x: Tensor, out_shape, src: str | None = None):
        """``(value, sym)``: value ``src`` (x's by default) reshaped to ``out_shape``, the
        symbolic dims kept (copied, read at run time, or merged into one ``-1`` dim)."""
        src = self.inp(x) if src is None else src
        out_shape = tuple(out_shape)
        ss = self.sym.get(src)
        if not ss:
            return self.node("Reshape", [src, self.ints(out_shape, "shape")]), ()
        in_shape = tuple(x._shape)
        spec: list = [None] * len(out_shape)
        osym: list = [None] * len(out_shape)
        used = set()
        for j, n in enumerate(out_shape):
            if j < len(ss) and ss[j] and in_shape[j] == n:
                spec[j], osym[j] = 0, ss[j]
                used.add(j)
        blocks = _blocks(in_shape, out_shape)
        block_of = {j: ii for ii, jj in blocks for j in jj}
        for j, n in enumerate(out_shape):
            if spec[j] is None:
                for i in block_of.get(j, ()):
                    e = ss[i]
                    if e and i not in used and self.size(e) == n:
                        spec[j], osym[j] = (src, i), e
                        used.add(i)
                        break
        minus_one = False
        for i, e in enumerate(ss):
            if not e or i in used:
                continue
            # a symbolic dim merged with others: into the output dims of its block (the runs of
            # dims whose sizes multiply to the same number), one of which is a multiple of it
            lsize = self.size(e)
            names = tuple(n for n in e if isinstance(n, str))
            nsize = self.size(names)
            outs = next(jj for ii, jj in blocks if i in ii)
            free = [j for j in outs if spec[j] is None and nsize and out_shape[j] % nsize == 0]
            if not free:
                raise UnsupportedOperatorError(
                    f"reshape {in_shape} -> {out_shape}{self.where()}: the dynamic axis {names} can't be kept in the "
                    "new shape")
            j = next((k for k in free if out_shape[k] == lsize), next((k for k in free if out_shape[k] == nsize),
                                                                       free[0]))
            if not minus_one:
                spec[j], minus_one = -1, True
            else:  # the input dim's size at run time, times out / in (their static parts)
                spec[j] = (src, i, out_shape[j], lsize)
            f = out_shape[j] // nsize
            osym[j] = names + ((f,) if f != 1 else ())
        spec = [n if s is None else s for s, n in zip(spec, out_shape)]
        return self.node("Reshape", [src, self.shape_value(spec)]), osym

    def where(self) -> str:
        return f" (in module {self.module_path!r})" if self.module_path else ""


def _blocks(a, b):
    """The dims of shapes ``a`` and ``b`` (of equal numel) grouped into ``(a dims, b dims)`` runs
    whose sizes multiply to the same number, left to right."""
    res, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        ii, jj, pa, pb = [i], [j], a[i], b[j]
        i, j = i + 1, j + 1
        while pa != pb:
            if (pa < pb or j == len(b)) and i < len(a):
                pa, i = pa * a[i], i + 1
                ii.append(i - 1)
            elif j < len(b):
                pb, j = pb * b[j], j + 1
                jj.append(j - 1)
            else:
                break
        res.append((ii, jj))
    if res:
        res[-1][0].extend(range(i, len(a)))
        res[-1][1].extend(range(j, len(b)))
    return res or [(list(range(len(a))), list(range(len(b))))]


def host(t: Tensor) -> np.ndarray:
    """A copy of ``t``'s values on the host (no op runs)."""
    return np.array(t._device._backend.to_numpy(t), copy=True)
