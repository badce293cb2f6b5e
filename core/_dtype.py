"""dtypes and PyTorch's type-promotion rules.

A dtype is a singleton object (``ember.float32``) carrying its name, size and category.
``numpy`` is the host-side format, so each dtype knows its numpy equivalent (bfloat16 through
``ml_dtypes`` when that is installed).
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "half", "float", "double", "short", "int", "long", "cfloat",
    "cdouble",
    "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "can_cast",
    "iinfo", "finfo",
]

_builtin_bool, _builtin_int, _builtin_float = bool, int, float

# categories, ordered: a higher category wins promotion regardless of size
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, e.g. ``ember.float32``."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "_np", "_np_name", "_rank")

    def __init__(self, name: str, itemsize: int, category: int, signed: bool, np_name: str, rank: int):
        self.name = name
        self.itemsize = itemsize
        self.category = category
        self.is_signed = signed
        self._np_name = np_name
        self._np = None
        self._rank = rank

    @property
    def is_floating_point(self) -> bool:
        return self.category == _FLOAT

    @property
    def is_complex(self) -> bool:
        return self.category == _COMPLEX

    @property
    def np(self) -> np.dtype:
        """The numpy dtype holding this dtype's values (bfloat16 needs ``ml_dtypes``)."""
        if self._np is None:
            if self._np_name == "bfloat16":
                try:
                    import ml_dtypes
                except ImportError:  # pragma: no cover - depends on the environment
                    raise TypeError("bfloat16 needs the 'ml_dtypes' package on the host: "
                                    "pip install ml_dtypes") from None
                self._np = np.dtype(ml_dtypes.bfloat16)
            else:
                self._np = np.dtype(self._np_name)
        return self._np

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_from_name, (self.name,))


bool = dtype("bool", 1, _BOOL, False, "bool", 0)
uint8 = dtype("uint8", 1, _INT, False, "uint8", 1)
int8 = dtype("int8", 1, _INT, True, "int8", 1)
int16 = dtype("int16", 2, _INT, True, "int16", 2)
int32 = dtype("int32", 4, _INT, True, "int32", 3)
int64 = dtype("int64", 8, _INT, True, "int64", 4)
float16 = dtype("float16", 2, _FLOAT, True, "float16", 1)
bfloat16 = dtype("bfloat16", 2, _FLOAT, True, "bfloat16", 1)
float32 = dtype("float32", 4, _FLOAT, True, "float32", 3)
float64 = dtype("float64", 8, _FLOAT, True, "float64", 4)
complex64 = dtype("complex64", 8, _COMPLEX, True, "complex64", 3)
complex128 = dtype("complex128", 16, _COMPLEX, True, "complex128", 4)

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128

REAL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
COMPLEX_DTYPES = (complex64, complex128)
ALL_DTYPES = REAL_DTYPES + COMPLEX_DTYPES
FLOAT_DTYPES = (float16, bfloat16, float32, float64)
INT_DTYPES = (uint8, int8, int16, int32, int64)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"half": float16, "float": float32, "double": float64, "short": int16, "int": int32, "long": int64,
                 "cfloat": complex64, "cdouble": complex128})

# complex <-> its real counterpart (the dtype of ``real``, ``imag``, ``abs``; ``finfo``'s limits).
# float16 and bfloat16 have no complex counterpart in ember (PyTorch's complex32 is not provided):
# they promote to complex64.
_TO_REAL = {complex64: float32, complex128: float64}
_TO_COMPLEX = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128,
               complex64: complex64, complex128: complex128}


def to_real(d: dtype) -> dtype:
    """The real dtype of a complex dtype's parts (complex64 -> float32); other dtypes unchanged."""
    return _TO_REAL.get(d, d)


def to_complex(d: dtype) -> dtype:
    """The complex dtype with ``d``'s precision (float64 -> complex128); integers and bool give the
    default complex dtype."""
    r = _TO_COMPLEX.get(d)
    return r if r is not None else default_complex()


def _dtype_from_name(name: str) -> dtype:
    return _BY_NAME[name]


_FROM_NP: dict = {}


def from_numpy_dtype(npdt) -> dtype:
    """The ember dtype of a numpy dtype; TypeError for types ember has no equivalent of."""
    d = _FROM_NP.get(npdt)
    if d is not None:
        return d
    npdt = np.dtype(npdt)
    for cand in ALL_DTYPES:
        try:
            if cand.np == npdt:
                _FROM_NP[npdt] = cand
                _FROM_NP[npdt.type] = cand
                return cand
        except TypeError:
            continue
    raise TypeError(
        f"can't convert np.ndarray of type {npdt}. The only supported types are: "
        "complex128, complex64, float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool."
    )


def to_dtype(x) -> dtype:
    """Normalise a dtype argument: an ember dtype, a python type, a numpy dtype or a name."""
    if x.__class__ is dtype:
        return x
    if x is _builtin_float:
        return float64
    if x is _builtin_int:
        return int64
    if x is _builtin_bool:
        return bool
    if isinstance(x, str):
        name = x[6:] if x.startswith("ember.") else x[6:] if x.startswith("torch.") else x
        if name in _BY_NAME:
            return _BY_NAME[name]
        raise TypeError(f"unknown dtype name {x!r}; expected one of {sorted(_BY_NAME)}")
    try:
        return from_numpy_dtype(x)
    except TypeError:
        raise TypeError(f"expected an ember dtype (e.g. ember.float32), got {x!r}") from None


_default = [float32]


def get_default_dtype() -> dtype:
    """The floating dtype that python floats and ``ember.tensor([1.0])`` become (float32)."""
    return _default[0]


def set_default_dtype(d) -> None:
    """Set the default floating dtype; only float16, bfloat16, float32 and float64 are allowed."""
    d = to_dtype(d)
    if d.category != _FLOAT:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def default_complex() -> dtype:
    """The complex dtype python complex numbers become: complex128 when the default dtype is
    float64, else complex64 (as PyTorch)."""
    return complex128 if _default[0] is float64 else complex64


# -- promotion -------------------------------------------------------------------------------

def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == _COMPLEX and lo.category == _FLOAT and lo._rank > hi._rank:
            return complex128  # complex64 with float64
        return hi
    if a.category == _BOOL:
        return bool
    if a.category == _INT:
        if a.is_signed == b.is_signed:
            return a if a._rank >= b._rank else b
        # one unsigned (uint8) and one signed
        u, s = (a, b) if not a.is_signed else (b, a)
        if s._rank > u._rank:
            return s
        return int16  # uint8 with int8 -> int16
    if a.category == _COMPLEX:
        return a if a._rank >= b._rank else b
    # floating
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if a._rank >= b._rank else b


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(a, b) -> dtype:
    """The smallest dtype both ``a`` and ``b`` cast to, as ``torch.promote_types``."""
    return _PROMOTE[(to_dtype(a), to_dtype(b))]


def scalar_dtype(x) -> dtype:
    """The dtype a python scalar would have as a tensor."""
    if isinstance(x, _builtin_bool):
        return bool
    if isinstance(x, _builtin_int):
        return int64
    if isinstance(x, _builtin_float):
        return _default[0]
    if isinstance(x, np.generic):
        return from_numpy_dtype(x.dtype)
    if isinstance(x, complex):
        return default_complex()
    raise TypeError(f"expected a number, got {type(x).__name__}")


def result_type(*operands) -> dtype:
    """PyTorch's ``result_type``: tensors with dims beat 0-d tensors, which beat python scalars,
    unless a lower-priority operand is of a higher category (bool < integer < floating)."""
    dim_t = zero_t = scal = None
    for x in operands:
        d = getattr(x, "_dtype", None)  # a tensor (this module sits below the Tensor class)
        if d is not None:
            if x._shape:
                dim_t = d if dim_t is None else _PROMOTE[(dim_t, d)]
            else:
                zero_t = d if zero_t is None else _PROMOTE[(zero_t, d)]
        elif isinstance(x, dtype):
            dim_t = x if dim_t is None else _PROMOTE[(dim_t, x)]
        else:
            d = scalar_dtype(x)
            if isinstance(x, np.generic):  # numpy scalars behave as 0-d tensors
                zero_t = d if zero_t is None else _PROMOTE[(zero_t, d)]
                continue
            scal = d if scal is None else _PROMOTE[(scal, d)]
    return combine_levels(dim_t, zero_t, scal)


def combine_levels(dim_t, zero_t, scal) -> dtype:
    res = dim_t
    if zero_t is not None:
        if res is None:
            res = zero_t
        elif zero_t.category > res.category:
            res = _lower_wins(res, zero_t)
    if scal is not None:
        if res is None:
            res = scal
        elif scal.category > res.category:
            # a python float with an integer tensor gives the default float dtype
            res = _lower_wins(res, scal)
    return res


def _lower_wins(higher: dtype, lower: dtype) -> dtype:
    """A lower-priority operand of a higher category decides the category; a complex one next to
    a floating tensor keeps the tensor's precision (float64 tensor + 1j -> complex128)."""
    if lower.category == _COMPLEX and higher.category == _FLOAT:
        return _TO_COMPLEX[higher]
    return lower


def can_cast(from_, to) -> bool:
    """Whether ``from_`` may be cast to ``to`` under PyTorch's in-place casting rule
    (no complex -> float, no float -> integer, no non-bool -> bool)."""
    f, t = to_dtype(from_), to_dtype(to)
    return f.category <= t.category


class iinfo:
    """Machine limits of an integer dtype."""

    def __init__(self, d):
        d = to_dtype(d)
        if d.category not in (_INT, _BOOL):
            raise TypeError(f"iinfo needs an integer dtype, got {d}")
        i = np.iinfo(d.np) if d is not bool else None
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.min = 0 if i is None else _builtin_int(i.min)
        self.max = 1 if i is None else _builtin_int(i.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


class finfo:
    """Machine limits of a floating dtype (of a complex dtype: its real parts' dtype's, as PyTorch)."""

    def __init__(self, d=None):
        d = _default[0] if d is None else to_real(to_dtype(d))
        if d.category != _FLOAT:
            raise TypeError(f"finfo needs a floating dtype, got {d}")
        f = np.finfo(d.np)
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.eps = _builtin_float(f.eps)
        self.max = _builtin_float(f.max)
        self.min = _builtin_float(f.min)
        self.tiny = self.smallest_normal = _builtin_float(f.tiny)
        self.resolution = _builtin_float(f.resolution)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"dtype={self.dtype})")
