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
from . import _args as U
from .registry import ALL, dispatch, register_op
from .writes import write_back, write_direct as inplace, write_out, write_out_tuple  # noqa: F401

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


_tname = U.type_name
_scalar_value = U.scalar_value


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
        raise U.dtype_not_implemented(f"{op}_cpu", ct, f"{op} needs integer or bool operands")
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
            doc="", inplace_ok=True, no_bool=False):
    """Register a binary op and build its front end ``f(input, other, *, out=None)`` and
    in-place form ``f_(self, other)``; ``no_bool``: refuse bool operands (as PyTorch)."""
    differentiable = fa is not None
    bw = (lambda ctx, g: _bin_grads(ctx, g, fa, fb)) if differentiable else None
    op = register_op(name, backward=bw, saves=saves, save_output=save_output, decomposition=decomposition,
                     differentiable=differentiable, group="binary", doc=doc)

    def fn(input, other, *, out=None):
        a, b, dev, ct = prep2(name, input, other, kind)
        if no_bool and ct is D.bool:
            raise U.dtype_not_implemented(f"{name}_cpu", ct)
        r = dispatch(op, dev, (a, b), _inputs(a, b))
        return r if out is None else write_out(out, r, name)

    def fn_(self, other):
        if not isinstance(self, Tensor):
            raise TypeError(f"{name}_(): self must be a Tensor")
        a, b, dev, ct = prep2(name, self, other, kind)
        if no_bool and ct is D.bool:
            raise U.dtype_not_implemented(f"{name}_cpu", ct)
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
    fn_.__doc__ = f"In-place :func:`{name}` (``self`` keeps its dtype and shape)."
    return op, fn, fn_


# -- binary arithmetic -----------------------------------------------------------------------

_ADD, _add, add_inplace = _binary("add", ARITH, lambda g, a, b: g, lambda g, a, b: g, saves=(),
                                  doc="``input + other`` (with ``alpha``: ``input + alpha * other``).")
_SUB, _sub, sub_inplace = _binary("sub", ARITH, lambda g, a, b: g, lambda g, a, b: -g, saves=(),
                                  doc="``input - other``")
_MUL, mul, mul_ = _binary("mul", ARITH, lambda g, a, b: g * b, lambda g, a, b: g * a,
                          doc="``input * other``")
_DIV, _true_div, _true_div_ = _binary(
    "div", FLOATOP, lambda g, a, b: g / b, lambda g, a, b: -g * a / (b * b),
    doc="``input / other`` (true division; ``rounding_mode`` 'trunc' or 'floor' rounds)")


def _is_bool(x) -> bool:
    return x._dtype is D.bool if isinstance(x, Tensor) else isinstance(x, bool)


def _check_bool_sub(a, b):
    ba, bb = _is_bool(a), _is_bool(b)
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")


def _scaled_other(input, other, alpha, op):
    """``alpha * other`` for add/sub, with PyTorch's checks on ``alpha``."""
    rt = D.result_type(input, other)
    if isinstance(alpha, bool):
        if rt is not D.bool:
            raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and rt.category != _FLOAT:
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number.")
    if not isinstance(other, Tensor):
        return other * alpha
    return mul(other, alpha)


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``."""
    if alpha != 1 or isinstance(alpha, (bool, float)):
        other = _scaled_other(input, other, alpha, "add")
    return _add(input, other, out=out)


def add_(self, other, *, alpha=1):
    """In-place ``self += alpha * other``."""
    if alpha != 1 or isinstance(alpha, (bool, float)):
        other = _scaled_other(self, other, alpha, "add_")
    return add_inplace(self, other)


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``."""
    _check_bool_sub(input, other)
    if alpha != 1 or isinstance(alpha, (bool, float)):
        other = _scaled_other(input, other, alpha, "sub")
    return _sub(input, other, out=out)


def sub_(self, other, *, alpha=1):
    """In-place ``self -= alpha * other``."""
    _check_bool_sub(self, other)
    if alpha != 1 or isinstance(alpha, (bool, float)):
        other = _scaled_other(self, other, alpha, "sub_")
    return sub_inplace(self, other)


subtract, subtract_ = sub, sub_
multiply, multiply_ = mul, mul_


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
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def div_(self, other, *, rounding_mode=None):
    """In-place division (see :func:`div`)."""
    if rounding_mode is None:
        return _true_div_(self, other)
    return write_back(self, div(self, other, rounding_mode=rounding_mode), "div_")


divide, divide_ = div, div_
true_divide, true_divide_ = _true_div, _true_div_


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
    fix = logical_and(ne(mod, 0), ne(lt(b, 0) if isinstance(b, Tensor) else (b < 0), lt(mod, 0)))
    d = where(fix, sub(d, 1.0), d)
    fl = floor(d)
    fl = where(gt(sub(d, fl), 0.5), add(fl, 1.0), fl)
    if not isinstance(b, Tensor):
        return fl if b != 0 else _true_div(a, b)
    return where(ne(b, 0), fl, _true_div(a, b))  # x // 0 is +-inf or nan, as true division


_FLOOR_DIV = register_op("floor_divide", decomposition=_floor_div_decomp, differentiable=False, group="binary")


def floor_divide(input, other, *, out=None):
    """Division rounded toward negative infinity (python's ``//``)."""
    a, b, dev, ct = prep2("floor_divide", input, other, ARITH)
    if ct is D.bool:
        raise U.dtype_not_implemented("div_floor_cpu", ct)
    r = dispatch(_FLOOR_DIV, dev, (a, b), _inputs(a, b))
    return r if out is None else write_out(out, r, "floor_divide")


def floor_divide_(self, other):
    """In-place :func:`floor_divide`."""
    return write_back(self, floor_divide(self, other), "floor_divide_")


_FMOD, fmod, fmod_ = _binary("fmod", ARITH, lambda g, a, b: g, lambda g, a, b: -g * trunc(a / b),
                             doc="C's fmod: remainder with the sign of the dividend", no_bool=True)


def _remainder_decomp(a, b):
    r = fmod(a, b)
    fix = logical_and(ne(r, 0), ne(lt(r, 0), lt(b, 0) if isinstance(b, Tensor) else (b < 0)))
    return where(fix, add(r, b), r)


_REMAINDER, remainder, remainder_ = _binary(
    "remainder", ARITH, lambda g, a, b: g, lambda g, a, b: -g * floor_divide(a, b), decomposition=_remainder_decomp,
    doc="python's ``%``: remainder with the sign of the divisor", no_bool=True)


def _max_a(g, a, b):
    return where(eq(a, b), g / 2, where(gt(a, b), g, 0.0))


def _max_b(g, a, b):
    return where(eq(a, b), g / 2, where(lt(a, b), g, 0.0))


_MAXIMUM, maximum, _maximum_ = _binary("maximum", ARITH, _max_a, _max_b, doc="elementwise maximum (NaN propagates)")
_MINIMUM, minimum, _minimum_ = _binary("minimum", ARITH, _max_b, _max_a, doc="elementwise minimum (NaN propagates)")


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


_ATAN2, atan2, atan2_ = _binary("atan2", FLOATOP, _atan2_a, _atan2_b, doc="atan(input / other) by quadrant")
arctan2, arctan2_ = atan2, atan2_


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


_POW = register_op("pow", group="binary", backward=lambda ctx, g: _bin_grads(ctx, g, _pow_a, _pow_b))


def _int_pow(a, b, dev):
    """Integer ``a ** b`` where the exponent tensor ``b`` has negative entries: as PyTorch,
    ``x ** -n`` is ``1 / x ** n`` truncated (1 for 1, +-1 for -1, 0 otherwise)."""
    neg_e = lt(b, 0)
    r = dispatch(_POW, dev, (a, where(neg_e, 0, b)), ())
    sign_of_odd = where(ne(remainder(b, 2), 0), -1, 1)
    if isinstance(a, Tensor):
        recip = where(eq(a, 1), 1, where(eq(a, -1), sign_of_odd, 0))
    else:
        recip = 1 if a == 1 else (sign_of_odd if a == -1 else 0)
    return where(neg_e, recip, r).to(r._dtype)


def pow(input, exponent, *, out=None):
    """``input ** exponent``. Integer tensors to a negative python-int power are refused (as
    PyTorch); negative entries of an integer exponent tensor give ``1 / x ** n`` truncated."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"pow(): expected at least one Tensor argument, got {type(input).__name__} and "
                        f"{type(exponent).__name__}")
    a, b, dev, ct = prep2("pow", input, exponent, ARITH)
    if ct.category <= _INT:
        if ct is D.bool:
            if isinstance(a, Tensor) and not isinstance(b, Tensor):  # x ** True is x, x ** False is all True
                r = a.clone() if b else _bool_like(a, True)
                return r if out is None else write_out(out, r, "pow")
            raise U.dtype_not_implemented("pow", ct)
        if not isinstance(b, Tensor):
            if b < 0:
                raise RuntimeError(f"pow: Integers to negative integer powers are not allowed (exponent {b} for "
                                   f"{U.desc(a)}).")
        elif b.numel() and bool(lt(b, 0).any().item()):
            r = _int_pow(a, b, dev)
            return r if out is None else write_out(out, r, "pow")
    r = dispatch(_POW, dev, (a, b), _inputs(a, b))
    return r if out is None else write_out(out, r, "pow")


def pow_(self, exponent):
    """In-place ``self **= exponent``."""
    if not isinstance(self, Tensor):
        raise TypeError(f"pow_(): self must be a Tensor, not {type(self).__name__}")
    a, b, dev, ct = prep2("pow_", self, exponent, ARITH)
    if a is not self or ct.category <= _INT:
        return write_back(self, pow(a, b), "pow_")
    if isinstance(b, Tensor) and b._shape != self._shape and U.broadcast_shapes(self._shape, b._shape, "pow_") != self._shape:
        raise RuntimeError(f"pow_: output with shape {list(self._shape)} doesn't match the broadcast shape "
                           f"{list(U.broadcast_shapes(self._shape, b._shape, 'pow_'))}")
    return inplace(_POW, self, dev, (self, b), _inputs(self, b), 0)


def float_power(input, exponent, *, out=None):
    """``pow`` computed in float64."""
    x = input.to(D.float64) if isinstance(input, Tensor) else float(input)
    e = exponent.to(D.float64) if isinstance(exponent, Tensor) else float(exponent)
    r = pow(x, e)
    if out is not None:
        if out._dtype is not D.float64:
            raise RuntimeError(f"float_power: the output given to float_power has dtype {_tname(out._dtype)} but the "
                               "operation's result requires dtype Double")
        return write_out(out, r, "float_power")
    return r


def float_power_(self, exponent):
    """In-place :func:`float_power`; ``self`` must be float64."""
    if self._dtype is not D.float64:
        raise RuntimeError(f"float_power_: the base given to float_power_ has dtype {_tname(self._dtype)} but the "
                           "operation's result requires dtype Double")
    return write_back(self, float_power(self, exponent), "float_power_")


# -- comparisons, logical and bitwise --------------------------------------------------------

_EQ, eq, eq_ = _binary("eq", CMP, doc="``input == other``")
_NE, ne, ne_ = _binary("ne", CMP, doc="``input != other``")
_LT, lt, lt_ = _binary("lt", CMP, doc="``input < other``")
_LE, le, le_ = _binary("le", CMP, doc="``input <= other``")
_GT, gt, gt_ = _binary("gt", CMP, doc="``input > other``")
_GE, ge, ge_ = _binary("ge", CMP, doc="``input >= other``")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

_LAND, logical_and, logical_and_ = _binary("logical_and", LOGICAL, doc="elementwise logical and")
_LOR, logical_or, logical_or_ = _binary("logical_or", LOGICAL, doc="elementwise logical or")
_LXOR, logical_xor, logical_xor_ = _binary("logical_xor", LOGICAL, doc="elementwise logical xor")
_BAND, bitwise_and, bitwise_and_ = _binary("bitwise_and", BITWISE, doc="elementwise bitwise and")
_BOR, bitwise_or, bitwise_or_ = _binary("bitwise_or", BITWISE, doc="elementwise bitwise or")
_BXOR, bitwise_xor, bitwise_xor_ = _binary("bitwise_xor", BITWISE, doc="elementwise bitwise xor")


def bitwise_not(input, *, out=None):
    """``~input``: logical not for bool, bit flip for integers."""
    x = _tensor_arg(input, "bitwise_not")
    if x._dtype is D.bool:
        r = logical_not(x)
    elif x._dtype.category == _INT:
        r = bitwise_xor(x, -1 if x._dtype.is_signed else D.iinfo(x._dtype).max)
    else:
        raise U.dtype_not_implemented("bitwise_not_cpu", x._dtype)
    return r if out is None else write_out(out, r, "bitwise_not")


def bitwise_not_(self):
    """In-place :func:`bitwise_not`."""
    return write_back(self, bitwise_not(self), "bitwise_not_")


def _wrapped_int(v: int, dtype) -> int:
    """``v`` reduced modulo 2**bits into ``dtype``'s range (two's complement wrap-around)."""
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if dtype.is_signed and v >= 1 << (bits - 1) else v


def _shift(name, input, other, left: bool):
    a, b, dev, ct = prep2(name, input, other, BITWISE)
    if ct is D.bool:
        raise U.dtype_not_implemented(("lshift" if left else "rshift") + "_cpu", ct)
    if not isinstance(a, Tensor):
        from .. import _factory
        a = _factory.full((), a, dtype=ct, device=dev)
    bits = ct.itemsize * 8
    # shifts are multiplications/floor divisions by powers of two, wrapping as C's shifts do; a
    # count outside [0, bits) gives 0 (left) or the sign, 0 or -1 (right), as PyTorch
    sign_fill = where(lt(a, 0), -1, 0).to(ct) if ct.is_signed else mul(a, 0)
    limit = bits - 2 if ct.is_signed else bits - 1  # the largest power of two ct holds
    if not isinstance(b, Tensor):
        if b < 0 or b >= bits:
            return mul(a, 0) if left else sign_fill
        if left:
            return mul(a, _wrapped_int(1 << b, ct))
        return floor_divide(a, 1 << b) if b <= limit else sign_fill
    big = logical_or(lt(b, 0), ge(b, bits))
    if left:
        # 2 ** b computed in ct wraps exactly as the shifted-out bits do
        return where(big, 0, mul(a, pow(2, where(big, 0, b))))
    far = logical_or(big, gt(b, limit))
    q = floor_divide(a, pow(2, where(far, 0, b)))
    return where(far, sign_fill, q)


def bitwise_left_shift(input, other, *, out=None):
    """``input << other`` (integers; bits shifted out are lost)."""
    r = _shift("bitwise_left_shift", input, other, True)
    return r if out is None else write_out(out, r, "bitwise_left_shift")


def bitwise_right_shift(input, other, *, out=None):
    """``input >> other``: arithmetic shift (rounds toward negative infinity)."""
    r = _shift("bitwise_right_shift", input, other, False)
    return r if out is None else write_out(out, r, "bitwise_right_shift")


def bitwise_left_shift_(self, other):
    """In-place :func:`bitwise_left_shift`."""
    return write_back(self, bitwise_left_shift(self, other), "bitwise_left_shift_")


def bitwise_right_shift_(self, other):
    """In-place :func:`bitwise_right_shift`."""
    return write_back(self, bitwise_right_shift(self, other), "bitwise_right_shift_")


# -- unary -----------------------------------------------------------------------------------

SAME, FLOATU, BOOLU, ROUNDU = range(4)


_NO_BOOL = frozenset({D.bool})
_NO_INT = frozenset({D.bool, D.uint8, D.int8, D.int16, D.int32, D.int64})


def _unary(name, kind, backward=None, *, saves=ALL, save_output=False, decomposition=None, primitive=False, doc="",
           refuse=frozenset()):
    """Register a unary op and build ``f(input, *, out=None)`` and ``f_(self)``; dtypes in
    ``refuse`` raise NotImplementedError (as PyTorch)."""
    op = register_op(name, backward=backward, saves=saves, save_output=save_output, decomposition=decomposition,
                     group="unary", doc=doc,
                     differentiable=backward is not None)

    def fn(input, *, out=None):
        x = input if isinstance(input, Tensor) else _tensor_arg(input, name)
        if refuse and x._dtype in refuse:
            raise U.dtype_not_implemented(f"{name}_cpu", x._dtype)
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
        if refuse and x._dtype in refuse:
            raise U.dtype_not_implemented(f"{name}_cpu", x._dtype)
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
    fn_.__doc__ = f"In-place :func:`{name}`."
    return op, fn, fn_


def _x(ctx):
    return ctx.args[0]


def _zero_grad(ctx, g):
    return (g * 0.0,)


def _neg_check(x):
    if x._dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                           "mask, use the `~` or `logical_not()` operator instead.")


_NEG, _neg, _neg_ = _unary("neg", SAME, lambda ctx, g: (-g,), saves=(), doc="``-input``")


def neg(input, *, out=None):
    """``-input`` (refused for bool: use ``~`` or ``logical_not``)."""
    _neg_check(_tensor_arg(input, "neg"))
    return _neg(input, out=out)


def neg_(self):
    """In-place :func:`neg`."""
    _neg_check(self)
    return _neg_(self)


negative, negative_ = neg, neg_
_ABS, abs, abs_ = _unary("abs", SAME, lambda ctx, g: (g * sign(_x(ctx)),), doc="absolute value",
                         refuse=_NO_BOOL)
absolute, absolute_ = abs, abs_
_SIGN, _sign, _sign_ = _unary("sign", SAME, _zero_grad, saves=(), doc="-1, 0 or 1 by the sign")


def sign(input, *, out=None):
    """-1, 0 or 1 by the sign (bool stays bool). NaN gives NaN: PyTorch returns 0 for NaN, which
    hides it; ember keeps it visible."""
    x = _tensor_arg(input, "sign")
    if x._dtype is D.bool:
        r = x.clone()
        return r if out is None else write_out(out, r, "sign")
    return _sign(x, out=out)


def sign_(self):
    """In-place :func:`sign`."""
    return self if _tensor_arg(self, "sign_")._dtype is D.bool else _sign_(self)


sgn, sgn_ = sign, sign_
_EXP, exp, exp_ = _unary("exp", FLOATU, lambda ctx, g: (g * ctx.out,), saves=(), save_output=True, doc="e^x")
_LOG, log, log_ = _unary("log", FLOATU, lambda ctx, g: (g / _x(ctx),), doc="natural logarithm")
_SIN, sin, sin_ = _unary("sin", FLOATU, lambda ctx, g: (g * cos(_x(ctx)),), doc="sine")
_COS, cos, cos_ = _unary("cos", FLOATU, lambda ctx, g: (-g * sin(_x(ctx)),), doc="cosine")
_TANH, tanh, tanh_ = _unary("tanh", FLOATU, lambda ctx, g: (g * (1 - ctx.out * ctx.out),), saves=(), save_output=True,
                            doc="hyperbolic tangent")
_SQRT, sqrt, sqrt_ = _unary("sqrt", FLOATU, lambda ctx, g: (g / (2 * ctx.out),), saves=(), save_output=True,
                            doc="square root")
_ERF, erf, erf_ = _unary("erf", FLOATU, lambda ctx, g: (g * (2 / math.sqrt(math.pi)) * exp(-_x(ctx) * _x(ctx)),),
                         doc="error function")
_FLOOR, floor, floor_ = _unary("floor", ROUNDU, _zero_grad, saves=(), doc="round down", refuse=_NO_BOOL)
_CEIL, ceil, ceil_ = _unary("ceil", ROUNDU, _zero_grad, saves=(), doc="round up", refuse=_NO_BOOL)
_ROUND, _round, _round_ = _unary("round", ROUNDU, _zero_grad, saves=(), doc="round half to even",
                                 refuse=_NO_BOOL)
_TRUNC, trunc, trunc_ = _unary("trunc", ROUNDU, _zero_grad, saves=(), doc="round toward zero",
                               refuse=_NO_BOOL)
fix, fix_ = trunc, trunc_
_LNOT, logical_not, logical_not_ = _unary("logical_not", BOOLU, doc="elementwise logical not")


def round(input, *, decimals: int = 0, out=None):
    """Round half to even, to ``decimals`` places."""
    if decimals == 0:
        return _round(input, out=out)
    x = _tensor_arg(input, "round")
    if x._dtype.category != _FLOAT:
        raise U.dtype_not_implemented("round_cpu", x._dtype, "round(decimals=...) needs a floating tensor")
    s = 10.0 ** decimals
    r = _true_div(_round(mul(x, s)), s) if decimals > 0 else mul(_round(_true_div(x, 10.0 ** -decimals)), 10.0 ** -decimals)
    return r if out is None else write_out(out, r, "round")


def round_(self, *, decimals: int = 0):
    """In-place :func:`round`."""
    if decimals == 0:
        return _round_(self)
    return write_back(self, round(self, decimals=decimals), "round_")


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
arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_ = asin_, acos_, atan_, asinh_, acosh_, atanh_
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


_FRAC, frac, frac_ = _unary("frac", ROUNDU, lambda ctx, g: (g,), saves=(), decomposition=_frac_decomp,
                            doc="fractional part, x - trunc(x)", refuse=_NO_INT)


def _recip_decomp(x):
    return _true_div(1.0, x)


_RECIP, reciprocal, reciprocal_ = _u("reciprocal", _recip_decomp, lambda ctx, g: (-g * ctx.out * ctx.out,), saves=(),
                                     save_output=True, doc="1 / x")


def _square_decomp(x):
    return mul(x, x)


_SQUARE, _square, _square_ = _unary("square", SAME, lambda ctx, g: (g * 2 * _x(ctx),), decomposition=_square_decomp,
                                    doc="x * x")


def square(input, *, out=None):
    """``x * x`` (bool squares as int64, as ``pow(x, 2)`` does)."""
    x = _tensor_arg(input, "square")
    return _square(_cast(x, D.int64) if x._dtype is D.bool else x, out=out)


def square_(self):
    """In-place :func:`square`."""
    if _tensor_arg(self, "square_")._dtype is D.bool:
        raise RuntimeError("square_: result type Long can't be cast to the desired output type Bool")
    return _square_(self)


def _relu_decomp(x):
    return maximum(x, 0 if x._dtype.category != _FLOAT else 0.0)


def _relu_bw(ctx, g):
    from .nn import _threshold_backward
    return (_threshold_backward(g, ctx.out, 0),)


_RELU, _relu, _relu_ = _unary("relu", SAME, _relu_bw, saves=(), save_output=True,
                              decomposition=_relu_decomp, doc="max(x, 0)")


def _check_relu(x):
    if _tensor_arg(x, "relu")._dtype is D.bool:
        raise RuntimeError(f"relu: Boolean inputs not supported for relu ({U.desc(x)})")


def relu(input, *, out=None):
    """``max(x, 0)``."""
    _check_relu(input)
    return _relu(input, out=out)


def relu_(self):
    """In-place :func:`relu`."""
    _check_relu(self)
    return _relu_(self)


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _tensor_arg(input, "logit")
    if x._dtype.category != _FLOAT:
        x = _cast(x, D.get_default_dtype())
    if eps is not None:
        x = clamp(x, eps, 1.0 - eps)
    r = log(_true_div(x, sub(1.0, x)))
    return r if out is None else write_out(out, r, "logit")


def logit_(self, eps=None):
    """In-place :func:`logit`."""
    return write_back(self, logit(self, eps), "logit_")


def deg2rad(input, *, out=None):
    """Degrees to radians."""
    r = mul(_float(input), math.pi / 180.0)
    return r if out is None else write_out(out, r, "deg2rad")


def rad2deg(input, *, out=None):
    """Radians to degrees."""
    r = mul(_float(input), 180.0 / math.pi)
    return r if out is None else write_out(out, r, "rad2deg")


def deg2rad_(self):
    """In-place :func:`deg2rad`."""
    return write_back(self, deg2rad(self), "deg2rad_")


def rad2deg_(self):
    """In-place :func:`rad2deg`."""
    return write_back(self, rad2deg(self), "rad2deg_")


def _float(x):
    x = _tensor_arg(x, "op")
    return x if x._dtype.category == _FLOAT else _cast(x, D.get_default_dtype())


def positive(input):
    """``+input``: returns ``input`` itself (refused for bool)."""
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


_WHERE = register_op("where", group="ternary", backward=_where_bw, saves=())


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
    if not (U.is_scalar(a) and U.is_scalar(b)):
        raise TypeError(f"where(): expected Tensors or numbers for input and other, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    ct = D.result_type(a, b)
    from .. import _factory
    # a 0-d tensor carries the result dtype (a kernel given two python numbers could not know it)
    return _factory.full((), a, dtype=ct, device=cond._device), _scalar_value(b, ct, "where"), cond._device, ct


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
    lo, hi = _clamp_bounds(min, max, ct)
    if lo is None and hi is None:
        r = x.clone()
    else:
        r = dispatch(_CLAMP, x._device, (x, lo, hi), (x,))
    return r if out is None else write_out(out, r, "clamp")


def _clamp_bounds(min, max, ct):
    """Scalar bounds as values of ``ct``. For integer dtypes a bound beyond the dtype's range
    cuts nothing (PyTorch wraps it around instead: clamp(uint8 x, min=-1) would give 255)."""
    if ct.category == _INT and ct is not D.int64:
        info = D.iinfo(ct)
        if min is not None and min > info.max or max is not None and max < info.min:
            raise RuntimeError(f"clamp: bound {min if min is not None and min > info.max else max} is outside the range "
                               f"of {ct.name} [{info.min}, {info.max}]: every value would be clamped to it")
        if min is not None and min <= info.min:
            min = None
        if max is not None and max >= info.max:
            max = None
    lo = None if min is None else _scalar_value(min, ct, "clamp")
    hi = None if max is None else _scalar_value(max, ct, "clamp")
    return lo, hi


def clamp_(self, min=None, max=None):
    """In-place :func:`clamp`."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor) or \
            D.result_type(self, *(v for v in (min, max) if v is not None)) is not self._dtype:
        return write_back(self, clamp(self, min, max), "clamp_")
    lo, hi = _clamp_bounds(min, max, self._dtype)
    if lo is None and hi is None:
        return self
    return inplace(_CLAMP, self, self._device, (self, lo, hi), (self,), 0)


clip, clip_ = clamp, clamp_


def clamp_min(input, min):
    """:func:`clamp` with only a lower bound."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """:func:`clamp` with only an upper bound."""
    return clamp(input, max=max)


def clamp_min_(self, min):
    """In-place :func:`clamp_min`."""
    return clamp_(self, min=min)


def clamp_max_(self, max):
    """In-place :func:`clamp_max`."""
    return clamp_(self, max=max)


def lerp(input, end, weight, *, out=None):
    """``input + weight * (end - input)``."""
    r = add(input, mul(weight, sub(end, input)))
    return r if out is None else write_out(out, r, "lerp")


def lerp_(self, end, weight):
    """In-place :func:`lerp`."""
    return write_back(self, lerp(self, end, weight), "lerp_")


def _bool_out(r, out, op):
    if out is not None and out._dtype is not D.bool:
        raise RuntimeError(f"{op} does not support non-boolean outputs.")
    return r if out is None else write_out(out, r, op)


def isnan(input, *, out=None):
    """True where the value is NaN."""
    x = _tensor_arg(input, "isnan")
    return _bool_out(_bool_like(x, False) if x._dtype.category != _FLOAT else ne(x, x), out, "isnan")


def isinf(input, *, out=None):
    """True where the value is +inf or -inf."""
    x = _tensor_arg(input, "isinf")
    return _bool_out(_bool_like(x, False) if x._dtype.category != _FLOAT else eq(abs(x), float("inf")), out, "isinf")


def isposinf(input, *, out=None):
    """True where the value is +inf."""
    x = _tensor_arg(input, "isposinf")
    return _bool_out(eq(x, float("inf")) if x._dtype.category == _FLOAT else _bool_like(x, False), out, "isposinf")


def isneginf(input, *, out=None):
    """True where the value is -inf."""
    x = _tensor_arg(input, "isneginf")
    return _bool_out(eq(x, float("-inf")) if x._dtype.category == _FLOAT else _bool_like(x, False), out, "isneginf")


def isfinite(input, *, out=None):
    """True where the value is neither infinite nor NaN."""
    x = _tensor_arg(input, "isfinite")
    return _bool_out(_bool_like(x, True) if x._dtype.category != _FLOAT else eq(sub(x, x), 0.0), out, "isfinite")


def isreal(input):
    """True everywhere (ember has no complex dtypes yet)."""
    return _bool_like(_tensor_arg(input, "isreal"), True)


def _bool_like(x, value):
    from .. import _factory
    return _factory.full(x._shape, value, dtype=D.bool, device=x._device)


def _signbit_decomp(x):
    if x._dtype.category == _FLOAT:
        # -0.0 is detected through 1 / -0.0 == -inf (a NaN's sign bit is not visible to primitives)
        return logical_or(lt(x, 0.0), logical_and(eq(x, 0.0), lt(_true_div(1.0, x), 0.0)))
    return lt(x, 0) if x._dtype.is_signed and x._dtype is not D.bool else _bool_like(x, False)


_SIGNBIT = register_op("signbit", decomposition=_signbit_decomp, differentiable=False, group="unary")


def signbit(input, *, out=None):
    """True where the sign bit is set (negative numbers and -0.0)."""
    x = _tensor_arg(input, "signbit")
    return _bool_out(dispatch(_SIGNBIT, x._device, (x,), ()), out, "signbit")


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
    """In-place :func:`nan_to_num`."""
    return write_back(self, nan_to_num(self, nan, posinf, neginf), "nan_to_num_")


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|input - other| <= atol + rtol * |other|`` elementwise; equal values (infinities
    included) are close, NaN only with ``equal_nan``."""
    if rtol < 0:
        raise RuntimeError(f"isclose: rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"isclose: atol must be greater than or equal to zero, but got {atol}")
    a, b, dev, ct = prep2("isclose", input, other, ARITH)
    close = eq(a, b)
    if ct.category != _FLOAT:
        if rtol == 0 and atol == 0 or ct is D.bool:
            return close
        wide = D.float64 if dev._backend.supports_dtype(D.float64) else D.float32
        a = _cast(a, wide) if isinstance(a, Tensor) else a
        b = _cast(b, wide) if isinstance(b, Tensor) else b
    err = abs(sub(a, b))
    allowed = add(mul(abs(b), rtol), atol) if isinstance(b, Tensor) else atol + rtol * math.fabs(b)
    close = logical_or(close, logical_and(isfinite(err), le(err, allowed)))
    if equal_nan and ct.category == _FLOAT:
        close = logical_or(close, logical_and(isnan(a), isnan(b) if isinstance(b, Tensor) else (b != b)))
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when :func:`isclose` holds everywhere."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """True when both have the same shape and values."""
    if input._shape != other._shape:
        return False
    return bool(eq(input, other).all().item())


def _as_tensor_like(v, dtype, dev):
    from .. import _factory
    return _factory.full((), v, dtype=dtype, device=dev)


def copysign(input, other, *, out=None):
    """``|input|`` with the sign bit of ``other`` (so -0.0 counts as negative), in a floating dtype."""
    a, b, dev, ct = prep2("copysign", input, other, FLOATOP)
    if not isinstance(a, Tensor):
        a = _as_tensor_like(a, ct, dev)
    mag = abs(a)
    if isinstance(b, Tensor):
        r = where(signbit(b), neg(mag), mag)
    else:
        r = neg(mag) if math.copysign(1.0, b) < 0 else mag
    return r if out is None else write_out(out, r, "copysign")


def copysign_(self, other):
    """In-place :func:`copysign`."""
    return write_back(self, copysign(self, other), "copysign_")


def xlogy(input, other, *, out=None):
    """``input * log(other)``, and 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    a, b, dev, ct = prep2("xlogy", input, other, FLOATOP)
    if not isinstance(b, Tensor):
        b = _as_tensor_like(b, ct, dev)
    r = mul(a, log(b))
    keep = logical_or(ne(a, 0.0), isnan(b)) if isinstance(a, Tensor) else (a != 0 or None)
    if keep is None:  # a python 0: the result is 0, or NaN where other is NaN
        r = where(isnan(b), float("nan"), mul(b, 0.0))
    elif keep is not True:
        r = where(keep, r, 0.0)
    return r if out is None else write_out(out, r, "xlogy")


def xlogy_(self, other):
    """In-place :func:`xlogy`."""
    return write_back(self, xlogy(self, other), "xlogy_")


def heaviside(input, values, *, out=None):
    """0 where ``input < 0``, ``values`` where it is 0, 1 where it is positive."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' must be Tensor, not {type(values).__name__}")
    x = _tensor_arg(input, "heaviside")
    if x._dtype is not values._dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({U.desc(x)} and "
                           f"{U.desc(values)})")
    r = where(eq(x, 0), values, gt(x, 0).to(x._dtype))
    return r if out is None else write_out(out, r, "heaviside")


def heaviside_(self, values):
    """In-place :func:`heaviside`."""
    return write_back(self, heaviside(self, values), "heaviside_")


def logaddexp(input, other, *, out=None):
    """``log(exp(input) + exp(other))`` without overflow."""
    a, b, dev, ct = prep2("logaddexp", input, other, FLOATOP)
    m = maximum(a, b)
    # equal infinities make a - b NaN; their sum is that infinity
    r = where(eq(a, b), add(a, math.log(2.0)), add(m, log1p(exp(neg(abs(sub(a, b)))))))
    return r if out is None else write_out(out, r, "logaddexp")


def logaddexp2(input, other, *, out=None):
    """``log2(2**input + 2**other)`` without overflow."""
    a, b, dev, ct = prep2("logaddexp2", input, other, FLOATOP)
    m = maximum(a, b)
    r = where(eq(a, b), add(a, 1.0), add(m, _true_div(log1p(exp2(neg(abs(sub(a, b))))), LN2)))
    return r if out is None else write_out(out, r, "logaddexp2")


def sinc(input, *, out=None):
    """``sin(pi x) / (pi x)``, 1 at 0."""
    x = _float(input)
    px = mul(x, math.pi)
    r = where(eq(x, 0.0), 1.0, _true_div(sin(px), px))
    return r if out is None else write_out(out, r, "sinc")


def sinc_(self):
    """In-place :func:`sinc`."""
    return write_back(self, sinc(self), "sinc_")


def _check_addcdiv(t1, t2):
    if isinstance(t1, Tensor) and isinstance(t2, Tensor) and t1._dtype.category <= _INT and t2._dtype.category <= _INT:
        raise RuntimeError("addcdiv: Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior "
                           "can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs.")


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2``."""
    r = add(input, mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2))
    return r if out is None else write_out(out, r, "addcmul")


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2``."""
    _check_addcdiv(tensor1, tensor2)
    q = _true_div(tensor1, tensor2)
    r = add(input, mul(q, value) if value != 1 else q)
    return r if out is None else write_out(out, r, "addcdiv")


def addcmul_(self, tensor1, tensor2, *, value=1):
    """In-place :func:`addcmul`."""
    return add_(self, mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2))


def addcdiv_(self, tensor1, tensor2, *, value=1):
    """In-place :func:`addcdiv`."""
    _check_addcdiv(tensor1, tensor2)
    q = _true_div(tensor1, tensor2)
    return add_(self, mul(q, value) if value != 1 else q)
