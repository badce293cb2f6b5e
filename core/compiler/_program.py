"""The replay program: a recording (:mod:`._capture`) turned into one generated python function.

The function takes the flat tensor inputs and runs the recorded kernel calls in order, each slot a
local variable: ``t5 = k3(t0, t2, c1)``. There are no op fronts, no metas, no dispatch lookups and
no graph building. Around the kernel calls it

* reads external tensors (parameters, buffers, any tensor that existed before the call) live,
  after checking that each still has the storage, shape, strides, dtype and ``requires_grad`` it
  had at capture (else the call misses and the caller captures again);
* makes aliases (views) of slots with their recorded geometry, relative to the base's offset;
  aliases of external tensors are made once, at build time;
* allocates what the core allocated (``empty``), and rebuilds tensors made from host data when
  they are written or returned (shared otherwise);
* plans buffers: a kernel the backend lists in ``out_kernels`` whose result neither is returned
  nor shares storage with what is returned, and which has at most ``REUSE_MAX_NUMEL`` elements,
  writes into one buffer kept by the program (``k(..., out=b5)``) instead of allocating on every
  call;
* advances version counters by what the core advanced them outside kernels during the capture
  (in-place ops on inputs and parameters), so that autograd sees the writes;
* writes ``.grad`` where the capture wrote it (``set_grad`` steps: a training step's backward and
  ``zero_grad``; those gradients are new tensors on every call, never reused buffers), after
  checking that each argument or parameter whose gradient the capture read before writing it
  still has that gradient (the same tensor where kernels used it, else the same None-ness), and
  the guards others added (an optimizer's hyperparameters and state).
"""
from __future__ import annotations

from .._tensor import Tensor, _alias
from ._capture import _WRITTEN, IN_PLACE, Ref

__all__: list = []

#: the largest output (elements) a program writes into a reused buffer: below it the saved
#: allocation pays; above it writing through ``out=`` was slower than a fresh array (a GPT-style
#: training step 174 -> 150 ms, a Transformer encoder step 30.2 -> 25.6 ms with this bound)
REUSE_MAX_NUMEL = 65536
MISS = object()  # returned by a program whose external tensors changed: capture again
#: returned by a program whose guards do not hold now (a gradient present where the capture had
#: none, an optimizer's changed learning rate): another program of the entry, or a new capture
SKIP = object()


class Program:
    """A generated replay function (``fn(*inputs)``) and what it was built from."""

    def __init__(self, fn, source, steps, n_kernels, n_fused, n_buffers):
        self.fn = fn
        self.source = source
        self.steps = steps
        self.n_kernels = n_kernels
        self.n_fused = n_fused
        self.n_buffers = n_buffers

    def __repr__(self):
        return (f"<ember.compile program: {self.n_kernels} kernel calls, {self.n_fused} fused chains, "
                f"{self.n_buffers} reused buffers>")


class _Named:
    """A named tuple in the returned value: its class and encoded items."""

    __slots__ = ("cls", "items")

    def __init__(self, cls, items):
        self.cls = cls
        self.items = items


def encode_output(rec, out):
    """The returned value with its tensors as slot references; None for an unsupported structure."""
    if isinstance(out, Tensor):
        return Ref(rec.slot(out).n)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return _Named(type(out), [encode_output(rec, o) for o in out])
    if out.__class__ in (tuple, list):
        return out.__class__(encode_output(rec, o) for o in out)
    if out.__class__ is dict:
        return {k: encode_output(rec, v) for k, v in out.items()}
    if out is None or isinstance(out, (bool, int, float, complex, str)):
        return out
    rec.brk(f"the function returned a {type(out).__name__}, which the replay cannot rebuild")
    return None


def _refs(x, acc):
    if isinstance(x, Ref):
        acc.append(x.n)
    elif x.__class__ in (tuple, list):
        for y in x:
            _refs(y, acc)
    elif x.__class__ is dict:
        for y in x.values():
            _refs(y, acc)
    elif x.__class__ is _Named:
        _refs(x.items, acc)
    return acc


def build(rec, out_enc, n_inputs: int, reuse: bool = True, fuse=None, env: bool = False) -> Program:
    """Generate the replay function of recorder ``rec`` returning ``out_enc``. ``fuse`` is
    :func:`ember.compiler._fusion.fuse` or None. With ``env`` the function returns ``(result,
    slots)``, every slot's tensor at the end of the call (what a backward program reads)."""
    slots = rec.slots
    steps = list(rec.steps)

    def root(n):
        s = slots[n]
        while s.kind == "alias":
            s = slots[s.base]
        return s.n

    escaping = {root(n) for n in _refs(out_enc, [])}
    for st in steps:
        if st.name == "set_grad":  # a gradient stored in .grad outlives the call
            escaping.update(root(n) for n in _refs(st.args[1], []))
    written = set()
    for st in steps:
        if st.name in IN_PLACE and st.args and isinstance(st.args[0], Ref):
            written.add(root(st.args[0].n))
        o = st.kwargs.get("out")
        for n in _refs(o, []):
            written.add(root(n))
    n_fused = 0
    if fuse is not None:
        steps, n_fused = fuse(steps, slots, escaping | written, _refs(out_enc, []))

    g = {"_alias": _alias, "_MISS": MISS, "_SKIP": SKIP}
    lines = []
    checks = []
    guards = []
    defined = set()
    consts: dict = {}

    def const(v):
        k = consts.get(id(v))
        if k is None:
            k = consts[id(v)] = f"c{len(consts)}"
            g[k] = v
        return k

    def define(n):
        if n in defined:
            return
        s = slots[n]
        defined.add(n)
        if s.kind == "input":
            lines.append(f"    t{n} = inputs[{s.index}]")
        elif s.kind == "ext":
            t = s.tensor
            g[f"e{n}"] = t
            g[f"s{n}"] = t._storage
            checks.append(f"e{n}._storage is not s{n} or e{n}._shape != {t._shape!r} or e{n}._stride != {t._stride!r}"
                          f" or e{n}._offset != {t._offset} or e{n}._requires_grad is not {t._requires_grad!r}")
            lines.append(f"    t{n} = e{n}")
        elif s.kind == "alias":
            define(s.base)
            shape, stride, rel = s.geom
            if slots[s.base].kind == "ext" and root(n) not in escaping:
                base = slots[s.base].tensor
                g[f"a{n}"] = _alias(base, shape, stride, base._offset + rel)
                lines.append(f"    t{n} = a{n}")
            else:
                lines.append(f"    t{n} = _alias(t{s.base}, {shape!r}, {stride!r}, t{s.base}._offset + {rel})")
        elif s.kind == "alloc":
            shape, dtype, dev = s.geom
            lines.append(f"    t{n} = {const(s.backend)}.empty({shape!r}, {const(dtype)}, {const(dev)})")
        elif s.kind == "const":
            if n in escaping or n in written:
                host, dev = s.host
                lines.append(f"    t{n} = {const(s.backend)}.from_numpy({const(host)}.copy(), {const(dev)})")
            else:
                lines.append(f"    t{n} = {const(s.tensor)}")
        else:  # a kernel output used before its step: cannot happen
            raise AssertionError(f"slot t{n} used before the kernel that makes it")

    for t, g0 in rec.grad_first.values():
        if g0 is _WRITTEN:
            continue
        s = rec.slot_of.get(id(t))
        if s is not None and s.kind == "input":
            owner = f"inputs[{s.index}]._grad"
        elif s is None or s.kind == "ext":
            owner = f"{const(t)}._grad"
        else:
            continue  # made inside the call: a new tensor at every replay
        guards.append(f"{owner} is {'not ' if g0 is None else ''}None")
    for fn in rec.guards:
        guards.append(f"not {const(fn)}()")
    # the gradients the call read from arguments and parameters: read at the start (before any
    # write), each with the geometry the capture saw
    grad_lines = []
    for s in slots:
        if s.kind == "grad":
            o = slots[s.base]
            owner = f"inputs[{o.index}]" if o.kind == "input" else const(o.tensor)
            t = s.tensor
            grad_lines.append(f"    t{s.n} = {owner}._grad")
            grad_lines.append(f"    if t{s.n}._shape != {t._shape!r} or t{s.n}._stride != {t._stride!r} or "
                              f"t{s.n}._offset != {t._offset} or t{s.n}._dtype is not {const(t._dtype)} or "
                              f"t{s.n}._device is not {const(t._device)} or t{s.n}._requires_grad is not "
                              f"{t._requires_grad!r}:")
            grad_lines.append("        return _SKIP")
            defined.add(s.n)

    def expr(a):
        if isinstance(a, Ref):
            define(a.n)
            return f"t{a.n}"
        if a.__class__ in (tuple, list) and any(isinstance(x, Ref) for x in a):
            inner = ", ".join(expr(x) for x in a)
            return f"({inner},)" if a.__class__ is tuple else f"[{inner}]"
        if a is None or a is True or a is False or (a.__class__ is int):
            return repr(a)
        return const(a)

    # each local is dropped after its last use (with its views), so that the memory of an
    # intermediate is freed as eager frees it, not at the end of the call
    keep = set(escaping)
    for v, first, inner, s in rec.versions.values():
        if v[0] - first - inner:
            keep.add(root(s.n))
    last: dict = {}
    if not env:
        for i, st in enumerate(steps):
            for n in _refs(st.args, _refs(list(st.kwargs.values()), [])) + [o for o in st.outs if o is not None]:
                last[root(n)] = i
    drop_at: dict = {}
    for r, i in last.items():
        if r not in keep:
            drop_at.setdefault(i, []).append(r)
    n_kernels = n_buffers = 0
    for i_step, st in enumerate(steps):
        n_kernels += 1
        kname = f"k{st.n}_{_ident(st.name)}"
        g[kname] = st.kernel
        args = [expr(a) for a in st.args] + [f"{k}={expr(v)}" for k, v in st.kwargs.items()]
        outs = st.outs
        out_slot = outs[0] if (len(outs) == 1 and not st.multi) else None
        if (reuse and out_slot is not None and "out" not in st.kwargs and st.backend is not None
                and slots[out_slot].tensor.numel() <= REUSE_MAX_NUMEL
                and st.name in st.backend.out_kernels and root(out_slot) not in escaping
                and not any(isinstance(a, Ref) and a.n == out_slot for a in st.args)):
            g[f"b{out_slot}"] = slots[out_slot].tensor
            lines.append(f"    t{out_slot} = {kname}({', '.join(args + [f'out=b{out_slot}'])})")
            n_buffers += 1
        elif out_slot is not None:
            lines.append(f"    t{out_slot} = {kname}({', '.join(args)})")
        elif st.multi and any(o is not None for o in outs):
            lines.append(f"    _r = {kname}({', '.join(args)})")
            for i, o in enumerate(outs):
                if o is not None:
                    lines.append(f"    t{o} = _r[{i}]")
        else:
            lines.append(f"    {kname}({', '.join(args)})")
        for o in outs:
            if o is not None:
                defined.add(o)
        if st.multi and any(o is not None for o in outs):
            lines.append("    del _r")
        dead = sorted(n for n in defined if root(n) in drop_at.get(i_step, ()) and slots[n].kind != "ext")
        if dead:
            lines.append(f"    del {', '.join(f't{n}' for n in dead)}")
            defined.difference_update(dead)
    for v, first, inner, s in rec.versions.values():
        delta = v[0] - first - inner
        if delta and (s.n in defined or s.kind != "kernel"):
            define(s.n)
            lines.append(f"    t{s.n}._version[0] += {delta}")
    ret = _out_expr(out_enc, expr, const)
    if env:
        for s in slots:
            define(s.n)
        ret = f"{ret}, ({''.join(f't{s.n}, ' for s in slots)})"
    head = ["def replay(*inputs):"]
    if checks:
        head.append("    if " + " or ".join(checks) + ":")
        head.append("        return _MISS")
    if guards:
        head.append("    if " + " or ".join(guards) + ":")
        head.append("        return _SKIP")
    head += grad_lines
    src = "\n".join(head + lines + [f"    return {ret}"]) + "\n"
    exec(compile(src, "<ember.compile replay>", "exec"), g)  # noqa: S102 - generated from the recording
    return Program(g["replay"], src, steps, n_kernels, n_fused, n_buffers)


def _out_expr(o, expr, const):
    if isinstance(o, Ref):
        return expr(o)
    if o.__class__ is _Named:
        return f"{const(o.cls)}({', '.join(_out_expr(x, expr, const) for x in o.items)})"
    if o.__class__ is tuple:
        return "(" + "".join(_out_expr(x, expr, const) + ", " for x in o) + ")"
    if o.__class__ is list:
        return "[" + ", ".join(_out_expr(x, expr, const) for x in o) + "]"
    if o.__class__ is dict:
        return "{" + ", ".join(f"{const(k)}: {_out_expr(v, expr, const)}" for k, v in o.items()) + "}"
    return expr(o)


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)

