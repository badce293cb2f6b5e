"""Fused elementwise chains for ``ember.compile`` (``Backend.fuse_elementwise``) with numexpr, when
it is installed (the optional extra ``ember-cpu-numpy[numexpr]``): one numexpr expression per
chain, evaluated in cache-sized blocks without the intermediate arrays. Without numexpr, or for
small results (below :data:`MIN_NUMEL` elements, where numexpr's call costs more than the numpy
calls it replaces), for chains of fewer than three ops, for chains holding a transcendental
function (numpy's SIMD loops are faster than numexpr's) and for chains with a broadcast input
(numexpr's broadcasting is slow), the chain is declined and replays call by call."""
from __future__ import annotations

import numpy as np

from .arrays import nd, wrap

__all__ = ["fuse_elementwise", "expression", "MIN_NUMEL"]

MIN_NUMEL = 16384

#: numpy's SIMD loops for these beat numexpr's scalar ones (measured: exp/tanh on float32 about
#: 10x), so chains holding them are declined
_SLOWER = frozenset({"exp", "log", "sin", "cos", "tanh", "sqrt", "sigmoid"})

_UNARY = {"neg": "(-{0})", "abs": "abs({0})", "exp": "exp({0})", "log": "log({0})", "sin": "sin({0})",
          "cos": "cos({0})", "tanh": "tanh({0})", "sqrt": "sqrt({0})",
          "relu": "where({0} <= 0, 0, {0})",  # NaN stays NaN, as maximum(x, 0)
          "sigmoid": "(1 / (1 + exp(-{0})))"}
_BINARY = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
           "maximum": "where(({0} >= {1}) | ({0} != {0}) | ({1} != {1}), where({1} != {1}, {1}, {0}), {1})",
           "minimum": "where(({0} <= {1}) | ({0} != {0}) | ({1} != {1}), where({1} != {1}, {1}, {0}), {1})"}


def expression(chain, np_dtype):
    """``(expr, constants)``: the numexpr text of ``chain`` (inputs ``i0, i1...``, python numbers as
    0-d arrays ``k0, k1...`` of the chain's dtype, so that float32 stays float32)."""
    parts: list = []
    consts: dict = {}
    for name, args in chain.ops:
        terms = []
        for a in args:
            if isinstance(a, tuple):
                terms.append(f"i{a[1]}" if a[0] == "in" else parts[a[1]])
            else:
                k = f"k{len(consts)}"
                consts[k] = np.asarray(a, dtype=np_dtype)
                terms.append(k)
        form = _UNARY.get(name) or _BINARY.get(name)
        if form is None:
            return None, None
        parts.append(form.format(*terms))
    return parts[-1], consts


def fuse_elementwise(chain):
    try:
        import numexpr
    except ImportError:
        return None
    if len(chain.ops) < 3 or any(nm in _SLOWER for nm, _ in chain.ops):
        return None
    if any(tuple(shape) != tuple(chain.shape) for shape, _ in chain.inputs):
        return None  # numexpr broadcasts slowly: a (1, C, 1, 1) operand made a batch norm's tail 3x slower
    n = 1
    for s in chain.shape:
        n *= s
    if n < MIN_NUMEL:
        return None
    np_dtype = chain.dtype.np
    expr, consts = expression(chain, np_dtype)
    if expr is None:
        return None
    names = [f"i{i}" for i in range(len(chain.inputs))]
    device = chain.device
    evaluate = numexpr.evaluate

    def fused(*inputs):
        env = dict(consts)
        for nm, t in zip(names, inputs):
            env[nm] = nd(t)
        r = evaluate(expr, local_dict=env, global_dict={})
        if r.dtype != np_dtype:
            r = r.astype(np_dtype)
        return wrap(r, device)

    fused.__name__ = "numexpr_" + "_".join(nm for nm, _ in chain.ops)
    return fused
