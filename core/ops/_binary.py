"""Two operands: PyTorch's type promotion (python scalars and 0-d tensors included), device and
broadcast checks, and the declaration of elementwise binary ops built on them.

A binary op's meta is :func:`binary_meta`: it promotes both operands to the compute dtype
(casting tensors, converting python scalars), checks devices and broadcasting, and returns the
plan ``(device, (a, b), inputs)``; ``inputs`` holds the operands that are tensors.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import _dtype as D
from .._layout import SparseKernels
from .._tensor import Tensor
from . import _args as U
from . import copy as CP
from .declare import defop
from .registry import ALL

_FLOAT = D._FLOAT
_COMPLEX = D._COMPLEX
_combine = D.combine_levels
_scalar_dtype = D.scalar_dtype

# kinds of binary ops: how the compute dtype is chosen and which dtypes are refused
ARITH, FLOATOP, COMPARE, LOGICAL, BITWISE = range(5)


def promote(op: str, a, b, kind: int):
    """Promote, cast and check two operands; returns ``(a, b, device, compute dtype)``."""
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    if ta and tb:
        da, db = a._dtype, b._dtype
        if da is db:
            ct = da
        else:
            ct = D.result_type(a, b)
        dev = a._device
        if b._device is not dev:
            dev = U.common_device(op, a, b)
            if dev._kernels.__class__ is SparseKernels and ((a._shape and a._device is not dev)
                                                             or (b._shape and b._device is not dev)):
                raise RuntimeError(f"{op}: ember does not combine a sparse_coo tensor with a dense one elementwise "
                                   "(see docs/sparse.md); convert it with .to_dense()")
            if a._device is not dev:
                a = a.item() if not a._requires_grad else a.to(dev)
                ta = isinstance(a, Tensor)
            if b._device is not dev:
                b = b.item() if not b._requires_grad else b.to(dev)
                tb = isinstance(b, Tensor)
        if ta and tb and a._shape != b._shape:
            U.broadcast_shapes(a._shape, b._shape, op)
    elif ta:
        if not U.is_scalar(b):
            raise TypeError(f"{op}(): unsupported operand type {type(b).__name__} (expected a Tensor or a number)")
        ct = _combine(None, a._dtype, _scalar_dtype(b)) if not a._shape else _combine(a._dtype, None, _scalar_dtype(b))
        dev = a._device
    elif tb:
        if not U.is_scalar(a):
            raise TypeError(f"{op}(): unsupported operand type {type(a).__name__} (expected a Tensor or a number)")
        ct = _combine(None, b._dtype, _scalar_dtype(a)) if not b._shape else _combine(b._dtype, None, _scalar_dtype(a))
        dev = b._device
    else:
        raise TypeError(f"{op}(): expected at least one Tensor argument, got {type(a).__name__} and {type(b).__name__}")
    if kind == FLOATOP and ct.category < _FLOAT:
        ct = D.get_default_dtype()
    elif kind == BITWISE and ct.category >= _FLOAT:
        raise U.dtype_not_implemented(f"{op}_cpu", ct, f"{op} needs integer or bool operands")
    if ta:
        if a._dtype is not ct:
            a = CP.cast(a, ct, op)
    else:
        a = _reduced_scalar(U.scalar_value(a, ct, op), ct, op)
    if tb:
        if b._dtype is not ct:
            b = CP.cast(b, ct, op)
    else:
        b = _reduced_scalar(U.scalar_value(b, ct, op), ct, op)
    return a, b, dev, ct


#: per kind, whether two operands of one dtype compute in it (index: the dtype's category)
_SAME_DTYPE = {ARITH: (True,) * 4, COMPARE: (True,) * 4, LOGICAL: (True,) * 4,
               FLOATOP: tuple(c >= _FLOAT for c in range(4)), BITWISE: tuple(c < _FLOAT for c in range(4))}


def plan(op: str, a, b, kind: int):
    """:func:`promote` as a meta's plan, ``(device, (a, b), inputs)``. Two tensors of one dtype,
    device and shape that ``kind`` takes as they are (most calls) skip promotion: nothing to
    cast, convert or broadcast-check; so does a float32/float64 tensor with a python float first."""
    if isinstance(a, Tensor):
        dt = a._dtype
        if isinstance(b, Tensor):
            dev = a._device
            if dt is b._dtype and dev is b._device and a._shape == b._shape and _SAME_DTYPE[kind][dt.category]:
                t = (a, b)
                return dev, t, t
        elif b.__class__ is float and dt.category == _FLOAT and dt.itemsize != 2 and kind != BITWISE:
            return a._device, (a, b), (a,)
    a, b, dev, _ = promote(op, a, b, kind)
    return dev, (a, b), operands(a, b)


def _reduced_scalar(v, ct, op: str):
    """A python float next to a float16/bfloat16 tensor, as PyTorch takes it: rounded to the
    tensor's dtype (``bf16(0.1) == 0.1`` holds, ``f16(0.1) - 0.1`` is 0), except by mul, div
    and floor_divide, whose kernels keep it exact and compute in float32 (as the cpu backend does)."""
    if ct.itemsize == 2 and ct.category == _FLOAT and isinstance(v, float) and op not in _EXACT_SCALAR:
        return float(np.array(v, dtype=ct.np))
    return v


_EXACT_SCALAR = frozenset({"mul", "div", "floor_divide"})


def operands(a, b) -> tuple:
    """The tensors among two (promoted) operands, in order: the ``inputs`` autograd sees."""
    if isinstance(a, Tensor):
        return (a, b) if isinstance(b, Tensor) else (a,)
    return (b,)


def saves_other(args, needs) -> tuple:
    """``saves`` of an op whose gradient for each operand reads only the other one (``mul``,
    ``matmul``): ``a`` is saved when ``b`` needs a gradient and ``b`` when ``a`` does; with one
    tensor operand nothing is (PyTorch saves no more, so ``y = x * 2; x.add_(1)`` still backprops)."""
    if len(needs) < 2:
        return ()
    if needs[1]:
        return (0, 1) if needs[0] else (0,)
    return (1,) if needs[0] else ()


def is_operand_tensor(x) -> bool:
    """Whether a saved operand is a tensor (or its metadata), not a python scalar."""
    return not isinstance(x, (int, float, bool, complex))


def binary_grads(ctx, g, fa, fb) -> tuple:
    """A binary op's backward: ``fa(g, a, b)`` and ``fb(g, a, b)`` for the operands that are
    tensors and need a gradient."""
    if g._dtype.category == _COMPLEX:  # PyTorch's convention: grad * conj(d out / d operand)
        return tuple(None if r is None else U.cj(r) for r in _grads(ctx, g.conj_physical(), fa, fb))
    return _grads(ctx, g, fa, fb)


def _grads(ctx, g, fa, fb) -> tuple:
    a, b = ctx.args[0], ctx.args[1]
    res = []
    i = 0
    if is_operand_tensor(a):
        res.append(fa(g, a, b) if ctx.needs_input_grad[i] else None)
        i += 1
    if is_operand_tensor(b):
        res.append(fb(g, a, b) if ctx.needs_input_grad[i] else None)
    return tuple(res)


#: the elementwise binary ops defined on real numbers only: complex operands are refused
REAL_ONLY = frozenset({"lt", "le", "gt", "ge", "maximum", "minimum", "fmax", "fmin", "fmod", "remainder", "atan2",
                       "hypot", "copysign", "nextafter", "heaviside", "logaddexp", "logaddexp2", "xlogy"})


def binary_meta(name: str, kind: int, no_bool: bool = False):
    """The meta of an elementwise binary op: ``(input, other) -> (device, (a, b), inputs)``;
    ``no_bool`` refuses bool operands (as PyTorch)."""
    if name in REAL_ONLY:  # (complex numbers have no order)
        def meta(input, other):
            p = plan(name, input, other, kind)
            ct = p[2][0]._dtype  # (the promoted tensors have the compute dtype)
            if ct.category == _COMPLEX or (no_bool and ct is D.bool):
                raise U.dtype_not_implemented(f"{name}_cpu", ct)
            return p
    elif no_bool:
        def meta(input, other):
            p = plan(name, input, other, kind)
            if p[2][0]._dtype is D.bool:
                raise U.dtype_not_implemented(f"{name}_cpu", D.bool)
            return p
    else:
        same = _SAME_DTYPE[kind]
        scalar_ok = kind != BITWISE

        def meta(input, other):
            if isinstance(input, Tensor):
                dt = input._dtype
                if isinstance(other, Tensor):  # (plan, inline: x + y and the like)
                    dev = input._device
                    if (dt is other._dtype and dev is other._device and input._shape == other._shape
                            and same[dt.category]):
                        t = (input, other)
                        return dev, t, t
                elif other.__class__ is float and dt.category == _FLOAT and dt.itemsize != 2 and scalar_ok:
                    # a float32/float64 tensor and a python float (x * 0.5): the tensor's dtype,
                    # the number as it is (what promote gives, without its steps)
                    return input._device, (input, other), (input,)
            a, b, dev, _ = promote(name, input, other, kind)
            return dev, (a, b), operands(a, b)
        meta.same = same  # (the Tensor operators take this plain case inline: ember._methods._operator)
    meta.__name__ = meta.__qualname__ = name
    return meta


def binary(name: str, kind: int, fa=None, fb=None, *, saves=ALL, save_output=False, decomposition=None, doc: str = "",
           no_bool: bool = False, inplace: bool = True):
    """Declare an elementwise binary op ``f(input, other, *, out=None)`` (and ``f_(self, other)``)
    whose gradients are ``fa(g, a, b)`` and ``fb(g, a, b)`` (both None: not differentiable)."""
    differentiable = fa is not None
    backward = (lambda ctx, g: binary_grads(ctx, g, fa, fb)) if differentiable else None
    result = "elementwise" if kind in (ARITH, FLOATOP, BITWISE) else None  # comparisons give bool
    return defop(name, binary_meta(name, kind, no_bool), backward=backward, saves=saves, save_output=save_output,
                 decomposition=decomposition, differentiable=differentiable, result=result, inplace=inplace,
                 group="binary", doc=doc, module=_caller())


def _caller() -> str:
    return sys._getframe(2).f_globals.get("__name__", __name__)
