"""Comparisons, logical and bitwise ops, and predicates: eq/ne/lt/le/gt/ge, logical_and/or/xor/
not, bitwise_and/or/xor/not and shifts, isnan/isinf/isfinite/isposinf/isneginf/isreal/signbit,
isclose/allclose/equal.

The comparisons, logical and bitwise binary ops and ``logical_not`` are primitives; the others
decompose into them.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import arithmetic as A
from . import complexops as CX
from . import copy as CP
from . import creation as CR
from . import pointwise as PW
from . import unary as UN
from ._binary import ARITH, BITWISE, COMPARE, LOGICAL, binary, promote
from .declare import composite, defop

__all__ = ["eq", "eq_", "ne", "ne_", "lt", "lt_", "le", "le_", "gt", "gt_", "ge", "ge_", "greater", "greater_",
           "greater_equal", "greater_equal_", "less", "less_", "less_equal", "less_equal_", "not_equal",
           "not_equal_", "logical_and", "logical_and_", "logical_or", "logical_or_", "logical_xor", "logical_xor_",
           "logical_not", "logical_not_", "bitwise_and", "bitwise_and_", "bitwise_or", "bitwise_or_", "bitwise_xor",
           "bitwise_xor_", "bitwise_not", "bitwise_not_", "bitwise_left_shift", "bitwise_left_shift_",
           "bitwise_right_shift", "bitwise_right_shift_", "isnan", "isinf", "isposinf", "isneginf", "isfinite",
           "isreal", "signbit", "isclose", "allclose", "equal"]

_FLOAT = D._FLOAT
_INT = D._INT

# -- comparisons --------------------------------------------------------------------------------

eq = binary("eq", COMPARE, doc="``input == other``")
ne = binary("ne", COMPARE, doc="``input != other``")
lt = binary("lt", COMPARE, doc="``input < other``")
le = binary("le", COMPARE, doc="``input <= other``")
gt = binary("gt", COMPARE, doc="``input > other``")
ge = binary("ge", COMPARE, doc="``input >= other``")
eq_, ne_, lt_, le_, gt_, ge_ = eq.inplace, ne.inplace, lt.inplace, le.inplace, gt.inplace, ge.inplace
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

# -- logical --------------------------------------------------------------------------------------

logical_and = binary("logical_and", LOGICAL, doc="elementwise logical and")
logical_or = binary("logical_or", LOGICAL, doc="elementwise logical or")
logical_xor = binary("logical_xor", LOGICAL, doc="elementwise logical xor")
logical_and_, logical_or_, logical_xor_ = logical_and.inplace, logical_or.inplace, logical_xor.inplace


@defop("logical_not", differentiable=False, inplace=True, group="unary")
def logical_not(input):
    """Elementwise logical not (bool result; in place, written back in ``self``'s dtype)."""
    x = U.tensor_arg(input, "logical_not")
    return x._device, (x,), (x,)


logical_not_ = logical_not.inplace

# -- bitwise --------------------------------------------------------------------------------------

bitwise_and = binary("bitwise_and", BITWISE, doc="elementwise bitwise and")
bitwise_or = binary("bitwise_or", BITWISE, doc="elementwise bitwise or")
bitwise_xor = binary("bitwise_xor", BITWISE, doc="elementwise bitwise xor")
bitwise_and_, bitwise_or_, bitwise_xor_ = bitwise_and.inplace, bitwise_or.inplace, bitwise_xor.inplace


@composite("bitwise_not", inplace=True)
def bitwise_not(input):
    """``~input``: logical not for bool, bit flip for integers."""
    x = U.tensor_arg(input, "bitwise_not")
    if x._dtype is D.bool:
        return logical_not(x)
    if x._dtype.category == _INT:
        return bitwise_xor(x, -1 if x._dtype.is_signed else D.iinfo(x._dtype).max)
    raise U.dtype_not_implemented("bitwise_not_cpu", x._dtype)


bitwise_not_ = bitwise_not.inplace


def _wrapped_int(v: int, dtype) -> int:
    """``v`` reduced modulo 2**bits into ``dtype``'s range (two's complement wrap-around)."""
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if dtype.is_signed and v >= 1 << (bits - 1) else v


def _shift(name, input, other, left: bool):
    a, b, dev, ct = promote(name, input, other, BITWISE)
    if ct is D.bool:
        raise U.dtype_not_implemented(("lshift" if left else "rshift") + "_cpu", ct)
    if not isinstance(a, Tensor):
        a = CR.full((), a, dtype=ct, device=dev)
    bits = ct.itemsize * 8
    # shifts are multiplications/floor divisions by powers of two, wrapping as C's shifts do; a
    # count outside [0, bits) gives 0 (left) or the sign, 0 or -1 (right), as PyTorch
    sign_fill = PW.where(lt(a, 0), -1, 0).to(ct) if ct.is_signed else A.mul(a, 0)
    limit = bits - 2 if ct.is_signed else bits - 1  # the largest power of two ct holds
    if not isinstance(b, Tensor):
        if b < 0 or b >= bits:
            return A.mul(a, 0) if left else sign_fill
        if left:
            return A.mul(a, _wrapped_int(1 << b, ct))
        return A.floor_divide(a, 1 << b) if b <= limit else sign_fill
    big = logical_or(lt(b, 0), ge(b, bits))
    if left:
        # 2 ** b computed in ct wraps exactly as the shifted-out bits do
        return PW.where(big, 0, A.mul(a, A.pow(2, PW.where(big, 0, b))))
    far = logical_or(big, gt(b, limit))
    q = A.floor_divide(a, A.pow(2, PW.where(far, 0, b)))
    return PW.where(far, sign_fill, q)


@composite("bitwise_left_shift", inplace=True)
def bitwise_left_shift(input, other):
    """``input << other`` (integers; bits shifted out are lost)."""
    return _shift("bitwise_left_shift", input, other, True)


@composite("bitwise_right_shift", inplace=True)
def bitwise_right_shift(input, other):
    """``input >> other``: arithmetic shift (rounds toward negative infinity)."""
    return _shift("bitwise_right_shift", input, other, False)


bitwise_left_shift_, bitwise_right_shift_ = bitwise_left_shift.inplace, bitwise_right_shift.inplace

# -- predicates -----------------------------------------------------------------------------------


def _bool_like(x, value):
    return CR.full(x._shape, value, dtype=D.bool, device=x._device)


@composite("isnan", exact_dtype=True)
def isnan(input):
    """True where the value is NaN."""
    x = U.tensor_arg(input, "isnan")
    return _bool_like(x, False) if x._dtype.category < _FLOAT else ne(x, x)


@composite("isinf", exact_dtype=True)
def isinf(input):
    """True where the value is +inf or -inf."""
    x = U.tensor_arg(input, "isinf")
    if x._dtype.category == D._COMPLEX:  # either part infinite
        return isinf(CX.real(x)) | isinf(CX.imag(x))
    return _bool_like(x, False) if x._dtype.category != _FLOAT else eq(UN.abs(x), math.inf)


@composite("isposinf", exact_dtype=True)
def isposinf(input):
    """True where the value is +inf."""
    x = U.tensor_arg(input, "isposinf")
    if x._dtype.category == D._COMPLEX:
        raise RuntimeError("isposinf does not support complex inputs.")
    return eq(x, math.inf) if x._dtype.category == _FLOAT else _bool_like(x, False)


@composite("isneginf", exact_dtype=True)
def isneginf(input):
    """True where the value is -inf."""
    x = U.tensor_arg(input, "isneginf")
    if x._dtype.category == D._COMPLEX:
        raise RuntimeError("isneginf does not support complex inputs.")
    return eq(x, -math.inf) if x._dtype.category == _FLOAT else _bool_like(x, False)


@composite("isfinite", exact_dtype=True)
def isfinite(input):
    """True where the value is neither infinite nor NaN."""
    x = U.tensor_arg(input, "isfinite")
    if x._dtype.category == D._COMPLEX:  # both parts finite
        return isfinite(CX.real(x)) & isfinite(CX.imag(x))
    return _bool_like(x, True) if x._dtype.category != _FLOAT else eq(A.sub(x, x), 0.0)


@composite("isreal", out=False)
def isreal(input):
    """Whether each element is real: True everywhere for a real tensor, where the imaginary part
    is 0 for a complex one."""
    x = U.tensor_arg(input, "isreal")
    return eq(CX.imag(x), 0.0) if x._dtype.category == D._COMPLEX else _bool_like(x, True)


def _signbit_decomp(x):
    if x._dtype.category == _FLOAT:
        # -0.0 is detected through 1 / -0.0 == -inf (a NaN's sign bit is not visible to primitives)
        return logical_or(lt(x, 0.0), logical_and(eq(x, 0.0), lt(A.div(1.0, x), 0.0)))
    return lt(x, 0) if x._dtype.is_signed and x._dtype is not D.bool else _bool_like(x, False)


@defop("signbit", decomposition=_signbit_decomp, differentiable=False, exact_dtype=True, group="unary")
def signbit(input):
    """True where the sign bit is set (negative numbers and -0.0)."""
    x = U.tensor_arg(input, "signbit")
    return x._device, (x,), ()


@composite("isclose", out=False)
def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|input - other| <= atol + rtol * |other|`` elementwise; equal values (infinities
    included) are close, NaN only with ``equal_nan``."""
    if rtol < 0:
        raise RuntimeError(f"isclose: rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"isclose: atol must be greater than or equal to zero, but got {atol}")
    a, b, dev, ct = promote("isclose", input, other, ARITH)
    close = eq(a, b)
    if ct.category != _FLOAT:
        if rtol == 0 and atol == 0 or ct is D.bool:
            return close
        wide = D.float64 if dev._backend.supports_dtype(D.float64) else D.float32
        a = CP.cast(a, wide) if isinstance(a, Tensor) else a
        b = CP.cast(b, wide) if isinstance(b, Tensor) else b
    err = UN.abs(A.sub(a, b))
    allowed = A.add(A.mul(UN.abs(b), rtol), atol) if isinstance(b, Tensor) else atol + rtol * math.fabs(b)
    close = logical_or(close, logical_and(isfinite(err), le(err, allowed)))
    if equal_nan and ct.category == _FLOAT:
        close = logical_or(close, logical_and(isnan(a), isnan(b) if isinstance(b, Tensor) else (b != b)))
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when :func:`isclose` holds everywhere."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """True when both have the same shape and values."""
    U.tensor_arg(input, "equal", "input", 1)
    U.tensor_arg(other, "equal", "other", 2)
    if input._shape != other._shape:
        return False
    return bool(eq(input, other).all().item())

