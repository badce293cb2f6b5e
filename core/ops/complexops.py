"""Complex numbers: the parts as views (``real``, ``imag``, ``view_as_real``, ``view_as_complex``),
conjugation, ``angle``, ``polar``, ``complex``, ``sgn`` and the helpers the other families'
backward formulas use for PyTorch's conjugate convention (``cj``, ``holomorphic``, from ``ops._args``).

The views reinterpret the storage with the parts' dtype (complex64 <-> float32, complex128 <->
float64): a complex element ``k`` is the real elements ``2k`` (real part) and ``2k + 1``
(imaginary part). Writing through them changes the complex tensor, as in PyTorch.

Conjugation is eager: PyTorch's ``conj()`` returns a lazily conjugated view (the conj bit);
ember's returns a new tensor for complex inputs (the input itself for real ones), so
``is_conj()`` is always False and ``resolve_conj()`` returns its input (see docs/complex.md).
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .. import _state
from .._graph import view_requires_grad
from .._tensor import _alias
from . import _args as U
from . import arithmetic as A
from . import comparison as CMP
from . import copy as CP
from . import pointwise as PW
from . import unary as UN
from .declare import composite, defop, viewop
from .registry import record

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "conj", "conj_physical", "conj_physical_",
           "resolve_conj", "resolve_neg", "angle", "polar", "complex", "sgn", "sgn_"]

_COMPLEX = D._COMPLEX
_grad = _state.grad


cj = U.cj
holomorphic = U.holomorphic


def real_part(t):
    """``t.real`` for a complex tensor, ``t`` otherwise (a gradient reaching a real input)."""
    return real(t) if t._dtype.category == _COMPLEX else t


def _dtype_view(op_fn, x, shape, stride, offset, dtype, args):
    """A view of ``x`` with another dtype (the parts of complex numbers), recorded as ``op_fn``'s
    node when ``x`` takes part in autograd."""
    if 0 in shape:
        offset -= offset % 2 if dtype.category != _COMPLEX else 0  # an empty view addresses nothing
    v = _alias(x, shape, stride, offset)
    v._dtype = dtype
    if _grad.enabled and (x._requires_grad or (x._base is not None and view_requires_grad(x))):
        record(op_fn.op, args, (x,), v)
        if v._base is None and x._base is not None:
            v._base = x._base
    return v


def _complex_arg(x, op: str):
    x = U.tensor_arg(x, op)
    if x._dtype.category != _COMPLEX:
        raise RuntimeError(f"{op} is only supported for complex tensors (got {x._dtype.name})")
    return x


# -- the parts as views ---------------------------------------------------------------------------

def _real_bw(ctx, g):
    return (CP.cast(g, ctx.args[0].dtype),)


def _imag_bw(ctx, g):
    return (A.mul(CP.cast(g, ctx.args[0].dtype), 1j),)


@viewop("real", backward=_real_bw, method=False)
def real(input):
    """The real parts of a complex tensor as a view (writable); a real tensor itself."""
    x = U.tensor_arg(input, "real")
    if x._dtype.category != _COMPLEX:
        return x
    return _dtype_view(real, x, x._shape, tuple(2 * s for s in x._stride), 2 * x._offset, D.to_real(x._dtype), (x,))


@viewop("imag", backward=_imag_bw, method=False)
def imag(input):
    """The imaginary parts of a complex tensor as a view (writable); refused for real tensors."""
    x = U.tensor_arg(input, "imag")
    if x._dtype.category != _COMPLEX:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _dtype_view(imag, x, x._shape, tuple(2 * s for s in x._stride), 2 * x._offset + 1, D.to_real(x._dtype),
                       (x,))


@viewop("view_as_real", backward=lambda ctx, g: (view_as_complex(CP.contiguous(g)),), method=False)
def view_as_real(input):
    """A complex tensor as a real one with a last dimension of size 2 (real, imaginary), a view."""
    x = U.tensor_arg(input, "view_as_real")
    if x._dtype.category != _COMPLEX:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _dtype_view(view_as_real, x, x._shape + (2,), tuple(2 * s for s in x._stride) + (1,), 2 * x._offset,
                       D.to_real(x._dtype), (x,))


@viewop("view_as_complex", backward=lambda ctx, g: (view_as_real(g),), method=False)
def view_as_complex(input):
    """A real tensor whose last dimension has size 2 and stride 1 as a complex one, a view."""
    x = U.tensor_arg(input, "view_as_complex")
    dt = x._dtype
    if dt not in (D.float32, D.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {U.type_name(dt)}")
    if not x._shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if x._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in x._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if x._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    x._device._backend.check_dtype(D.to_complex(dt), "view_as_complex")
    return _dtype_view(view_as_complex, x, x._shape[:-1], tuple(s // 2 for s in x._stride[:-1]), x._offset // 2,
                       D.to_complex(dt), (x,))


# -- conjugation ----------------------------------------------------------------------------------

def _conj_decomp(x):
    out = CP._empty(x._shape, x._dtype, x._device)
    kernels = x._device._kernels
    kernels["copy_"](real(out), real(x))
    kernels["copy_"](imag(out), UN.neg(imag(x)))
    return out


def _conj_meta(input):
    x = U.tensor_arg(input, "conj_physical")
    if x._dtype.category != _COMPLEX:
        return None, CP.clone(x), None
    return x._device, (x,), (x,)


conj_physical = defop("conj_physical", _conj_meta, decomposition=_conj_decomp, saves=(), result="elementwise",
                      inplace=True, group="unary", backward=lambda ctx, g: (conj_physical(g),),
                      doc="The complex conjugate as a new tensor (a copy of a real tensor).")
conj_physical_ = conj_physical.inplace


@composite("conj", out=False)
def conj(input):
    """The complex conjugate: a new tensor for a complex input (ember conjugates eagerly; PyTorch
    returns a lazily conjugated view), ``input`` itself for a real one."""
    x = U.tensor_arg(input, "conj")
    return conj_physical(x) if x._dtype.category == _COMPLEX else x


@composite("resolve_conj", out=False)
def resolve_conj(input):
    """``input`` itself: ember's conjugates are never lazy, so there is nothing to resolve."""
    return U.tensor_arg(input, "resolve_conj")


@composite("resolve_neg", out=False)
def resolve_neg(input):
    """``input`` itself: ember has no lazily negated views."""
    return U.tensor_arg(input, "resolve_neg")


# -- building and measuring complex numbers ------------------------------------------------------

def _complex_decomp(re, im):
    out = CP._empty(re._shape, D.to_complex(re._dtype), re._device)
    kernels = re._device._kernels
    kernels["copy_"](real(out), re)
    kernels["copy_"](imag(out), im)
    return out


def _complex_bw(ctx, g):
    return (real(g) if ctx.needs_input_grad[0] else None, imag(g) if ctx.needs_input_grad[1] else None)


def _check_parts(a, b, op):
    """PyTorch's checks of the two real tensors complex numbers are built of (ember has no
    complex32: float16 parts are refused)."""
    for t in (a, b):
        if t._dtype not in (D.float16, D.float32, D.float64):
            raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                               f"{U.type_name(a._dtype)} and {U.type_name(b._dtype)}")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"Expected object of scalar type {U.type_name(a._dtype)} but got scalar type "
                           f"{U.type_name(b._dtype)} for second argument")
    if a._dtype is D.float16:
        raise TypeError(f"{op}: float16 parts would make a complex32 tensor, which ember does not provide "
                        "(use float32 parts)")


@defop("complex", decomposition=_complex_decomp, backward=_complex_bw, saves=(), method=False, group="binary")
def complex(real, imag):
    """The complex tensor ``real + i imag`` (both float tensors of one dtype, broadcast)."""
    a = U.tensor_arg(real, "complex", "real", 1)
    b = U.tensor_arg(imag, "complex", "imag", 2)
    _check_parts(a, b, "complex")
    dev = U.common_device("complex", a, b)
    dev._backend.check_dtype(D.to_complex(a._dtype), "complex")
    shape = U.broadcast_all((a._shape, b._shape), "complex")
    if a._shape != shape:
        a = a.expand(shape)
    if b._shape != shape:
        b = b.expand(shape)
    return dev, (a, b), (a, b)


@composite("polar", method=False)
def polar(abs, angle):
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``."""
    a = U.tensor_arg(abs, "polar", "abs", 1)
    t = U.tensor_arg(angle, "polar", "angle", 2)
    _check_parts(a, t, "polar")
    return complex(A.mul(a, UN.cos(t)), A.mul(a, UN.sin(t)))


def _angle_decomp(x):
    return PW.atan2(imag(x), real(x))


def _angle_bw(ctx, g):
    # PyTorch's formula: grad * z / |z|^2 * i, 0 at z == 0
    x = ctx.args[0]
    a = UN.abs(x)
    return (PW.where(CMP.eq(x, 0.0), 0j, A.mul(A.div(A.mul(g, x), A.mul(a, a)), 1j)),)


@defop("angle", decomposition=_angle_decomp, backward=_angle_bw, group="unary")
def angle(input):
    """The argument of each element in radians (a real tensor; for a real input 0 or pi, NaN
    kept, with zero gradients); the gradient at 0 is 0, as PyTorch."""
    x = U.tensor_arg(input, "angle")
    if x._dtype.category != _COMPLEX:
        if x._dtype.category != D._FLOAT:
            x = CP.cast(x, D.get_default_dtype())
        return None, PW.where(CMP.isnan(x), x, A.mul(CP.cast(CMP.lt(x, 0.0), x._dtype), math.pi)), None
    return x._device, (x,), (x,)


@composite("sgn", inplace=True)
def sgn(input):
    """``z / |z|`` for complex elements (0 at 0), the sign of real ones."""
    x = U.tensor_arg(input, "sgn")
    if x._dtype.category != _COMPLEX:
        return UN.sign(x)
    a = UN.abs(x)
    zero = CMP.eq(a, 0.0)
    return PW.where(zero, 0j, A.div(x, PW.where(zero, 1.0, a)))


sgn_ = sgn.inplace
