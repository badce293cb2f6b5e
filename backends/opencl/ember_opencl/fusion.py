"""Fused elementwise chains for ``ember.compile`` (``Backend.fuse_elementwise``): one generated
OpenCL C kernel per chain.

Each op's expression (the same table the single-op kernels use, :mod:`.kernels.ops`) has its
operands replaced by the chain's input names or by the expressions of the ops before it, so the
chain becomes one expression the elementwise kernel generator (:func:`.kernels.elementwise.run`)
compiles once, with every layout it knows (contiguous vector loads, broadcast and strided
inputs). Python numbers are written into the source as exact hexadecimal literals of the chain's
type. The intermediates stay in registers, in the compute type: float32 results are those of the
op-by-op kernels up to the compiler's contraction of a multiply and an add; float16 ones are
rounded once, at the end, instead of after each op. A chain with more tensor inputs than a
kernel takes (seven) is declined.
"""
from __future__ import annotations

import re

from .kernels import elementwise as ew
from .kernels import pointwise as pw
from .kernels import tensors as tn
from .kernels.ops import BINARY, UNARY
from .kernels.types import T

__all__ = ["fuse_elementwise", "expressions"]

_OPERAND = re.compile(r"\b[ab]\b")
_specs: dict = {}


def _spec(name, arity, t):
    key = (name, arity)
    f = _specs.get(key)
    if f is None:
        f = _specs[key] = pw._specs(UNARY if arity == 1 else BINARY, name)
    return f(t)


def _subst(template: str, terms: list) -> str:
    return _OPERAND.sub(lambda m: terms[0] if m.group(0) == "a" else terms[1], template)


def _literal(v, t) -> str:
    return f"(({t.ct}){float(v).hex()})"


def expressions(chain):
    """``(expr, vexpr, helpers)``: the chain as one C expression over the inputs ``a, b, c...``,
    its vector form (None when an op has none) and the helper functions it calls; None when an op
    has no float expression here or needs the error flag."""
    t = T(chain.dtype)
    exprs: list = []
    vexprs: list = []
    helpers: list = []
    vector = True
    for name, args in chain.ops:
        if (len(args) == 1 and name not in UNARY) or (len(args) == 2 and name not in BINARY):
            return None
        expr, rt, err, hp, vx = _spec(name, len(args), t)
        if err or rt is not t:
            return None
        terms, vterms = [], []
        for a in args:
            if isinstance(a, tuple):
                terms.append(ew.NAMES[a[1]] if a[0] == "in" else f"({exprs[a[1]]})")
                vterms.append(ew.NAMES[a[1]] if a[0] == "in" else f"({vexprs[a[1]]})" if vector else "")
            else:
                lit = _literal(a, t)
                terms.append(lit)
                vterms.append(f"(({{vt}}){lit})")
        exprs.append(_subst(expr, terms))
        if vx is None:
            vector = False
        if vector:
            vexprs.append(_subst(vx, vterms))
        if hp and hp not in helpers:
            helpers.append(hp)
    return exprs[-1], (vexprs[-1] if vector else None), "".join(helpers)


def fuse_elementwise(chain):
    """The fused callable of ``chain`` (see the module docstring), or None."""
    if len(chain.inputs) > len(ew.NAMES) or not chain.inputs:
        return None
    t = T(chain.dtype)
    if not t.is_float or t.bf16 or t.is_complex:
        return None
    built = expressions(chain)
    if built is None:
        return None
    expr, vexpr, helpers = built
    shape = tuple(chain.shape)
    key = ("fused", expr)

    def fused(*inputs):
        x = inputs[0]
        return ew.run(key, expr, t, list(inputs), shape, None, x._device, tn.cl_dev(x), False, helpers, vexpr)
    fused.__name__ = "fused_" + "_".join(n for n, _ in chain.ops)
    return fused
