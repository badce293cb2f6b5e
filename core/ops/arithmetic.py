"""Arithmetic: add, sub, mul, div (true, truncating and floor), remainder, fmod, pow, maximum and
minimum (and their NaN-ignoring fmax/fmin), addcmul/addcdiv, with PyTorch's type promotion.

add, sub, mul, div, pow, maximum, minimum and fmod are primitives (see
:mod:`ember.ops.primitives`); the others decompose into them.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from .. import _dtype as D
from ..backend.shapes import broadcast_shapes
from .._tensor import Tensor
from . import _args as U
from . import comparison as CMP
from . import creation as CR
from . import pointwise as PW
from . import unary as UN
from ._binary import ARITH, FLOATOP, binary, binary_grads, binary_meta, operands, plan, promote, saves_other
from .declare import composite, defop
from .registry import dispatch, register_op

__all__ = ["add", "add_", "sub", "sub_", "subtract", "subtract_", "rsub", "mul", "mul_", "multiply", "multiply_",
           "div", "div_", "divide", "divide_", "true_divide", "true_divide_", "floor_divide", "floor_divide_",
           "fmod", "fmod_", "remainder", "remainder_", "pow", "pow_", "float_power", "float_power_", "maximum",
           "minimum", "fmax", "fmin", "addcmul", "addcmul_", "addcdiv", "addcdiv_"]

_FLOAT = D._FLOAT
_INT = D._INT

# the plain two-operand metas of the Tensor operators (``x + y`` has no alpha to check)
add_operands = binary_meta("add", ARITH)


# -- add, sub ---------------------------------------------------------------------------------

def _check_bool_sub(a, b):
    ba = a._dtype is D.bool if isinstance(a, Tensor) else isinstance(a, bool)
    bb = b._dtype is D.bool if isinstance(b, Tensor) else isinstance(b, bool)
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_alpha(input, other, alpha, op):
    rt = D.result_type(input, other)
    if isinstance(alpha, bool):
        if rt is not D.bool:
            raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and rt.category < _FLOAT:
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number.")


def _with_alpha(input, other, alpha, op):
    """``input + alpha * other`` (``sub``: ``alpha`` negated), as PyTorch's kernel computes it: both
    operands promoted first, ``alpha`` taken in the result dtype, and float16/bfloat16 computed in
    float32 and rounded once (so ``alpha * other`` neither wraps nor overflows in ``other``'s own
    dtype)."""
    _check_alpha(input, other, alpha, op)
    a, b, dev, ct = promote(op, input, other, ARITH)
    if ct is D.bool:
        alpha = bool(alpha)
    elif ct.category == D._COMPLEX:
        pass
    elif ct.category != _FLOAT:
        alpha = int(alpha)
    elif ct.itemsize == 2:  # alpha rounded to the dtype, the arithmetic in float32
        alpha = float(np.array(alpha, dtype=ct.np))
        a32 = a.to(D.float32) if isinstance(a, Tensor) else a
        b32 = b.to(D.float32) if isinstance(b, Tensor) else b
        r = (add if op == "add" else sub)(a32, mul(b32, alpha) if isinstance(b32, Tensor) else b32 * alpha)
        return r.to(ct)
    if not isinstance(b, Tensor):
        b = U.scalar_value(b * alpha, ct, op)  # python numbers: refused outside an integer dtype's range
    else:
        b = mul(b, alpha)
    return (add if op == "add" else sub)(a, b)


@defop("add", backward=lambda ctx, g: binary_grads(ctx, g, lambda g, a, b: g, lambda g, a, b: g), saves=(),
       result="elementwise", inplace=True, group="binary")
def add(input, other, *, alpha=1):
    """``input + alpha * other``."""
    if alpha.__class__ is not int or alpha != 1:
        return None, _with_alpha(input, other, alpha, "add"), None
    return plan("add", input, other, ARITH)


@defop("sub", backward=lambda ctx, g: binary_grads(ctx, g, lambda g, a, b: g, lambda g, a, b: -g), saves=(),
       result="elementwise", inplace=True, group="binary")
def sub(input, other, *, alpha=1):
    """``input - alpha * other`` (refused for bool operands: use ``^`` or ``~``)."""
    _check_bool_sub(input, other)
    if alpha.__class__ is not int or alpha != 1:
        return None, _with_alpha(input, other, alpha, "sub"), None
    return plan("sub", input, other, ARITH)


add_, sub_ = add.inplace, sub.inplace


def sub_operands(input, other):
    """The meta of ``input - other`` (no alpha)."""
    _check_bool_sub(input, other)
    return plan("sub", input, other, ARITH)


sub_operands.same = (False, True, True, True)  # (as binary_meta's: bool operands go through the check above)


subtract, subtract_ = sub, sub_


@composite("rsub", out=False)
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


# -- mul, div ---------------------------------------------------------------------------------

mul = binary("mul", ARITH, lambda g, a, b: g * b, lambda g, a, b: g * a, saves=saves_other, doc="``input * other``")
mul_ = mul.inplace
multiply, multiply_ = mul, mul_


def _div_a(g, a, b):
    return g / b


def _div_b(g, a, b):
    return -g * a / (b * b)


def _div_saves(args, needs):
    # input's gradient reads other; other's reads both
    if len(needs) == 2:
        return tuple(i for i, k in ((0, needs[1]), (1, needs[0] or needs[1])) if k)
    return () if isinstance(args[0], Tensor) else (0,)


@defop("div", backward=lambda ctx, g: binary_grads(ctx, g, _div_a, _div_b), saves=_div_saves, result="elementwise",
       inplace=True, group="binary")
def div(input, other, *, rounding_mode=None):
    """``input / other``; ``rounding_mode`` None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return plan("div", input, other, FLOATOP)
    if rounding_mode in ("trunc", "floor"):
        a, b, dev, ct = promote("div", input, other, ARITH)
        if ct is D.bool:
            raise U.dtype_not_implemented(f"div_{rounding_mode}_cpu", ct)
        if ct.category == _FLOAT:  # differentiable, with zero gradients
            return None, dispatch(_DIV_ROUNDED, dev, (a, b, rounding_mode), operands(a, b)), None
        if rounding_mode == "floor":
            return None, floor_divide(a, b), None
        return dev, (a, b), ()  # integer division truncates (the primitive's contract); not differentiable
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


div_ = div.inplace
divide, divide_ = div, div_
true_divide, true_divide_ = div, div_
div_operands = binary_meta("div", FLOATOP)
_DIV = div.op


def _div_rounded_decomp(a, b, mode):
    return floor_divide(a, b) if mode == "floor" else UN.trunc(div(a, b))


def _zero_grads(ctx, g):
    # PyTorch's div with a rounding mode: ``grad * 0`` for each operand (not a NaN where other is 0)
    return tuple(g * 0.0 if need else None for need in ctx.needs_input_grad)


# float division with a rounding mode: differentiable with zero gradients (floor_divide is not)
_DIV_ROUNDED = register_op("_div_rounded", decomposition=_div_rounded_decomp, backward=_zero_grads, saves=(),
                           group="binary")


def _sign_differs(r, b):
    """Where the truncated remainder ``r`` (``fmod``) is non-zero with the sign opposite to the
    divisor ``b``'s: there floor division is one below truncation, and python's ``%`` is ``r + b``."""
    b_neg = CMP.lt(b, 0) if isinstance(b, Tensor) else (b < 0)
    return CMP.logical_and(CMP.ne(r, 0), CMP.ne(CMP.lt(r, 0), b_neg))


def _floor_div_decomp(a, b):
    if (a._dtype if isinstance(a, Tensor) else b._dtype).category != _FLOAT:
        dev = a._device if isinstance(a, Tensor) else b._device
        q = dispatch(_DIV, dev, (a, b), ())  # truncated
        return sub(q, _sign_differs(fmod(a, b), b).to(q._dtype))
    # python's float floor division: (a - fmod(a, b)) / b, corrected
    mod = fmod(a, b)
    d = div(sub(a, mod), b)
    d = PW.where(_sign_differs(mod, b), sub(d, 1.0), d)
    fl = UN.floor(d)
    fl = PW.where(CMP.gt(sub(d, fl), 0.5), add(fl, 1.0), fl)
    if not isinstance(b, Tensor):
        return fl if b != 0 else div(a, b)
    return PW.where(CMP.ne(b, 0), fl, div(a, b))  # x // 0 is +-inf or nan, as true division


def _floor_divide_bw(ctx, g):
    raise RuntimeError("derivative for floor_divide is not implemented (PyTorch has none; "
                       "div(rounding_mode='floor') has zero gradients)")


@defop("floor_divide", decomposition=_floor_div_decomp, backward=_floor_divide_bw, saves=(), result="elementwise",
       inplace=True, group="binary")
def floor_divide(input, other):
    """Division rounded toward negative infinity (python's ``//``)."""
    a, b, dev, ct = promote("floor_divide", input, other, ARITH)
    if ct is D.bool or ct.category == D._COMPLEX:
        raise U.dtype_not_implemented("div_floor_cpu", ct)
    return dev, (a, b), operands(a, b)


floor_divide_ = floor_divide.inplace


# -- remainders ---------------------------------------------------------------------------------

fmod = binary("fmod", ARITH, lambda g, a, b: g, lambda g, a, b: -g * UN.trunc(a / b),
              doc="C's fmod: remainder with the sign of the dividend", no_bool=True)
fmod_ = fmod.inplace


def _remainder_decomp(a, b):
    r = fmod(a, b)
    return PW.where(_sign_differs(r, b), add(r, b), r)


remainder = binary("remainder", ARITH, lambda g, a, b: g, lambda g, a, b: -g * floor_divide(a, b),
                   decomposition=_remainder_decomp, doc="python's ``%``: remainder with the sign of the divisor",
                   no_bool=True)
remainder_ = remainder.inplace


# -- maximum, minimum ---------------------------------------------------------------------------

def _max_a(g, a, b):
    return PW.where(CMP.eq(a, b), g / 2, PW.where(CMP.gt(a, b), g, 0.0))


def _max_b(g, a, b):
    return PW.where(CMP.eq(a, b), g / 2, PW.where(CMP.lt(a, b), g, 0.0))


maximum = binary("maximum", ARITH, _max_a, _max_b, doc="elementwise maximum (NaN propagates)", inplace=False)
minimum = binary("minimum", ARITH, _max_b, _max_a, doc="elementwise minimum (NaN propagates)", inplace=False)


def _fmax_decomp(a, b):
    return PW.where(CMP.isnan(a), b, PW.where(CMP.isnan(b), a, maximum(a, b)))


def _fmin_decomp(a, b):
    return PW.where(CMP.isnan(a), b, PW.where(CMP.isnan(b), a, minimum(a, b)))


def _fmax_a(g, a, b):
    return PW.where(CMP.logical_or(CMP.ge(a, b), CMP.isnan(b)), g, 0.0)


def _fmax_b(g, a, b):
    return PW.where(CMP.logical_and(CMP.logical_not(CMP.ge(a, b)), CMP.logical_not(CMP.isnan(b))), g, 0.0)


def _fmin_a(g, a, b):
    return PW.where(CMP.logical_or(CMP.le(a, b), CMP.isnan(b)), g, 0.0)


def _fmin_b(g, a, b):
    return PW.where(CMP.logical_and(CMP.logical_not(CMP.le(a, b)), CMP.logical_not(CMP.isnan(b))), g, 0.0)


fmax = binary("fmax", ARITH, _fmax_a, _fmax_b, decomposition=_fmax_decomp, doc="elementwise maximum ignoring NaN",
              inplace=False)
fmin = binary("fmin", ARITH, _fmin_a, _fmin_b, decomposition=_fmin_decomp, doc="elementwise minimum ignoring NaN",
              inplace=False)


# -- pow ----------------------------------------------------------------------------------------

def _pow_a(g, a, b):
    if isinstance(b, (int, float, complex)):
        return g * 0.0 if b == 0 else g * b * pow(a, b - 1)
    # x ** 0 is 1 everywhere: its gradient is 0, also at 0 (where 0 * 0 ** -1 would be NaN)
    return PW.where(CMP.eq(b, 0), 0.0, g * b * pow(a, b - 1))


def _pow_b(g, a, b):
    if isinstance(a, complex):
        return g * pow(a, b) * (cmath.log(a) if a else math.nan)
    if isinstance(a, (int, float)):
        if a == 0:  # d/dy 0 ** y: 0 where y >= 0 (as PyTorch), else 0 ** y * log(0)
            return PW.where(CMP.ge(b, 0), 0.0, g * pow(a, b) * -math.inf)
        return g * pow(a, b) * (math.log(a) if a > 0 else math.nan)
    la = UN.log(a)
    zero = CMP.eq(a, 0)
    if not (isinstance(b, Tensor) and b._dtype.is_complex):
        zero = CMP.logical_and(zero, CMP.ge(b, 0))
    return g * pow(a, b) * PW.where(zero, 0.0, la)


def _int_pow(a, b, dev, op):
    """Integer ``a ** b`` where the exponent tensor ``b`` has negative entries: as PyTorch,
    ``x ** -n`` is ``1 / x ** n`` truncated (1 for 1, +-1 for -1, 0 otherwise)."""
    neg_e = CMP.lt(b, 0)
    r = dispatch(op, dev, (a, PW.where(neg_e, 0, b)), ())
    sign_of_odd = PW.where(CMP.ne(remainder(b, 2), 0), -1, 1)
    if isinstance(a, Tensor):
        recip = PW.where(CMP.eq(a, 1), 1, PW.where(CMP.eq(a, -1), sign_of_odd, 0))
    else:
        recip = 1 if a == 1 else (sign_of_odd if a == -1 else 0)
    return PW.where(neg_e, recip, r).to(r._dtype)


@defop("pow", backward=lambda ctx, g: binary_grads(ctx, g, _pow_a, _pow_b), result="elementwise", inplace=True,
       group="binary")
def pow(input, exponent):
    """``input ** exponent``. Integer tensors to a negative python-int power are refused (as
    PyTorch); negative entries of an integer exponent tensor give ``1 / x ** n`` truncated."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"pow(): expected at least one Tensor argument, got {type(input).__name__} and "
                        f"{type(exponent).__name__}")
    a, b, dev, ct = promote("pow", input, exponent, ARITH)
    if ct.category <= _INT:
        if ct is D.bool:
            if isinstance(a, Tensor) and not isinstance(b, Tensor):  # x ** True is x, x ** False is all True
                return None, (a.clone() if b else CR.full(a._shape, True, dtype=D.bool, device=dev)), None
            raise U.dtype_not_implemented("pow", ct)
        if not isinstance(b, Tensor):
            if b < 0:
                raise RuntimeError(f"pow: Integers to negative integer powers are not allowed (exponent {b} for "
                                   f"{U.desc(a)}).")
        elif b.numel() and bool(CMP.lt(b, 0).any().item()):
            return None, _int_pow(a, b, dev, pow.op), None
    return dev, (a, b), operands(a, b)


pow_ = pow.inplace


@composite("float_power", inplace=True, exact_dtype=True)
def float_power(input, exponent):
    """``pow`` computed in float64 (an ``out=`` tensor or in-place ``self`` must be float64)."""
    x = input.to(D.float64) if isinstance(input, Tensor) else float(input)
    e = exponent.to(D.float64) if isinstance(exponent, Tensor) else float(exponent)
    return pow(x, e)


float_power_ = float_power.inplace


# -- fused multiply/divide-add ------------------------------------------------------------------

def _check_addcdiv(t1, t2):
    if isinstance(t1, Tensor) and isinstance(t2, Tensor) and t1._dtype.category <= _INT and t2._dtype.category <= _INT:
        raise RuntimeError("addcdiv: Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior "
                           "can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs.")


def _fused_operands(op, input, tensor1, tensor2, value):
    """The operands of addcmul/addcdiv in the dtype they compute in, and ``value`` for it: PyTorch
    promotes all three first (so ``tensor1 * tensor2`` neither wraps nor overflows in their own
    dtype), takes ``value`` in an integer result dtype, and computes float16/bfloat16 in float32."""
    ct = D.result_type(input, tensor1, tensor2)
    if ct is D.bool:
        raise U.dtype_not_implemented(f"{op}_cpu_out", ct)
    if ct.category != _FLOAT:
        value = int(value)
    work = D.float32 if ct.itemsize == 2 and ct.category == _FLOAT else ct
    return ct, tuple(t.to(work) if isinstance(t, Tensor) and t._dtype is not work else t
                     for t in (input, tensor1, tensor2)), value


def _to_result_shape(op, input, tensor1, tensor2):
    """``tensor1`` and ``tensor2`` expanded to the result's shape where it is larger than theirs:
    PyTorch's fused kernel computes their gradients at the result's shape before summing them down,
    so an empty result gives zero gradients even where ``t1 / t2`` is 0/0 (reducing first and then
    multiplying would give NaN)."""
    pair = broadcast_shapes(tensor1._shape, tensor2._shape, op)
    full = broadcast_shapes(pair, input._shape, op)
    if full == pair:
        return tensor1, tensor2
    return tensor1.expand(full), tensor2.expand(full)


def _scaled_quotient(tensor1, tensor2, value):
    # (value * t1) / t2 in that order, as PyTorch's kernel rounds: optimizers call addcdiv every
    # step, and (t1 / t2) * value differs by an ulp in a third of the elements, which compounds
    return div(mul(tensor1, value) if value != 1 else tensor1, tensor2)


def _scaled_product(tensor1, tensor2, value):
    return mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2)


def _addcmul_inplace(self, tensor1, tensor2, *, value=1):
    _, (_, t1, t2), value = _fused_operands("addcmul", self, tensor1, tensor2, value)
    return add_(self, _scaled_product(t1, t2, value))


def _addcdiv_inplace(self, tensor1, tensor2, *, value=1):
    _check_addcdiv(tensor1, tensor2)
    _, (_, t1, t2), value = _fused_operands("addcdiv", self, tensor1, tensor2, value)
    return add_(self, _scaled_quotient(t1, t2, value))


@composite("addcmul", inplace=_addcmul_inplace)
def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    ct, (x, t1, t2), value = _fused_operands("addcmul", input, tensor1, tensor2, value)
    r = add(x, _scaled_product(*_to_result_shape("addcmul", x, t1, t2), value))
    return r if r._dtype is ct else r.to(ct)


@composite("addcdiv", inplace=_addcdiv_inplace)
def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    _check_addcdiv(tensor1, tensor2)
    ct, (x, t1, t2), value = _fused_operands("addcdiv", input, tensor1, tensor2, value)
    r = add(x, _scaled_quotient(*_to_result_shape("addcdiv", x, t1, t2), value))
    return r if r._dtype is ct else r.to(ct)


addcmul_, addcdiv_ = addcmul.inplace, addcdiv.inplace
