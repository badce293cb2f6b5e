"""Unary, binary and ternary (``where``) kernels, with ``out=`` support (the output may alias an
input at the same positions; any other overlap goes through a temporary)."""
from __future__ import annotations

from ember.backend import Tensor, broadcast_shapes, describe
from ember.backend import dtypes as D

from . import cplx
from . import elementwise as ew
from . import tensors as tn
from .memory import k_copy_
from .ops import BINARY, UNARY, helpers_for, vector_form
from .types import TYPES, T


def _overlaps(out: Tensor, xs, shape) -> bool:
    for x in xs:
        if isinstance(x, Tensor) and x._storage is out._storage:
            if x._offset != out._offset or x._stride != out._stride or x._shape != shape:
                return True
    return False


def _finish(cd, needs_err: bool, op: str, xs) -> None:
    if needs_err and cd.read_error() is not None:
        raise RuntimeError(f"ZeroDivisionError: {op}: integer division by zero "
                           f"({', '.join(describe(x) for x in xs)})")


def _spec(table, name, t):
    r = cplx.spec(name, t, TYPES) if t.is_complex else (table[name](t) if name in table else None)
    if r is None:
        raise RuntimeError(f"\"{name}\" not implemented for '{t.name}' on opencl")
    return r


def _specs(table: dict, name: str):
    """``spec(t)``: op ``name``'s (expression, result type, needs the error flag, helpers, vector
    form) for operand type ``t``, made once per type."""
    specs: dict = {}

    def spec(t):
        s = specs.get(t.name)
        if s is None:
            sp = _spec(table, name, t)
            vx = vector_form(name, t, sp[0])
            s = specs[t.name] = sp + (helpers_for(sp[0] + (vx or "")), vx)
        return s
    return spec


def _apply(name: str, s: tuple, ops: list, shape: tuple, out, x: Tensor, xs: tuple) -> Tensor:
    """Run op ``name`` (its spec ``s``) over ``ops`` into ``out`` (None: a new tensor); an ``out``
    of another dtype, or overlapping an input elsewhere, gets the result through a temporary."""
    expr, rt, err, helpers, vx = s
    cd = tn.cl_dev(x)
    if out is not None and (out._dtype is not rt.dtype or _overlaps(out, xs, shape)):
        r = ew.run(name, expr, rt, ops, shape, None, x._device, cd, err, helpers, vx)
        _finish(cd, err, name, xs)
        return k_copy_(out, r)
    r = ew.run(name, expr, rt, ops, shape, out, x._device, cd, err, helpers, vx)
    _finish(cd, err, name, xs)
    return r


def unary(name: str):
    spec = _specs(UNARY, name)

    def k(x: Tensor, out: Tensor | None = None) -> Tensor:
        return _apply(name, spec(T(x._dtype)), [x], x._shape, out, x, (x,))
    k.__name__ = f"k_{name}"
    return k


def binary(name: str):
    spec = _specs(BINARY, name)

    def k(a, b, out: Tensor | None = None) -> Tensor:
        if isinstance(a, Tensor):
            x = a
            if isinstance(b, Tensor):
                shape = a._shape if a._shape == b._shape else broadcast_shapes(a._shape, b._shape, name)
            else:
                shape = a._shape
        else:
            x = b
            shape = b._shape
        t = T(x._dtype)
        ops = [a if isinstance(a, Tensor) else (a, t), b if isinstance(b, Tensor) else (b, t)]
        return _apply(name, spec(t), ops, shape, out, x, (a, b))
    k.__name__ = f"k_{name}"
    return k


def k_where(c: Tensor, a, b) -> Tensor:
    xs = [v for v in (a, b) if isinstance(v, Tensor)]
    ref = xs[0] if xs else c
    t = T(xs[0]._dtype) if xs else _scalar_type(a, b)
    shape = c._shape
    for v in xs:
        if v._shape != shape:
            shape = broadcast_shapes(shape, v._shape, "where")
    ops = [c, a if isinstance(a, Tensor) else (a, t), b if isinstance(b, Tensor) else (b, t)]
    return ew.run("where", "(a ? b : c)", t, ops, shape, None, ref._device, tn.cl_dev(ref))


def _scalar_type(a, b):
    if isinstance(a, complex) or isinstance(b, complex):
        return T(D.to_complex(D.get_default_dtype()))
    if isinstance(a, float) or isinstance(b, float):
        return T(D.get_default_dtype())
    if isinstance(a, bool) and isinstance(b, bool):
        return T(D.bool)
    return T(D.int64)


KERNELS = {name: unary(name) for name in UNARY}
KERNELS["conj_physical"] = unary("conj_physical")  # complex tensors only (the core copies real ones)
KERNELS.update({name: binary(name) for name in BINARY})
KERNELS["where"] = k_where
OUT = frozenset(KERNELS) - {"where", "logical_not", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                             "logical_or", "logical_xor"}
