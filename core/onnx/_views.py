"""View ops as ONNX nodes (ONNX has no aliasing: a view is a new value). ``args`` is the view's
``ctx.args`` as its geometry made them (dims wrapped, slice bounds resolved)."""
from __future__ import annotations

import numpy as np

from ._graph import INT64_MAX, Graph

__all__: list = []


def _reshape(g: Graph, x, v, args):
    r, sym = g.reshape(x, v._shape)
    g.bind(v, r, sym=sym)


def _alias(g, x, v, args):
    nx = g.inp(x)
    g.bind(v, g.node("Identity", [nx]), sym=g.sym.get(nx, ()))


def _expand(g, x, v, args):
    nx = g.inp(x)
    xs, out = tuple(x._shape), tuple(v._shape)
    lead = len(out) - len(xs)
    ss = g.sym.get(nx)
    spec, osym = [], []
    for j, n in enumerate(out):
        i = j - lead
        keep = i >= 0 and xs[i] == n
        spec.append(1 if keep else n)
        osym.append(ss[i] if keep and ss else None)
    g.bind(v, g.node("Expand", [nx, g.ints(spec, "shape")]), sym=osym)


def _transpose_to(g, x, v, perm):
    nx = g.inp(x)
    ss = g.sym.get(nx)
    g.bind(v, g.node("Transpose", [nx], perm=list(perm)), sym=[ss[p] for p in perm] if ss else ())


def _permute(g, x, v, args):
    _transpose_to(g, x, v, [d % max(x.dim(), 1) for d in args[1]])


def _transpose(g, x, v, args):
    perm = list(range(x.dim()))
    if perm:
        d0, d1 = args[1], args[2]
        perm[d0], perm[d1] = perm[d1], perm[d0]
    _transpose_to(g, x, v, perm)


def _squeeze(g, x, v, args):
    nx = g.inp(x)
    dims = args[1]
    if dims is None:
        dims = range(x.dim())
    elif isinstance(dims, int):
        dims = (dims,)
    axes = sorted({d % x.dim() for d in dims if x._shape[d % x.dim()] == 1}) if x.dim() else []
    if not axes:
        return _alias(g, x, v, args)
    ss = g.sym.get(nx)
    sym = [e for i, e in enumerate(ss) if i not in axes] if ss else ()
    g.bind(v, g.node("Squeeze", [nx, g.ints(axes, "axes")]), sym=sym)


def _unsqueeze(g, x, v, args):
    nx = g.inp(x)
    d = args[1]
    ss = g.sym.get(nx)
    sym = list(ss[:d]) + [None] + list(ss[d:]) if ss else ()
    g.bind(v, g.node("Unsqueeze", [nx, g.ints([d], "axes")]), sym=sym)


def _bound(g, nx, d, i, size):
    """An index into dim ``d`` of value ``nx``: counted from the end when the dim is symbolic and
    the index is its last element (or its end), so that it follows the dim's size at run time."""
    ss = g.sym.get(nx)
    if ss and ss[d]:
        if i >= size:
            return INT64_MAX
        if i == size - 1:
            return -1
    return i


def _select(g, x, v, args):
    _, d, index = args
    nx = g.inp(x)
    i = _bound(g, nx, d, index, x._shape[d])
    ss = g.sym.get(nx)
    sym = [e for k, e in enumerate(ss) if k != d] if ss else ()
    g.bind(v, g.node("Gather", [nx, g.array(np.asarray(i, dtype=np.int64), "index")], axis=d), sym=sym)


def _slice(g, x, v, args):
    _, d, start, stop, step = args
    nx = g.inp(x)
    size = x._shape[d]
    s = _bound(g, nx, d, start, size)
    e = INT64_MAX if stop >= size else _bound(g, nx, d, stop, size)
    r = g.node("Slice", [nx, g.ints([s], "starts"), g.ints([e], "ends"), g.ints([d], "axes"),
                         g.ints([step], "steps")])
    ss = g.sym.get(nx)
    sym = ()
    if ss:
        sym = list(ss)
        if not (start == 0 and e == INT64_MAX and step == 1):
            sym[d] = None
    g.bind(v, r, sym=sym)


VIEWS = {
    "view": _reshape,
    "reshape": _reshape,
    "alias": _alias,
    "expand": _expand,
    "permute": _permute,
    "transpose": _transpose,
    "squeeze": _squeeze,
    "unsqueeze": _unsqueeze,
    "select": _select,
    "slice": _slice,
}
