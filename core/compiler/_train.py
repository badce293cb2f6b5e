"""Training capture: a compiled call under autograd replays its forward and attaches one graph
node, whose backward replays a captured backward program.

The capture runs the function eagerly under autograd, as any capture, and keeps the eager graph it
built (the **capture graph**) alive. The forward becomes a program (without fusion, whose dropped
intermediates a backward may need, and without reused buffers, which a later call would overwrite
before this call's backward) that also returns every slot's tensor, the **environment**. A call's
differentiable outputs get one :class:`CompiledNode`, whose edges lead to what the gradients are for:
the tensor arguments and the external tensors (parameters) that require grad.

The first time a node's backward meets a gradient pattern (which outputs got a gradient, and each
gradient's shape, strides, offset, dtype and device), the capture graph is run backward
(``autograd.grad``, graph retained) from those outputs with those gradients while a recorder records
the kernel calls, with the capture's environment and the gradients as the program's inputs; the
recording becomes the **backward program** for that pattern. Every backward, the capture's
included, runs the program on its own call's environment and gradients: no op fronts, metas or
graph nodes. The kernel calls being the eager backward's, in float64 the gradients are eager's
exactly. The capture records one backward at once (gradients of ones) to find breaks early: a
backward that reads values on the host makes the call run eagerly, as before.

Not covered, and run eagerly: outputs that are arguments or their views, outputs sharing storage,
in-place writes to tensors that require grad, a backward inside the compiled call. An output that
is a view of an intermediate becomes a tensor of its own (its base is not returned).
``create_graph=True`` through a compiled node raises.
"""
from __future__ import annotations

from .._graph import AccumulateGrad, Node, edge_of
from .._tensor import Tensor, _alias
from ..ops import creation as CR
from ..autograd import engine as _engine
from . import _capture as C
from ._program import MISS, SKIP, _refs, build, encode_output

__all__: list = []


class Unsupported(Exception):
    """Why a call under autograd is not captured for training (the call runs eagerly)."""


class CompiledNode(Node):
    """The graph node of one compiled call: its backward runs the backward program for the
    incoming gradients' pattern on the call's environment."""

    __slots__ = ("program", "env", "versions")

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def _n_outputs(self) -> int:
        return len(self.program.diff_outs)

    def _apply(self, grads, create_graph):
        if create_graph:
            raise RuntimeError("ember.compile: double backward (create_graph=True) through a compiled call is not "
                               "supported; run the function eagerly (ember.compiler.disable) for it")
        if self.env is None:
            raise RuntimeError("Trying to backward through the graph a second time (or directly access saved "
                               "tensors after they have already been freed). Specify retain_graph=True if you "
                               "need to backward through the graph a second time.")
        return self.program.backward(self.env, grads, self.versions)

    def _release(self):
        self.env = None


class TrainProgram:
    """A forward program and the backward programs of one capture (see the module docstring)."""

    def __init__(self, rec, out_enc, n_inputs, flat, devices):
        self.rec = rec
        self.devices = devices
        slots = rec.slots
        # what the gradients are for: the leaves, and the tensors of older history, that the
        # capture graph reaches from the outputs (a parameter may be met only through a view a
        # fused op's decomposition took of it without grad, its own node holding it)
        self.wrt = []
        made = [s.tensor for s in slots if s.tensor._grad_fn is not None and s.tensor._grad_fn._seq >= rec.seq0]
        for t in _sources(made, rec.seq0, slots):
            ss = rec.slot_of.get(id(t))
            if ss is None:
                ss = rec.new_slot("ext", t)
            if ss.n not in self.wrt:
                self.wrt.append(ss.n)
        self.fwd = build(rec, out_enc, n_inputs, reuse=False, fuse=None, env=True)
        self.steps = self.fwd.steps
        self.n_kernels = self.fwd.n_kernels
        self.n_fused = 0
        self.n_buffers = 0
        self.source = self.fwd.source
        diff = []
        roots = set()
        for n in _refs(out_enc, []):
            s = slots[n]
            if not (s.tensor._requires_grad and s.tensor._dtype.category >= 2):
                continue
            r = s
            while r.kind == "alias":
                r = slots[r.base]
            # an output may be a view of an intermediate (it becomes a tensor of its own), not of an
            # argument or a parameter, nor share its storage with another output
            if r.kind != "kernel" or r.n in roots:
                raise Unsupported("an output that requires grad is an argument, a view of one, or shares its "
                                  "storage with another output")
            roots.add(r.n)
            diff.append(n)
        self.diff_outs = diff
        #: slots whose tensors the caller can reach (arguments, parameters, outputs): their versions
        #: at the forward are checked at the backward where the backward program reads them
        self.watch = [s.n for s in slots if s.kind in ("input", "ext")] + list(diff)
        self.backwards: dict = {}
        for v, first, inner, s in rec.versions.values():
            if v[0] != first and any(t._requires_grad for t in _slot_tensors(rec, v)):
                raise Unsupported("an in-place write to a tensor that requires grad")
        # the capture graph's outputs and inputs, kept alive for recording backward programs
        self.graph_outs = [slots[n].tensor for n in diff]
        self.graph_wrt = [slots[n].tensor for n in self.wrt]
        if diff:
            probe = [CR.ones_like(t) for t in self.graph_outs]
            self._record(probe)

    # -- calls ---------------------------------------------------------------------------------
    def fn(self, *flat):
        r = self.fwd.fn(*flat)
        if r is MISS or r is SKIP:
            return r
        ret, env = r
        self._attach(env)
        return ret

    def wrap_capture(self, out):
        """The capture's result with its differentiable outputs replaced by aliases hanging from a
        node (the capture graph itself is kept for recording, never run by the caller)."""
        env = tuple(s.tensor for s in self.rec.slots)
        if not self.diff_outs:
            return out
        swap = {}
        for n in self.diff_outs:
            t = env[n]
            a = _detached(t)
            swap[id(t)] = a
        env2 = tuple(swap.get(id(t), t) for t in env)
        self._attach(env2)
        return _replace(out, swap)

    def _attach(self, env):
        if not self.diff_outs:
            return
        node = CompiledNode()
        node.program = self
        node.env = env
        node.versions = tuple(env[n]._version[0] for n in self.watch)
        node.next_functions = tuple(edge_of(env[n]) for n in self.wrt)
        node.needs_input_grad = tuple(True for _ in self.wrt)
        node.in_meta = tuple((env[n]._shape, env[n]._dtype) for n in self.wrt)
        for i, n in enumerate(self.diff_outs):
            o = env[n]
            o._base = None
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True

    # -- backward ------------------------------------------------------------------------------
    def backward(self, env, grads, versions):
        key = tuple(None if g is None else (g._shape, g._stride, g._offset, g._dtype, g._device) for g in grads)
        prog = self.backwards.get(key)
        if prog is None:
            prog = self._record(grads)
        for n, v in zip(self.watch, versions):  # eager's check of saved tensors, on those the user can reach
            t = env[n]
            if t._version[0] != v and n in prog.reads:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    f"[{type(t).__name__} of shape {list(t._shape)}] is at version {t._version[0]}; expected version "
                    f"{v} instead. Hint: the variable was used by a compiled call (ember.compile).")
        r = prog.fn(*[g for g in grads if g is not None], *env)
        if r is MISS or r is SKIP:
            raise RuntimeError("ember.compile: a tensor the backward program reads changed since the capture")
        return r

    def _record(self, grads):
        key = tuple(None if g is None else (g._shape, g._stride, g._offset, g._dtype, g._device) for g in grads)
        outs = [o for o, g in zip(self.graph_outs, grads) if g is not None]
        gs = [g for g in grads if g is not None]
        rec = C.Recorder(self.devices, backward_ok=True)
        for i, g in enumerate(gs):
            rec.add_input(g, i)
        for s in self.rec.slots:
            rec.add_input(s.tensor, len(gs) + s.n)
        with rec:
            res = _engine.grad(outs, self.graph_wrt, gs, retain_graph=True, allow_unused=True)
            enc = encode_output(rec, tuple(res))
        if rec.breaks:
            raise Unsupported("the backward: " + rec.breaks[0].reason)
        prog = build(rec, enc, len(gs) + len(self.rec.slots), reuse=False, fuse=None)
        used = set(_refs(enc, []))
        for st in rec.steps:
            used.update(_refs(st.args, _refs(list(st.kwargs.values()), [])))
        reads = set()
        for n in used:
            b = rec.slots[n]
            while b.kind == "alias":
                b = rec.slots[b.base]
            if b.kind == "input" and b.index >= len(gs):
                reads.add(b.index - len(gs))
        prog.reads = reads
        self.backwards[key] = prog
        return prog


def _sources(made, seq0, slots):
    """The tensors whose gradients the graph of the nodes made inside the call (``seq >= seq0``)
    sends out of it: the leaves of its ``AccumulateGrad`` edges and, for edges to older nodes,
    the slot tensors carrying those nodes."""
    out: list = []
    seen: set = set()
    stack = [t._grad_fn for t in made]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, nr in node.next_functions:
            if nxt is None:
                continue
            if isinstance(nxt, AccumulateGrad):
                t = nxt.variable
            elif nxt._seq < seq0:
                t = next((s.tensor for s in slots if s.tensor._grad_fn is nxt and s.tensor._output_nr == nr), None)
                if t is None:
                    raise Unsupported("the graph reaches history through a tensor the capture did not see")
            else:
                stack.append(nxt)
                continue
            if all(t is not u for u in out):
                out.append(t)
    return out


def _detached(t):
    a = _alias(t, t._shape, t._stride, t._offset)
    a._base = None
    return a


def _slot_tensors(rec, version):
    return [s.tensor for s in rec.slots if s.tensor._version is version]


def _replace(o, swap):
    if isinstance(o, Tensor):
        return swap.get(id(o), o)
    if isinstance(o, tuple) and hasattr(o, "_fields"):
        return type(o)(*(_replace(x, swap) for x in o))
    if o.__class__ in (tuple, list):
        return o.__class__(_replace(x, swap) for x in o)
    if o.__class__ is dict:
        return {k: _replace(v, swap) for k, v in o.items()}
    return o
