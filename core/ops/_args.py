"""Argument checking and normalisation for op front ends, and the user-facing errors they raise
(naming the op, shapes, dtypes and devices)."""
from __future__ import annotations

import numbers

from .. import _dtype as D
from .._layout import SparseKernels
from .._tensor import Tensor, _wrap_dim
from ..backend import IndexOutOfRangeError, index_error  # noqa: F401  (re-exported for op front ends)
from ..backend import describe as desc
from ..backend.shapes import broadcast_shapes

_SCALARS = (int, float, bool)
_FLOAT = D._FLOAT
_INT = D._INT
_COMPLEX = D._COMPLEX

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def type_name(dt) -> str:
    """PyTorch's scalar type name of a dtype (``Float``, ``Long``...), as its messages use."""
    return _TYPE_NAMES[dt.name]


def tensor_arg(x, op: str, what: str = "input", position: int = 1) -> Tensor:
    """``x`` if it is a Tensor, else PyTorch's TypeError naming the argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' (position {position}) must be Tensor, not {type(x).__name__}")
    return x


_INT_RANGES = {dt: (D.iinfo(dt).min, D.iinfo(dt).max) for dt in D.INT_DTYPES}


def int_in_range(v: int, dtype, op: str) -> int:
    """``v`` if integer ``dtype`` holds it, else RuntimeError: a python number never wraps
    around silently (see docs/differences.md)."""
    lo, hi = _INT_RANGES[dtype]
    if v < lo or v > hi:
        raise RuntimeError(f"{op}: value {v} cannot be converted to type {dtype.name} without overflow")
    return v


def float_to_int(v: float, dtype, op: str) -> int:
    """A python float written into integer ``dtype``, truncated toward zero, if the dtype's range
    holds it; else PyTorch's RuntimeError (NaN and infinities never fit; ``255.5`` does not fit
    uint8)."""
    lo, hi = _INT_RANGES[dtype]
    if not lo <= v <= hi:
        raise RuntimeError(f"{op}: value {v} cannot be converted to type {dtype.name} without overflow")
    return int(v)


def scalar_value(v, dtype, op: str):
    """A python scalar converted for an op computing in ``dtype`` (refusing integer overflow)."""
    cat = dtype.category
    if cat == _FLOAT:
        return float(v)
    if cat == _INT:
        if isinstance(v, float):
            return v  # only reached for ops that allow it (e.g. pow with a float exponent)
        return int_in_range(int(v), dtype, op)
    if cat == _COMPLEX:
        return complex(v)
    return bool(v)


def dtype_not_implemented(op: str, dtype, hint: str = "") -> NotImplementedError:
    """PyTorch's refusal of a dtype an op has no kernel for (``NotImplementedError``, which is a
    ``RuntimeError``)."""
    return NotImplementedError(f"\"{op}\" not implemented for '{type_name(dtype)}'" + (f": {hint}" if hint else ""))


def refuse_complex(x, op: str) -> None:
    """PyTorch's refusal of a complex tensor by an op defined on real numbers only (ordering,
    rounding, clamping...): NotImplementedError naming the op and the dtype."""
    if x._dtype.category == _COMPLEX:
        raise NotImplementedError(f"{op}: \"{op}\" not implemented for '{type_name(x._dtype)}' (complex numbers "
                                  "have no order; use abs() or real/imag)")


def cj(t):
    """``conj(t)`` for a complex tensor or number, ``t`` itself otherwise: the conjugate in the
    backward formulas (PyTorch's gradient of ``f(z)`` is ``grad * conj(f'(z))``)."""
    if isinstance(t, Tensor):
        return t.conj_physical() if t._dtype.category == _COMPLEX else t
    return t.conjugate() if isinstance(t, complex) else t


def holomorphic(backward):
    """A backward formula written for real numbers, ``grad * f'(x)`` (linear in ``grad``), made
    right for complex ones under PyTorch's convention: ``conj(backward(conj(grad)))``, that is
    ``grad * conj(f'(x))``. Real gradients take the formula unchanged (one dtype check)."""
    def bw(ctx, g):
        if g._dtype.category != _COMPLEX:
            return backward(ctx, g)
        return tuple(None if r is None else cj(r) for r in backward(ctx, g.conj_physical()))
    bw.__name__ = bw.__qualname__ = getattr(backward, "__name__", "backward")
    return bw


def is_scalar(x) -> bool:
    return isinstance(x, _SCALARS) or isinstance(x, numbers.Number)


def broadcast_all(shapes, op: str = "") -> tuple:
    out = ()
    for s in shapes:
        out = broadcast_shapes(out, tuple(s), op)
    return out


def dims_arg(dim, ndim: int, op: str) -> tuple:
    """Normalise ``dim`` (None, int, or a sequence) to a sorted tuple of non-negative dims;
    None means every dim. A 0-d tensor accepts dim 0 and -1 and has no dims to reduce: ()."""
    if dim.__class__ is int and 0 <= dim < ndim:  # (the common case, without _wrap_dim)
        return (dim,)
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        out = []
        for d in dim:
            d = _wrap_dim(d, ndim, op)
            if d in out:
                raise RuntimeError(f"{op}: dim {d} appears multiple times in the list of dims")
            out.append(d)
        return tuple(sorted(out)) if ndim else ()
    d = _wrap_dim(dim, ndim, op)
    return (d,) if ndim else ()


def wrap_dim(dim, ndim, op=""):
    return _wrap_dim(dim, ndim, op)


def inverse_permutation(perm) -> tuple:
    """The permutation that undoes ``perm`` (``x.permute(perm).permute(inverse)`` is ``x``)."""
    inv = [0] * len(perm)
    for i, d in enumerate(perm):
        inv[d] = i
    return tuple(inv)


def size_arg(size, op: str) -> tuple:
    """Sizes given as ``f(2, 3)`` or ``f((2, 3))`` or ``f([2, 3])`` or an ``ember.Size``."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = size[0]
    out = []
    for s in size:
        if s.__class__ is not int:
            if isinstance(s, Tensor):
                s = int(s.item())
            if isinstance(s, bool) or not hasattr(s, "__index__"):
                raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type "
                                f"{type(s).__name__}")
            s = s.__index__()
        if not -2 ** 63 <= s < 2 ** 63:
            raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {len(out) + 1} with error "
                            "\"Overflow when unpacking long long\"")
        out.append(s)
    return tuple(out)


def size_keyword(sizes: tuple, size, op: str) -> tuple:
    """The size arguments of ``f(*sizes, size=None)``: PyTorch accepts ``zeros(2, 3)``,
    ``zeros((2, 3))`` and ``zeros(size=(2, 3))``, where the keyword takes a sequence only."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return (size,)


def check_sizes_nonneg(shape, op):
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {s}: {list(shape)}")


def common_device(op: str, *tensors):
    """The one device of ``tensors``; cpu 0-d tensors go along with any device (as PyTorch)."""
    dev = None
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        d = t._device
        if dev is None or dev is d:
            dev = d
            continue
        if d == dev:
            if d._kernels.__class__ is SparseKernels and dev._kernels.__class__ is not SparseKernels:
                if _cpu_scalar_seen(tensors, dev):  # a cpu 0-d tensor and a sparse one: the sparse kernels run
                    dev = d
                    continue
                raise RuntimeError(f"{op}: a sparse_coo tensor after a dense one: ember runs only the sparse ops "
                                   "listed in docs/sparse.md (sparse first: sparse @ dense, sparse * number...); "
                                   "convert it with .to_dense() for the others")
            continue
        if d._type == "cpu" and not t._shape:
            continue
        if dev._type == "cpu" and _cpu_scalar_seen(tensors, dev):
            dev = d
            continue
        raise RuntimeError(
            f"{op}: Expected all tensors to be on the same device, but found at least two devices, {dev} and {d}! "
            f"({', '.join(desc(x) for x in tensors if isinstance(x, Tensor))})")
    return dev


def _cpu_scalar_seen(tensors, dev):
    # dev came only from cpu 0-d tensors: the other device wins
    return all(not isinstance(t, Tensor) or t._device is not dev or not t._shape for t in tensors)


def opmath(x):
    """Tensor ``x`` in the dtype PyTorch's kernels compute it in: float16 and bfloat16 in float32
    (so that intermediate results neither overflow nor lose precision), others as they are."""
    return x.to(D.float32) if x._dtype.itemsize == 2 and x._dtype.category == _FLOAT else x


def from_opmath(r, dtype):
    """A result computed by :func:`opmath` back in the operands' ``dtype``."""
    return r if r._dtype is dtype else r.to(dtype)
