"""Fusion: chains of elementwise kernel calls in a recording become one call of a backend's fused
kernel (``Backend.fuse_elementwise``; the chain's rules are :mod:`ember.backend.fusion`'s).

A group grows from a fusible step by the later fusible steps that read its current result, when
that result is read nowhere else (no other step, no alias, not returned, not written) and no step
between them writes a tensor. The group is offered to the backend; an accepted group becomes one
step at the place of its last call, reading the group's inputs.
"""
from __future__ import annotations

from .. import _dtype as D
from ..backend.fusion import FUSIBLE, ElementwiseChain
from ._capture import IN_PLACE, Ref, Step

__all__: list = []

_FLOATS = (D.float32, D.float16)


def fuse(steps, slots, protected, out_refs):
    """``(steps, n_fused)``: ``steps`` with the accepted groups replaced by fused steps."""
    uses: dict = {}
    for st in steps:
        for n in _step_refs(st):
            uses[n] = uses.get(n, 0) + 1
    for n in out_refs:
        uses[n] = uses.get(n, 0) + 99
    for s in slots:
        if s.kind == "alias":
            uses[s.base] = uses.get(s.base, 0) + 99
    groups: list = []
    open_by_out: dict = {}   # output slot -> group (a list of step indices)
    writes_after: list = []  # step index of each writing step
    for i, st in enumerate(steps):
        if st.name in IN_PLACE or "out" in st.kwargs:
            writes_after.append(i)
        if not _fusible(st, slots):
            continue
        joined = None
        for a in st.args:
            if isinstance(a, Ref) and a.n in open_by_out and uses.get(a.n) == 1 and a.n not in protected:
                g = open_by_out[a.n]
                if not any(g[0] < w < i for w in writes_after) and steps[g[-1]].backend is st.backend:
                    joined = g
                    del open_by_out[a.n]
                    break
        if joined is None:
            joined = [i]
            groups.append(joined)
        else:
            joined.append(i)
        open_by_out[st.outs[0]] = joined
    replace: dict = {}
    drop: set = set()
    n_fused = 0
    for g in groups:
        if len(g) < 2:
            continue
        fs = _offer([steps[i] for i in g], slots)
        if fs is None:
            continue
        n_fused += 1
        replace[g[-1]] = fs
        drop.update(g[:-1])
    out = []
    for i, st in enumerate(steps):
        if i in drop:
            continue
        out.append(replace.get(i, st))
    return out, n_fused


def _step_refs(st):
    acc = []
    for a in list(st.args) + list(st.kwargs.values()):
        if isinstance(a, Ref):
            acc.append(a.n)
        elif a.__class__ in (list, tuple):
            acc.extend(x.n for x in a if isinstance(x, Ref))
    return acc


def _fusible(st, slots) -> bool:
    arity = FUSIBLE.get(st.name)
    if arity is None or st.multi or st.kwargs or len(st.args) != arity or len(st.outs) != 1 or st.outs[0] is None:
        return False
    if st.backend is None or type(st.backend).fuse_elementwise is _base_fuse(st.backend):
        return False
    o = slots[st.outs[0]].tensor
    if o._dtype not in _FLOATS:
        return False
    for a in st.args:
        if isinstance(a, Ref):
            t = slots[a.n].tensor
            if t._dtype is not o._dtype or t._device is not o._device:
                return False
        elif a.__class__ not in (int, float, bool):
            return False
    return True


def _base_fuse(backend):
    for c in type(backend).__mro__:
        if c.__name__ == "Backend" and c.__module__ == "ember.backend":
            return c.fuse_elementwise
    return None


def _offer(group, slots):
    local = {}     # slot -> op index in the chain
    inputs = []    # leaf slots
    ops = []
    for j, st in enumerate(group):
        args = []
        for a in st.args:
            if isinstance(a, Ref):
                if a.n in local:
                    args.append(("op", local[a.n]))
                else:
                    if a.n not in inputs:
                        inputs.append(a.n)
                    args.append(("in", inputs.index(a.n)))
            else:
                args.append(a)
        ops.append((st.name, tuple(args)))
        local[st.outs[0]] = j
    last = slots[group[-1].outs[0]].tensor
    chain = ElementwiseChain(ops, [(slots[n].tensor._shape, slots[n].tensor._dtype) for n in inputs],
                             last._shape, last._dtype, last._device)
    fn = group[-1].backend.fuse_elementwise(chain)
    if fn is None:
        return None
    fs = Step(group[-1].n, fn, "fused_" + "_".join(st.name for st in group), tuple(Ref(n) for n in inputs), {},
              None)
    fs.outs = group[-1].outs
    return fs
