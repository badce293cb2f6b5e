"""Other pointwise ops: where, clamp (clip, clamp_min, clamp_max), lerp, atan2, hypot, copysign,
xlogy, heaviside, logaddexp/logaddexp2, sinc and nan_to_num.

``where`` and ``atan2`` are primitives; ``clamp`` and ``hypot`` decompose into primitives (a
backend may implement them natively); the rest are written in other ops.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import arithmetic as A
from . import comparison as CMP
from . import creation as CR
from . import indexing as IX
from . import unary as UN
from ._binary import ARITH, FLOATOP, binary, is_operand_tensor, operands, promote
from .declare import composite, defop
from .registry import dispatch, register_op

__all__ = ["where", "clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "lerp",
           "lerp_", "atan2", "atan2_", "arctan2", "arctan2_", "hypot", "hypot_", "copysign", "copysign_", "xlogy",
           "xlogy_", "heaviside", "heaviside_", "logaddexp", "logaddexp2", "sinc", "sinc_", "nan_to_num",
           "nan_to_num_"]

_FLOAT = D._FLOAT
_INT = D._INT

# -- where ----------------------------------------------------------------------------------------


def _where_bw(ctx, g):
    c, a, b = ctx.args
    res = []
    i = 0
    if is_operand_tensor(a):
        res.append(where(c, g, 0.0) if ctx.needs_input_grad[i] else None)
        i += 1
    if is_operand_tensor(b):
        res.append(where(c, 0.0, g) if ctx.needs_input_grad[i] else None)
    return tuple(res)


def _where_scalars(a, b, cond):
    if not (U.is_scalar(a) and U.is_scalar(b)):
        raise TypeError(f"where(): expected Tensors or numbers for input and other, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    ct = D.result_type(a, b)
    # a 0-d tensor carries the result dtype (a kernel given two python numbers could not know it)
    return CR.full((), a, dtype=ct, device=cond._device), U.scalar_value(b, ct, "where"), cond._device, ct


@defop("where", backward=_where_bw, saves=(), method=False, group="ternary")
def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (broadcast; scalars allowed).
    With only a condition: ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return None, IX.nonzero(condition, as_tuple=True), None
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not D.bool:
        if condition._dtype is D.uint8:
            condition = CMP.ne(condition, 0)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{U.type_name(condition._dtype)}")
    a, b, dev, ct = promote("where", input, other, ARITH) if (isinstance(input, Tensor) or isinstance(other, Tensor)) \
        else _where_scalars(input, other, condition)
    if condition._device is not dev:
        if condition._device._type == "cpu" and not condition._shape:
            condition = condition.to(dev)
        else:
            U.common_device("where", condition, *(x for x in (a, b) if isinstance(x, Tensor)))
    shapes = [condition._shape] + [x._shape for x in (a, b) if isinstance(x, Tensor)]
    U.broadcast_all(shapes, "where")
    # the condition is saved (not differentiable); inputs a/b only need their shapes
    return dev, (condition, a, b), operands(a, b)


# -- zero gradients ---------------------------------------------------------------------------------

def _zero_link_bw(ctx, g):
    ms = ctx.args[1:]
    return (g if ctx.needs_input_grad[0] else None,) + tuple(
        CR.zeros(m.shape, dtype=g.dtype, device=g.device) if need else None
        for m, need in zip(ms, ctx.needs_input_grad[1:]))


_ZERO_LINK = register_op("_zero_grad_link", decomposition=lambda v, *others: v.clone(), backward=_zero_link_bw,
                         saves=(), group="unary")


def zero_grad_link(value, *others):
    """``value``, recorded as also depending on ``others`` with zero gradients (as PyTorch's
    ``zeros_like`` formulas: copysign's ``other``, the 0-norm): the result requires grad when they do."""
    ts = tuple(t for t in others if isinstance(t, Tensor) and t.requires_grad)
    if not ts or not value._dtype.is_floating_point:
        return value
    return dispatch(_ZERO_LINK, value._device, (value,) + ts, (value,) + ts)


# -- clamp ----------------------------------------------------------------------------------------

def _clamp_bw(ctx, g):
    x, lo, hi = ctx.args
    mask = None
    if lo is not None:
        mask = CMP.ge(x, lo)
    if hi is not None:
        m2 = CMP.le(x, hi)
        mask = m2 if mask is None else CMP.logical_and(mask, m2)
    return (where(mask, g, 0.0) if mask is not None else g,)


def _clamp_decomp(x, lo, hi):
    r = x
    if lo is not None:
        r = A.maximum(r, lo)
    if hi is not None:
        r = A.minimum(r, hi)
    return r


def _clamp_tensor_bw(ctx, g):
    """PyTorch's gradients of a clamp with tensor bounds: ``input`` where it is within the bounds
    (ties included), ``min`` where input < min (and min < max), ``max`` where input > max (or max
    < min, where the result is max)."""
    x, lo, hi = ctx.args
    zero = 0.0
    if lo is not None and hi is not None:
        gx = where(CMP.logical_and(CMP.ge(x, lo), CMP.le(x, hi)), g, zero)
        glo = where(CMP.logical_and(CMP.lt(x, lo), CMP.lt(lo, hi)), g, zero)
        ghi = where(CMP.logical_or(CMP.gt(x, hi), CMP.lt(hi, lo)), g, zero)
    elif lo is not None:
        gx, glo, ghi = where(CMP.ge(x, lo), g, zero), where(CMP.lt(x, lo), g, zero), None
    else:
        gx, glo, ghi = where(CMP.le(x, hi), g, zero), None, where(CMP.gt(x, hi), g, zero)
    grads = [gr for t, gr in ((x, gx), (lo, glo), (hi, ghi)) if isinstance(t, Tensor)]
    return tuple(gr if need else None for gr, need in zip(grads, ctx.needs_input_grad))


# clamp with a tensor bound: the value of maximum/minimum, PyTorch's gradients at the ties
_CLAMP_TENSOR = register_op("_clamp_tensor", decomposition=_clamp_decomp, backward=_clamp_tensor_bw, group="unary")


def _clamp_bounds(min, max, ct):
    """Scalar bounds as values of ``ct``. For integer dtypes a bound beyond the dtype's range
    cuts nothing (PyTorch wraps it around instead: clamp(uint8 x, min=-1) would give 255)."""
    if ct.category == _INT and ct is not D.int64:
        info = D.iinfo(ct)
        if min is not None and min > info.max or max is not None and max < info.min:
            raise RuntimeError(f"clamp: bound {min if min is not None and min > info.max else max} is outside the "
                               f"range of {ct.name} [{info.min}, {info.max}]: it cannot be converted to type {ct.name} "
                               "without overflow, and every value would be clamped to it")
        if min is not None and min <= info.min:
            min = None
        if max is not None and max >= info.max:
            max = None
    lo = None if min is None else U.scalar_value(min, ct, "clamp")
    hi = None if max is None else U.scalar_value(max, ct, "clamp")
    return lo, hi


@defop("clamp", decomposition=_clamp_decomp, backward=_clamp_bw, result="first", inplace=True, group="unary")
def clamp(input, min=None, max=None):
    """Limit values to [min, max] (either may be None; tensors broadcast)."""
    x = U.tensor_arg(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if x._dtype.category == D._COMPLEX:
        raise NotImplementedError(f"clamp is not supported for complex types ({U.desc(x)})")
    if isinstance(min, Tensor) or isinstance(max, Tensor):  # broadcast bounds: maximum/minimum promote
        inputs = tuple(t for t in (x, min, max) if isinstance(t, Tensor))
        return None, dispatch(_CLAMP_TENSOR, U.common_device("clamp", *inputs), (x, min, max), inputs), None
    ct = D.result_type(x, *(v for v in (min, max) if v is not None))
    if ct is D.bool:
        raise U.dtype_not_implemented("clamp_scalar_cpu" if min is not None and max is not None else
                                      "clamp_min_scalar_cpu" if min is not None else "clamp_max_scalar_cpu", ct)
    if ct is not x._dtype:
        x = x.to(ct)
    lo, hi = _clamp_bounds(min, max, ct)
    if lo is None and hi is None:
        return None, x.clone(), None
    return x._device, (x, lo, hi), (x,)


clamp_ = clamp.inplace
clip, clip_ = clamp, clamp_


def _bound(op, name, v):
    if v is None:  # clamp() takes None for a missing bound; clamp_min/clamp_max need theirs
        raise TypeError(f"{op}(): argument '{name}' must be Tensor or Number, not {type(v).__name__}")
    return v


@composite("clamp_min", inplace=lambda self, min: clamp_(self, min=_bound("clamp_min_", "min", min)))
def clamp_min(input, min):
    """:func:`clamp` with only a lower bound."""
    return clamp(input, min=_bound("clamp_min", "min", min))


@composite("clamp_max", inplace=lambda self, max: clamp_(self, max=_bound("clamp_max_", "max", max)))
def clamp_max(input, max):
    """:func:`clamp` with only an upper bound."""
    return clamp(input, max=_bound("clamp_max", "max", max))


clamp_min_, clamp_max_ = clamp_min.inplace, clamp_max.inplace


# -- binary math ------------------------------------------------------------------------------------

def _atan2_recip(a, b):
    """``1 / (a^2 + b^2)``, 0 at the origin (where atan2's gradient is 0, as PyTorch's)."""
    r = UN.reciprocal(a * a + b * b)
    return where(CMP.isinf(r), 0.0, r)


def _atan2_a(g, a, b):
    return g * b * _atan2_recip(a, b)


def _atan2_b(g, a, b):
    return g * -a * _atan2_recip(a, b)


atan2 = binary("atan2", FLOATOP, _atan2_a, _atan2_b, doc="atan(input / other) by quadrant")
atan2_ = atan2.inplace
arctan2, arctan2_ = atan2, atan2_

hypot = binary("hypot", FLOATOP, lambda g, a, b: g * a / hypot(a, b), lambda g, a, b: g * b / hypot(a, b),
               decomposition=lambda a, b: UN.sqrt(A.add(A.mul(a, a), A.mul(b, b))), doc="sqrt(input^2 + other^2)")
hypot_ = hypot.inplace


def _check_lerp(x, end, weight):
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t._dtype is not x._dtype and (name == "end" or t._shape):
            raise RuntimeError(f"lerp: expected dtype {x._dtype.name} for `{name}` but got dtype {t._dtype.name}")
    if x._dtype.category != _FLOAT:
        raise U.dtype_not_implemented("lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar",
                                      x._dtype)


@composite("lerp", inplace=True)
def lerp(input, end, weight):
    """``input + weight * (end - input)`` for ``|weight| < 0.5``, else ``end - (end - input) * (1 -
    weight)`` (exact at ``weight == 1``), as PyTorch's kernel; float16/bfloat16 compute in float32."""
    x = U.tensor_arg(input, "lerp")
    _check_lerp(x, end, weight)
    dt = x._dtype
    x, e = U.opmath(x), U.opmath(end) if isinstance(end, Tensor) else end
    w = U.opmath(weight) if isinstance(weight, Tensor) else weight
    diff = A.sub(e, x)
    if not isinstance(w, Tensor):
        r = A.add(x, A.mul(w, diff)) if abs(w) < 0.5 else A.sub(e, A.mul(diff, 1 - w))
    else:
        r = where(CMP.lt(UN.abs(w), 0.5), A.add(x, A.mul(w, diff)), A.sub(e, A.mul(diff, A.rsub(w, 1))))
    return U.from_opmath(r, dt)


def _as_tensor_like(v, dtype, dev):
    return CR.full((), v, dtype=dtype, device=dev)


@composite("copysign", inplace=True)
def copysign(input, other):
    """``|input|`` with the sign bit of ``other`` (so -0.0 counts as negative), in a floating dtype."""
    a, b, dev, ct = promote("copysign", input, other, FLOATOP)
    if not isinstance(a, Tensor):
        a = _as_tensor_like(a, ct, dev)
    mag = UN.abs(a)
    if isinstance(b, Tensor):
        return zero_grad_link(where(CMP.signbit(b), UN.neg(mag), mag), b)  # other's gradient: zeros
    return UN.neg(mag) if math.copysign(1.0, b) < 0 else mag


@composite("xlogy", inplace=True)
def xlogy(input, other):
    """``input * log(other)``, and 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    a, b, dev, ct = promote("xlogy", input, other, FLOATOP)
    if not isinstance(b, Tensor):
        b = _as_tensor_like(b, ct, dev)
    # log(other) is replaced by 0 where input is 0 and the log is -inf, NaN or +inf (not for a NaN
    # other): the product is then 0, and the gradients are PyTorch's (for input log(other), 0 where
    # other <= 0; for other input / other, NaN at (0, 0))
    odd = CMP.logical_or(CMP.le(b, 0.0), CMP.eq(b, math.inf))
    zero = CMP.eq(a, 0.0) if isinstance(a, Tensor) else a == 0
    if zero is False:
        return A.mul(a, UN.log(b))
    return A.mul(a, where(odd if zero is True else CMP.logical_and(zero, odd), 0.0, UN.log(b)))


@composite("heaviside", inplace=True)
def heaviside(input, values):
    """0 where ``input < 0``, ``values`` where it is 0, 1 where it is positive."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' must be Tensor, not {type(values).__name__}")
    x = U.tensor_arg(input, "heaviside")
    if x._dtype is not values._dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({U.desc(x)} and "
                           f"{U.desc(values)})")
    return where(CMP.eq(x, 0), values, CMP.gt(x, 0).to(x._dtype))


def _mid(a, b):
    """``a`` where ``a == b``, half of the gradient to each (PyTorch's ``grad / (1 + exp(b - a))``)."""
    return A.add(A.mul(a, 0.5), A.mul(b, 0.5))


@composite("logaddexp")
def logaddexp(input, other):
    """``log(exp(input) + exp(other))`` without overflow."""
    a, b, dev, ct = promote("logaddexp", input, other, FLOATOP)
    a, b = U.opmath(a) if isinstance(a, Tensor) else a, U.opmath(b) if isinstance(b, Tensor) else b
    m = A.maximum(a, b)
    # equal infinities make a - b NaN; their sum is that infinity
    return U.from_opmath(where(CMP.eq(a, b), A.add(_mid(a, b), math.log(2.0)),
                       A.add(m, UN.log1p(UN.exp(UN.neg(UN.abs(A.sub(a, b))))))), ct)


@composite("logaddexp2")
def logaddexp2(input, other):
    """``log2(2**input + 2**other)`` without overflow."""
    a, b, dev, ct = promote("logaddexp2", input, other, FLOATOP)
    a, b = U.opmath(a) if isinstance(a, Tensor) else a, U.opmath(b) if isinstance(b, Tensor) else b
    m = A.maximum(a, b)
    return U.from_opmath(where(CMP.eq(a, b), A.add(_mid(a, b), 1.0),
                       A.add(m, A.div(UN.log1p(UN.exp2(UN.neg(UN.abs(A.sub(a, b))))), UN.LN2))), ct)


@composite("sinc", inplace=True)
def sinc(input):
    """``sin(pi x) / (pi x)``, 1 at 0."""
    x = U.tensor_arg(input, "sinc")
    if x._dtype.category < _FLOAT:
        x = x.to(D.get_default_dtype())
    dt = x._dtype
    x = U.opmath(x)
    px = A.mul(x, math.pi)
    zero = CMP.eq(x, 0.0)
    # 1 at 0; the quotient's denominator is made 1 there so that its gradient is 0, not 0 / 0
    return U.from_opmath(where(zero, 1.0, A.div(UN.sin(px), where(zero, 1.0, px))), dt)


@composite("nan_to_num", inplace=True)
def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):
    """Replace NaN with ``nan`` and infinities with the dtype's extremes (or the values given)."""
    x = U.tensor_arg(input, "nan_to_num")
    if x._dtype.category != _FLOAT:
        return x.clone()
    fi = D.finfo(x._dtype)
    hi = fi.max if posinf is None else posinf
    lo = fi.min if neginf is None else neginf
    r = where(CMP.isnan(x), float(nan), x)
    r = where(CMP.eq(r, math.inf), float(hi), r)
    return where(CMP.eq(r, -math.inf), float(lo), r)


lerp_, copysign_, xlogy_, heaviside_ = lerp.inplace, copysign.inplace, xlogy.inplace, heaviside.inplace
sinc_, nan_to_num_ = sinc.inplace, nan_to_num.inplace
