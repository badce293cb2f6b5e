"""Elementwise ops: unary math, binary arithmetic with PyTorch's type promotion (python scalars
and 0-d tensors included), comparisons, logical and bitwise ops, ``where`` and friends.

Primitives (see :mod:`ember.ops.primitives`) go straight to the backend; the other ops have a
decomposition into primitives, which a backend may replace by a native kernel, and a backward
formula of their own.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .. import _state
from .._tensor import Tensor
from . import _util as U
from .registry import ALL, dispatch, inplace, register_op

_grad = _state.grad
_FLOAT = D._FLOAT
_INT = D._INT
_combine = D.combine_levels
_scalar_dtype = D.scalar_dtype
_PROMOTE = D._PROMOTE


def _tensor_arg(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    return x


def _cast(t: Tensor, dtype) -> Tensor:
    from .copy import _to_copy
    return _to_copy(t, dtype, t._device)


def write_out(out, r: Tensor, op: str) -> Tensor:
    """Store result ``r`` into the user's ``out=`` tensor (resized when its shape differs)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _grad.enabled and (r._requires_grad or out._requires_grad):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if not D.can_cast(r._dtype, out._dtype):
        raise RuntimeError(f"{op}: result type {_tname(r._dtype)} can't be cast to the desired output type {_tname(out._dtype)}")
    if out._device != r._device:
        raise RuntimeError(f"{op}: Expected out tensor to have device {r._device}, but got {out._device} instead")
    if out._shape != r._shape:
        out.resize_(r._shape)
    from .copy import copy_
    return copy_(out, r)


def _tname(dt) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}[dt.name]


def _scalar_value(v, dtype, op):
    cat = dtype.category
    if cat == _FLOAT:
        return float(v)
    if cat == _INT:
        if isinstance(v, float):
            return v  # only reached for ops that allow it (e.g. pow with a float exponent)
        v = int(v)
        if dtype is not D.int64:
            info = D.iinfo(dtype)
            if v < info.min or v > info.max:
                raise RuntimeError(f"{op}: value {v} cannot be converted to type {dtype.name} without overflow")
        return v
    return bool(v)


# kinds of binary ops
ARITH, FLOATOP, CMP, LOGICAL, BITWISE = range(5)


def prep2(op: str, a, b, kind: int):
    """Promote, cast and check two operands; returns (a, b, device, compute dtype)."""
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
    if kind == FLOATOP and ct.category != _FLOAT:
        ct = D.get_default_dtype()
    elif kind == BITWISE and ct.category == _FLOAT:
        raise RuntimeError(f"\"{op}_cpu\" not implemented for '{_tname(ct)}': {op} needs integer or bool operands")
    if ta:
        if a._dtype is not ct:
            a = _cast(a, ct)
    else:
        a = _scalar_value(a, ct, op)
    if tb:
        if b._dtype is not ct:
            b = _cast(b, ct)
    else:
        b = _scalar_value(b, ct, op)
    return a, b, dev, ct


def _inputs(a, b):
    if isinstance(a, Tensor):
        return (a, b) if isinstance(b, Tensor) else (a,)
    return (b,)


def _is_t(x) -> bool:
    return not isinstance(x, (int, float, bool))


def _bin_grads(ctx, g, fa, fb):
    a, b = ctx.args[0], ctx.args[1]
    res = []
    i = 0
    if _is_t(a):
        res.append(fa(g, a, b) if ctx.needs_input_grad[i] else None)
        i += 1
    if _is_t(b):
        res.append(fb(g, a, b) if ctx.needs_input_grad[i] else None)
    return tuple(res)


def _binary(name, kind, fa=None, fb=None, *, saves=ALL, save_output=False, decomposition=None, primitive=False,
            doc="", inplace_ok=True):
    """Register a binary op and build its front end ``f(input, other, *, out=None)`` and
    in-place form ``f_(self, other)``."""
    differentiable = fa is not None
    bw = (lambda ctx, g: _bin_grads(ctx, g, fa, fb)) if differentiable else None
    op = register_op(name, backward=bw, saves=saves, save_output=save_output, decomposition=decomposition,
                     primitive=primitive, differentiable=differentiable, group="binary", doc=doc)

    def fn(input, other, *, out=None):
        a, b, dev, _ = prep2(name, input, other, kind)
        r = dispatch(op, dev, (a, b), _inputs(a, b))
        return r if out is None else write_out(out, r, name)

    def fn_(self, other):
        if not isinstance(self, Tensor):
            raise TypeError(f"{name}_(): self must be a Tensor")
        a, b, dev, ct = prep2(name, self, other, kind)
        rdt = D.bool if kind in (CMP, LOGICAL) else ct
        if kind in (CMP, LOGICAL):
            r = dispatch(op, dev, (a, b), _inputs(a, b))
            from .copy import copy_
            return copy_(self, r)
        if not D.can_cast(rdt, self._dtype):
            raise RuntimeError(f"result type {_tname(rdt)} can't be cast to the desired output type {_tname(self._dtype)}")
        if a is not self:  # promoted: compute out of place, then write back
            r = dispatch(op, dev, (a, b), _inputs(a, b))
            from .copy import copy_
            return copy_(self, r)
        if isinstance(b, Tensor) and b._shape != self._shape:
            if U.broadcast_shapes(self._shape, b._shape, name) != self._shape:
                raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape "
                                   f"{list(U.broadcast_shapes(self._shape, b._shape, name))}")
        return inplace(op, self, dev, (self, b), _inputs(self, b), 0)

    fn.__name__ = name
    fn_.__name__ = name + "_"
    fn.__doc__ = doc
    return op, fn, fn_


# -- binary arithmetic -----------------------------------------------------------------------

_ADD, _add, add_inplace = _binary("add", ARITH, lambda g, a, b: g, lambda g, a, b: g, saves=(), primitive=True,
                                  doc="``input + other`` (with ``alpha``: ``input + alpha * other``).")
_SUB, _sub, sub_inplace = _binary("sub", ARITH, lambda g, a, b: g, lambda g, a, b: -g, saves=(), primitive=True,
                                  doc="``input - other``")
_MUL, mul, mul_ = _binary("mul", ARITH, lambda g, a, b: g * b, lambda g, a, b: g * a, primitive=True,
                          doc="``input * other``")
_DIV, _true_div, _true_div_ = _binary(
    "div", FLOATOP, lambda g, a, b: g / b, lambda g, a, b: -g * a / (b * b), primitive=True,
    doc="``input / other`` (true division; ``rounding_mode`` 'trunc' or 'floor' rounds)")


def _check_bool_sub(a, b):
    if isinstance(a, Tensor) and a._dtype is D.bool and (not isinstance(b, Tensor) or b._dtype is D.bool) and \
            (isinstance(b, Tensor) or isinstance(b, bool)):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``."""
    if alpha != 1:
        other = mul(other, alpha)
    return _add(input, other, out=out)


def add_(self, other, *, alpha=1):
    if alpha != 1:
        other = mul(other, alpha)
    return add_inplace(self, other)


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``."""
    _check_bool_sub(input, other)
    if alpha != 1:
        other = mul(other, alpha)
    return _sub(input, other, out=out)


def sub_(self, other, *, alpha=1):
    _check_bool_sub(self, other)
    if alpha != 1:
        other = mul(other, alpha)
    return sub_inplace(self, other)


subtract = sub


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


def _is_int(x):
    return (isinstance(x, Tensor) and x._dtype.category <= _INT) or (isinstance(x, (int, bool)) and not isinstance(x, float))


def div(input, other, *, rounding_mode=None, out=None):
    """``input / other``; ``rounding_mode`` None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return _true_div(input, other, out=out)
    if rounding_mode == "trunc":
        if _is_int(input) and _is_int(other):
            a, b, dev, _ = prep2("div", input, other, ARITH)
            r = dispatch(_DIV, dev, (a, b), ())  # integer division truncates (primitive contract)
        else:
            r = trunc(_true_div(input, other))
        return r if out is None else write_out(out, r, "div")
    if rounding_mode == "floor":
        return floor_divide(input, other, out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _true_div_(self, other)
    from .copy import copy_
    r = div(self, other, rounding_mode=rounding_mode)
    if not D.can_cast(r._dtype, self._dtype):
        raise RuntimeError(f"result type {_tname(r._dtype)} can't be cast to the desired output type {_tname(self._dtype)}")
    return copy_(self, r)


divide = div
true_divide = _true_div


def _floor_div_decomp(a, b):
    if (a._dtype if isinstance(a, Tensor) else b._dtype).category != _FLOAT:
        dev = a._device if isinstance(a, Tensor) else b._device
        q = dispatch(_DIV, dev, (a, b), ())  # truncated
        r = fmod(a, b)
        adjust = logical_and(ne(r, 0), ne(lt(r, 0), lt(b, 0) if isinstance(b, Tensor) else (b < 0)))
        return sub(q, adjust.to(q._dtype))
    # python's float floor division: (a - fmod(a, b)) / b, corrected
    mod = fmod(a, b)
    d = _true_div(sub(a, mod), b)
    fix = logical_and(ne(mod, 0), ne(lt(b, 0), lt(mod, 0)))
    d = where(fix, sub(d, 1.0), d)
    fl = floor(d)
    fl = where(gt(sub(d, fl), 0.5), add(fl, 1.0), fl)
    if not isinstance(b, Tensor):
        return fl if b != 0 else _true_div(a, b)
    return where(ne(b, 0), fl, _true_div(a, b))  # x // 0 is +-inf or nan, as true division


_FLOOR_DIV = register_op("floor_divide", decomposition=_floor_div_decomp, differentiable=False, group="binary")


def floor_divide(input, other, *, out=None):
    """Division rounded toward negative infinity (python's ``//``)."""
    a, b, dev, _ = prep2("floor_divide", input, other, ARITH)
    if isinstance(a, Tensor) and a._dtype is D.bool or (not isinstance(a, Tensor) and b._dtype is D.bool):
        raise RuntimeError("\"div_floor_cpu\" not implemented for 'Bool'")
    r = dispatch(_FLOOR_DIV, dev, (a, b), _inputs(a, b))
    return r if out is None else write_out(out, r, "floor_divide")


def floor_divide_(self, other):
    from .copy import copy_
    return copy_(self, floor_divide(self, other))


_FMOD, fmod, fmod_ = _binary("fmod", ARITH, lambda g, a, b: g, lambda g, a, b: -g * trunc(a / b), primitive=True,
                             doc="C's fmod: remainder with the sign of the dividend")


def _remainder_decomp(a, b):
    r = fmod(a, b)
    fix = logical_and(ne(r, 0), ne(lt(r, 0), lt(b, 0) if isinstance(b, Tensor) else (b < 0)))
    return where(fix, add(r, b), r)


_REMAINDER, remainder, remainder_ = _binary(
    "remainder", ARITH, lambda g, a, b: g, lambda g, a, b: -g * floor_divide(a, b), decomposition=_remainder_decomp,
    doc="python's ``%``: remainder with the sign of the divisor")


def _max_a(g, a, b):
    return where(eq(a, b), g / 2, where(gt(a, b), g, 0.0))


def _max_b(g, a, b):
    return where(eq(a, b), g / 2, where(lt(a, b), g, 0.0))


_MAXIMUM, maximum, _maximum_ = _binary("maximum", ARITH, _max_a, _max_b, primitive=True, doc="elementwise maximum (NaN propagates)")
_MINIMUM, minimum, _minimum_ = _binary("minimum", ARITH, _max_b, _max_a, primitive=True, doc="elementwise minimum (NaN propagates)")


def _fmax_decomp(a, b):
    return where(isnan(a), b, where(isnan(b), a, maximum(a, b)))


def _fmin_decomp(a, b):
    return where(isnan(a), b, where(isnan(b), a, minimum(a, b)))


_FMAX, fmax, _fmax_ = _binary("fmax", ARITH, lambda g, a, b: where(logical_or(ge(a, b), isnan(b)), g, 0.0),
                              lambda g, a, b: where(logical_and(logical_not(ge(a, b)), logical_not(isnan(b))), g, 0.0),
                              decomposition=_fmax_decomp, doc="elementwise maximum ignoring NaN")
_FMIN, fmin, _fmin_ = _binary("fmin", ARITH, lambda g, a, b: where(logical_or(le(a, b), isnan(b)), g, 0.0),
                              lambda g, a, b: where(logical_and(logical_not(le(a, b)), logical_not(isnan(b))), g, 0.0),
                              decomposition=_fmin_decomp, doc="elementwise minimum ignoring NaN")


def _atan2_a(g, a, b):
    return g * b / (a * a + b * b)


def _atan2_b(g, a, b):
    return -g * a / (a * a + b * b)


_ATAN2, atan2, atan2_ = _binary("atan2", FLOATOP, _atan2_a, _atan2_b, primitive=True, doc="atan(input / other) by quadrant")
arctan2 = atan2


def _hypot_decomp(a, b):
    return sqrt(add(mul(a, a), mul(b, b)))


_HYPOT, hypot, hypot_ = _binary("hypot", FLOATOP, lambda g, a, b: g * a / hypot(a, b), lambda g, a, b: g * b / hypot(a, b),
                                decomposition=_hypot_decomp, doc="sqrt(input^2 + other^2)")


def _pow_a(g, a, b):
    if isinstance(b, (int, float)):
        if b == 0:
            return g * 0.0
        return g * b * pow(a, b - 1)
    return g * b * pow(a, b - 1)


def _pow_b(g, a, b):
    if isinstance(a, (int, float)):
        return g * pow(a, b) * math.log(a) if a > 0 else g * 0.0
    la = log(a)
    return g * pow(a, b) * where(logical_and(eq(a, 0), ge(b, 0)), 0.0, la)


_POW = register_op("pow", primitive=True, group="binary", backward=lambda ctx, g: _bin_grads(ctx, g, _pow_a, _pow_b))


def pow(input, exponent, *, out=None):
    """``input ** exponent``; integer tensors to negative integer powers are refused."""
    if isinstance(input, Tensor) and input._dtype.category <= _INT:
        if isinstance(exponent, float) and not isinstance(exponent, bool):
            input = _cast(input, D.get_default_dtype())
        elif isinstance(exponent, int) and exponent < 0 and input._dtype is not D.bool:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        elif isinstance(exponent, Tensor) and exponent._dtype.category <= _INT and exponent._dtype is not D.bool:
            if bool((exponent < 0).any()):
                raise RuntimeError("Integers to negative integer powers are not allowed.")
    a, b, dev, _ = prep2("pow", input, exponent, ARITH)
    r = dispatch(_POW, dev, (a, b), _inputs(a, b))
    return r if out is None else write_out(out, r, "pow")


def pow_(self, exponent):
    a, b, dev, ct = prep2("pow", self, exponent, ARITH)
    if not D.can_cast(ct, self._dtype):
        raise RuntimeError(f"result type {_tname(ct)} can't be cast to the desired output type {_tname(self._dtype)}")
    if a is not self:
        from .copy import copy_
        return copy_(self, pow(a, b))
    return inplace(_POW, self, dev, (self, b), _inputs(self, b), 0)


def float_power(input, exponent):
    """``pow`` computed in float64."""
    x = input.to(D.float64) if isinstance(input, Tensor) else input
    e = exponent.to(D.float64) if isinstance(exponent, Tensor) else float(exponent)
    return pow(x, e)


# -- comparisons, logical and bitwise --------------------------------------------------------

_EQ, eq, eq_ = _binary("eq", CMP, primitive=True, doc="``input == other``")
_NE, ne, ne_ = _binary("ne", CMP, primitive=True, doc="``input != other``")
_LT, lt, lt_ = _binary("lt", CMP, primitive=True, doc="``input < other``")
_LE, le, le_ = _binary("le", CMP, primitive=True, doc="``input <= other``")
_GT, gt, gt_ = _binary("gt", CMP, primitive=True, doc="``input > other``")
_GE, ge, ge_ = _binary("ge", CMP, primitive=True, doc="``input >= other``")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
_LAND, logical_and, logical_and_ = _binary("logical_and", LOGICAL, primitive=True, doc="elementwise logical and")
_LOR, logical_or, logical_or_ = _binary("logical_or", LOGICAL, primitive=True, doc="elementwise logical or")
_LXOR, logical_xor, logical_xor_ = _binary("logical_xor", LOGICAL, primitive=True, doc="elementwise logical xor")
_BAND, bitwise_and, bitwise_and_ = _binary("bitwise_and", BITWISE, primitive=True, doc="elementwise bitwise and")
_BOR, bitwise_or, bitwise_or_ = _binary("bitwise_or", BITWISE, primitive=True, doc="elementwise bitwise or")
_BXOR, bitwise_xor, bitwise_xor_ = _binary("bitwise_xor", BITWISE, primitive=True, doc="elementwise bitwise xor")


def bitwise_not(input, *, out=None):
    """``~input``: logical not for bool, bit flip for integers."""
    x = _tensor_arg(input, "bitwise_not")
    if x._dtype is D.bool:
        r = logical_not(x)
    elif x._dtype.category == _INT:
        r = bitwise_xor(x, -1 if x._dtype.is_signed else D.iinfo(x._dtype).max)
    else:
        raise RuntimeError(f"\"bitwise_not_cpu\" not implemented for '{_tname(x._dtype)}'")
    return r if out is None else write_out(out, r, "bitwise_not")


def bitwise_not_(self):
    from .copy import copy_
    return copy_(self, bitwise_not(self))


def _shift(input, other, left: bool):
    a, b, dev, ct = prep2("bitwise_shift", input, other, BITWISE)
    factor = pow(2, b) if isinstance(b, Tensor) else 2 ** b
    if left:
        return mul(a, factor)
    return floor_divide(a, factor)


def bitwise_left_shift(input, other):
    return _shift(input, other, True)


def bitwise_right_shift(input, other):
    return _shift(input, other, False)


# -- unary -----------------------------------------------------------------------------------

SAME, FLOATU, BOOLU, ROUNDU = range(4)


def _unary(name, kind, backward=None, *, saves=ALL, save_output=False, decomposition=None, primitive=False, doc=""):
    op = register_op(name, backward=backward, saves=saves, save_output=save_output, decomposition=decomposition,
                     primitive=primitive, group="unary", doc=doc,
                     differentiable=backward is not None)

    def fn(input, *, out=None):
        x = input if isinstance(input, Tensor) else _tensor_arg(input, name)
        if kind == FLOATU:
            if x._dtype.category != _FLOAT:
                x = _cast(x, D.get_default_dtype())
        elif kind == ROUNDU and x._dtype.category != _FLOAT:
            from .copy import clone
            r = clone(x)
            return r if out is None else write_out(out, r, name)
        r = dispatch(op, x._device, (x,), (x,))
        return r if out is None else write_out(out, r, name)

    def fn_(self):
        x = _tensor_arg(self, name + "_")
        if kind == FLOATU and x._dtype.category != _FLOAT:
            raise RuntimeError(f"result type Float can't be cast to the desired output type {_tname(x._dtype)}")
        if kind == ROUNDU and x._dtype.category != _FLOAT:
            return x
        if kind == BOOLU and x._dtype is not D.bool:
            from .copy import copy_
            return copy_(x, fn(x))
        return inplace(op, x, x._device, (x,), (x,), 0)

    fn.__name__ = name
    fn_.__name__ = name + "_"
    fn.__doc__ = doc
    return op, fn, fn_


def _x(ctx):
    return ctx.args[0]


def _zero_grad(ctx, g):
    return (g * 0.0,)


def _neg_check(x):
    if x._dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                           "mask, use the `~` or `logical_not()` operator instead.")


_NEG, _neg, _neg_ = _unary("neg", SAME, lambda ctx, g: (-g,), saves=(), primitive=True, doc="``-input``")


def neg(input, *, out=None):
    _neg_check(_tensor_arg(input, "neg"))
    return _neg(input, out=out)


def neg_(self):
    _neg_check(self)
    return _neg_(self)


negative, negative_ = neg, neg_
_ABS, abs, abs_ = _unary("abs", SAME, lambda ctx, g: (g * sign(_x(ctx)),), primitive=True, doc="absolute value")
absolute = abs
_SIGN, sign, sign_ = _unary("sign", SAME, _zero_grad, saves=(), primitive=True, doc="-1, 0 or 1 by the sign")
sgn = sign
_EXP, exp, exp_ = _unary("exp", FLOATU, lambda ctx, g: (g * ctx.out,), saves=(), save_output=True, primitive=True, doc="e^x")
_LOG, log, log_ = _unary("log", FLOATU, lambda ctx, g: (g / _x(ctx),), primitive=True, doc="natural logarithm")
_SIN, sin, sin_ = _unary("sin", FLOATU, lambda ctx, g: (g * cos(_x(ctx)),), primitive=True, doc="sine")
_COS, cos, cos_ = _unary("cos", FLOATU, lambda ctx, g: (-g * sin(_x(ctx)),), primitive=True, doc="cosine")
_TANH, tanh, tanh_ = _unary("tanh", FLOATU, lambda ctx, g: (g * (1 - ctx.out * ctx.out),), saves=(), save_output=True,
                            primitive=True, doc="hyperbolic tangent")
_SQRT, sqrt, sqrt_ = _unary("sqrt", FLOATU, lambda ctx, g: (g / (2 * ctx.out),), saves=(), save_output=True,
                            primitive=True, doc="square root")
_ERF, erf, erf_ = _unary("erf", FLOATU, lambda ctx, g: (g * (2 / math.sqrt(math.pi)) * exp(-_x(ctx) * _x(ctx)),),
                         primitive=True, doc="error function")
_FLOOR, floor, floor_ = _unary("floor", ROUNDU, _zero_grad, saves=(), primitive=True, doc="round down")
_CEIL, ceil, ceil_ = _unary("ceil", ROUNDU, _zero_grad, saves=(), primitive=True, doc="round up")
_ROUND, _round, _round_ = _unary("round", ROUNDU, _zero_grad, saves=(), primitive=True, doc="round half to even")
_TRUNC, trunc, trunc_ = _unary("trunc", ROUNDU, _zero_grad, saves=(), primitive=True, doc="round toward zero")
fix, fix_ = trunc, trunc_
_LNOT, logical_not, logical_not_ = _unary("logical_not", BOOLU, primitive=True, doc="elementwise logical not")


def round(input, *, decimals: int = 0, out=None):
    """Round half to even, to ``decimals`` places."""
    if decimals == 0:
        return _round(input, out=out)
    x = _tensor_arg(input, "round")
    if x._dtype.category != _FLOAT:
        return _round(x, out=out)
    s = 10.0 ** decimals
    r = _true_div(_round(mul(x, s)), s) if decimals > 0 else mul(_round(_true_div(x, 10.0 ** -decimals)), 10.0 ** -decimals)
    return r if out is None else write_out(out, r, "round")


def round_(self, *, decimals: int = 0):
    if decimals == 0:
        return _round_(self)
    from .copy import copy_
    return copy_(self, round(self, decimals=decimals))


def _u(name, fn_decomp, backward, **kw):
    return _unary(name, FLOATU, backward, decomposition=fn_decomp, **kw)


LN2, LN10 = math.log(2.0), math.log(10.0)
_EXP2, exp2, exp2_ = _u("exp2", lambda x: pow(2.0, x), lambda ctx, g: (g * ctx.out * LN2,), saves=(), save_output=True,
                        doc="2^x")
_EXPM1, expm1, expm1_ = _u("expm1", lambda x: sub(exp(x), 1.0), lambda ctx, g: (g * (ctx.out + 1),), saves=(),
                           save_output=True, doc="e^x - 1")
_LOG2, log2, log2_ = _u("log2", lambda x: _true_div(log(x), LN2), lambda ctx, g: (g / (_x(ctx) * LN2),), doc="base-2 log")
_LOG10, log10, log10_ = _u("log10", lambda x: _true_div(log(x), LN10), lambda ctx, g: (g / (_x(ctx) * LN10),),
                           doc="base-10 log")
_LOG1P, log1p, log1p_ = _u("log1p", lambda x: log(add(x, 1.0)), lambda ctx, g: (g / (_x(ctx) + 1),), doc="log(1 + x)")
_RSQRT, rsqrt, rsqrt_ = _u("rsqrt", lambda x: _true_div(1.0, sqrt(x)), lambda ctx, g: (-0.5 * g * ctx.out * ctx.out * ctx.out,),
                           saves=(), save_output=True, doc="1 / sqrt(x)")
_TAN, tan, tan_ = _u("tan", lambda x: _true_div(sin(x), cos(x)), lambda ctx, g: (g * (1 + ctx.out * ctx.out),), saves=(),
                     save_output=True, doc="tangent")


def _asin(x):
    return atan2(x, sqrt(sub(1.0, mul(x, x))))


def _acos(x):
    return atan2(sqrt(sub(1.0, mul(x, x))), x)


_ASIN, asin, asin_ = _u("asin", _asin, lambda ctx, g: (g / sqrt(1 - _x(ctx) * _x(ctx)),), doc="arcsine")
_ACOS, acos, acos_ = _u("acos", _acos, lambda ctx, g: (-g / sqrt(1 - _x(ctx) * _x(ctx)),), doc="arccosine")
_ATAN, atan, atan_ = _u("atan", lambda x: atan2(x, 1.0), lambda ctx, g: (g / (1 + _x(ctx) * _x(ctx)),), doc="arctangent")
_SINH, sinh, sinh_ = _u("sinh", lambda x: mul(sub(exp(x), exp(neg(x))), 0.5), lambda ctx, g: (g * cosh(_x(ctx)),),
                        doc="hyperbolic sine")
_COSH, cosh, cosh_ = _u("cosh", lambda x: mul(add(exp(x), exp(neg(x))), 0.5), lambda ctx, g: (g * sinh(_x(ctx)),),
                        doc="hyperbolic cosine")
_ASINH, asinh, asinh_ = _u(
    "asinh", lambda x: mul(sign(x), log(add(abs(x), sqrt(add(mul(x, x), 1.0))))),
    lambda ctx, g: (g / sqrt(_x(ctx) * _x(ctx) + 1),), doc="inverse hyperbolic sine")
_ACOSH, acosh, acosh_ = _u("acosh", lambda x: log(add(x, sqrt(sub(mul(x, x), 1.0)))),
                           lambda ctx, g: (g / sqrt(_x(ctx) * _x(ctx) - 1),), doc="inverse hyperbolic cosine")
_ATANH, atanh, atanh_ = _u("atanh", lambda x: mul(log(_true_div(add(x, 1.0), sub(1.0, x))), 0.5),
                           lambda ctx, g: (g / (1 - _x(ctx) * _x(ctx)),), doc="inverse hyperbolic tangent")
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
_SIGMOID, sigmoid, sigmoid_ = _u("sigmoid", lambda x: _true_div(1.0, add(exp(neg(x)), 1.0)),
                                 lambda ctx, g: (g * ctx.out * (1 - ctx.out),), saves=(), save_output=True,
                                 doc="1 / (1 + e^-x)")
_ERFC, erfc, erfc_ = _u("erfc", lambda x: sub(1.0, erf(x)),
                        lambda ctx, g: (-g * (2 / math.sqrt(math.pi)) * exp(-_x(ctx) * _x(ctx)),), doc="1 - erf(x)")


def _erfinv_decomp(y):
    # Giles' single-precision approximation, refined by two Newton steps on erf
    w = neg(log(mul(sub(1.0, y), add(1.0, y))))
    small = lt(w, 5.0)
    ws = sub(w, 2.5)
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p1 = add(mul(p1, ws), c)
    wl = sub(sqrt(w), 3.0)
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p2 = add(mul(p2, wl), c)
    x = mul(where(small, p1, p2), y)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    for _ in range(2):
        err = sub(erf(x), y)
        x = sub(x, _true_div(err, mul(exp(neg(mul(x, x))), two_over_sqrt_pi)))
    x = where(eq(y, 1.0), float("inf"), x)
    x = where(eq(y, -1.0), float("-inf"), x)
    return where(gt(abs(y), 1.0), float("nan"), x)


_ERFINV, erfinv, erfinv_ = _u("erfinv", _erfinv_decomp,
                              lambda ctx, g: (g * (math.sqrt(math.pi) / 2) * exp(ctx.out * ctx.out),), saves=(),
                              save_output=True, doc="inverse error function")


def _frac_decomp(x):
    return sub(x, trunc(x))


_FRAC, frac, frac_ = _unary("frac", FLOATU, lambda ctx, g: (g,), saves=(), decomposition=_frac_decomp,
                            doc="fractional part, x - trunc(x)")


def _recip_decomp(x):
    return _true_div(1.0, x)


_RECIP, reciprocal, reciprocal_ = _u("reciprocal", _recip_decomp, lambda ctx, g: (-g * ctx.out * ctx.out,), saves=(),
                                     save_output=True, doc="1 / x")


def _square_decomp(x):
    return mul(x, x)


_SQUARE, square, _square_ = _unary("square", SAME, lambda ctx, g: (g * 2 * _x(ctx),), decomposition=_square_decomp,
                                   doc="x * x")


def square_(self):
    return mul_(self, self)


def _relu_decomp(x):
    return maximum(x, 0 if x._dtype.category != _FLOAT else 0.0)


_RELU, relu, relu_ = _unary("relu", SAME, lambda ctx, g: (g * (ctx.out > 0),), saves=(), save_output=True,
                            decomposition=_relu_decomp, doc="max(x, 0)")


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _tensor_arg(input, "logit")
    if x._dtype.category != _FLOAT:
        x = _cast(x, D.get_default_dtype())
    if eps is not None:
        x = clamp(x, eps, 1.0 - eps)
    r = log(_true_div(x, sub(1.0, x)))
    return r if out is None else write_out(out, r, "logit")


def deg2rad(input):
    return mul(_float(input), math.pi / 180.0)


def rad2deg(input):
    return mul(_float(input), 180.0 / math.pi)


def _float(x):
    x = _tensor_arg(x, "op")
    return x if x._dtype.category == _FLOAT else _cast(x, D.get_default_dtype())


def positive(input):
    if input._dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# -- where, clamp, lerp, nan handling ---------------------------------------------------------

def _where_bw(ctx, g):
    c, a, b = ctx.args
    res = []
    i = 0
    if _is_t(a):
        res.append(where(c, g, 0.0) if ctx.needs_input_grad[i] else None)
        i += 1
    if _is_t(b):
        res.append(where(c, 0.0, g) if ctx.needs_input_grad[i] else None)
    return tuple(res)


_WHERE = register_op("where", primitive=True, group="ternary", backward=_where_bw, saves=())


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` holds, else ``other`` (broadcast; scalars allowed).
    With only a condition: ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not D.bool:
        if condition._dtype is D.uint8:
            condition = ne(condition, 0)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {_tname(condition._dtype)}")
    a, b, dev, ct = prep2("where", input, other, ARITH) if (isinstance(input, Tensor) or isinstance(other, Tensor)) \
        else _where_scalars(input, other, condition)
    if condition._device is not dev:
        if condition._device._type == "cpu" and not condition._shape:
            condition = condition.to(dev)
        else:
            U.common_device("where", condition, *(x for x in (a, b) if isinstance(x, Tensor)))
    shapes = [condition._shape] + [x._shape for x in (a, b) if isinstance(x, Tensor)]
    U.broadcast_all(shapes, "where")
    ins = _inputs(a, b)
    # the condition is saved (not differentiable); inputs a/b only need their shapes
    r = dispatch(_WHERE, dev, (condition, a, b), ins)
    return r if out is None else write_out(out, r, "where")


def _where_scalars(a, b, cond):
    ct = D.result_type(a, b)
    return _scalar_value(a, ct, "where"), _scalar_value(b, ct, "where"), cond._device, ct


def _clamp_bw(ctx, g):
    x, lo, hi = ctx.args
    mask = None
    if lo is not None:
        mask = ge(x, lo)
    if hi is not None:
        m2 = le(x, hi)
        mask = m2 if mask is None else logical_and(mask, m2)
    return (where(mask, g, 0.0) if mask is not None else g,)


def _clamp_decomp(x, lo, hi):
    r = x
    if lo is not None:
        r = maximum(r, lo)
    if hi is not None:
        r = minimum(r, hi)
    return r


_CLAMP = register_op("clamp", decomposition=_clamp_decomp, backward=_clamp_bw, group="unary")


def clamp(input, min=None, max=None, *, out=None):
    """Limit values to [min, max] (either may be None; tensors broadcast)."""
    x = _tensor_arg(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        r = x
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        return r if out is None else write_out(out, r, "clamp")
    ct = D.result_type(x, *(v for v in (min, max) if v is not None))
    if ct is not x._dtype:
        x = _cast(x, ct)
    lo = None if min is None else _scalar_value(min, ct, "clamp")
    hi = None if max is None else _scalar_value(max, ct, "clamp")
    r = dispatch(_CLAMP, x._device, (x, lo, hi), (x,))
    return r if out is None else write_out(out, r, "clamp")


def clamp_(self, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor) or D.result_type(self, *(v for v in (min, max) if v is not None)) is not self._dtype:
        from .copy import copy_
        return copy_(self, clamp(self, min, max))
    lo = None if min is None else _scalar_value(min, self._dtype, "clamp")
    hi = None if max is None else _scalar_value(max, self._dtype, "clamp")
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return inplace(_CLAMP, self, self._device, (self, lo, hi), (self,), 0)


clip, clip_ = clamp, clamp_


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)``."""
    r = add(input, mul(weight, sub(end, input)))
    return r if out is None else write_out(out, r, "lerp")


def lerp_(self, end, weight):
    from .copy import copy_
    return copy_(self, lerp(self, end, weight))


def isnan(input):
    """True where the value is NaN."""
    x = _tensor_arg(input, "isnan")
    if x._dtype.category != _FLOAT:
        return _bool_like(x, False)
    return ne(x, x)


def isinf(input):
    x = _tensor_arg(input, "isinf")
    if x._dtype.category != _FLOAT:
        return _bool_like(x, False)
    return eq(abs(x), float("inf"))


def isposinf(input):
    x = _tensor_arg(input, "isposinf")
    return eq(x, float("inf")) if x._dtype.category == _FLOAT else _bool_like(x, False)


def isneginf(input):
    x = _tensor_arg(input, "isneginf")
    return eq(x, float("-inf")) if x._dtype.category == _FLOAT else _bool_like(x, False)


def isfinite(input):
    x = _tensor_arg(input, "isfinite")
    if x._dtype.category != _FLOAT:
        return _bool_like(x, True)
    return eq(sub(x, x), 0.0)


def isreal(input):
    return _bool_like(input, True)


def _bool_like(x, value):
    from .. import _factory
    return _factory.full(x._shape, value, dtype=D.bool, device=x._device)


def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN with ``nan`` and infinities with the dtype's extremes (or the values given)."""
    x = _tensor_arg(input, "nan_to_num")
    if x._dtype.category != _FLOAT:
        r = x.clone()
        return r if out is None else write_out(out, r, "nan_to_num")
    fi = D.finfo(x._dtype)
    hi = fi.max if posinf is None else posinf
    lo = fi.min if neginf is None else neginf
    r = where(isnan(x), float(nan), x)
    r = where(eq(r, float("inf")), float(hi), r)
    r = where(eq(r, float("-inf")), float(lo), r)
    return r if out is None else write_out(out, r, "nan_to_num")


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    from .copy import copy_
    return copy_(self, nan_to_num(self, nan, posinf, neginf))


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (infinities equal when equal)."""
    a, b, dev, ct = prep2("isclose", input, other, ARITH)
    if ct.category != _FLOAT:
        return eq(a, b)
    close = le(abs(sub(a, b)), add(mul(abs(b), rtol), atol))
    close = logical_or(close, eq(a, b))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b) if isinstance(b, Tensor) else (b != b)))
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """True when both have the same shape and values."""
    if input._shape != other._shape:
        return False
    return bool(eq(input, other).all().item())


def copysign(input, other):
    """|input| with the sign of other."""
    x = _float(input) if isinstance(input, Tensor) else input
    neg_ = lt(other, 0) if isinstance(other, Tensor) else (other < 0 or (other == 0 and math.copysign(1, other) < 0))
    a = abs(x)
    if isinstance(neg_, bool):
        return neg(a) if neg_ else a
    return where(neg_, neg(a), a)


def xlogy(input, other):
    """``input * log(other)``, 0 where input is 0."""
    x = _float(input) if isinstance(input, Tensor) else float(input)
    r = mul(x, log(other if isinstance(other, Tensor) else _float_t(other, x)))
    return where(eq(x, 0.0), 0.0, r) if isinstance(x, Tensor) else r


def _float_t(v, like):
    from .. import _factory
    return _factory.full((), float(v), dtype=like._dtype, device=like._device)


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    return add(input, mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    q = _true_div(tensor1, tensor2)
    return add(input, mul(q, value) if value != 1 else q)


def addcmul_(self, tensor1, tensor2, *, value=1):
    return add_(self, mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2))


def addcdiv_(self, tensor1, tensor2, *, value=1):
    q = _true_div(tensor1, tensor2)
    return add_(self, mul(q, value) if value != 1 else q)
