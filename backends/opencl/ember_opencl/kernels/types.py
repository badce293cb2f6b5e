"""Element types in OpenCL C: each ember dtype has a storage type (what a buffer holds), a
compute type (what kernels compute in) and load/store expressions between the two.

16-bit floats are stored as 16-bit words and computed in ``float``: float16 through the core
``vload_half``/``vstore_half_rte`` functions, bfloat16 by moving the bits (the upper half of a
float, rounded to nearest even). bool is a byte holding 0 or 1. complex64/complex128 are stored
as pairs of float/double and computed as ``float2``/``double2`` (``vload2``/``vstore2``; their
arithmetic is in :mod:`ember_opencl.kernels.cplx`).
"""
from __future__ import annotations

import numpy as np

from ember.backend import dtypes as D

from . import cplx


class CT:
    """The OpenCL C view of one ember dtype."""

    __slots__ = ("dtype", "name", "st", "ct", "is_float", "is_int", "is_bool", "is_complex", "signed", "size", "f16",
                 "bf16")

    def __init__(self, dtype, st: str, ct: str):
        self.dtype = dtype
        self.name = dtype.name
        self.st = st
        self.ct = ct
        self.is_float = dtype.is_floating_point
        self.is_bool = dtype is D.bool
        self.is_complex = dtype.is_complex
        self.is_int = not self.is_float and not self.is_bool and not self.is_complex
        self.signed = dtype.is_signed
        self.size = dtype.itemsize
        self.f16 = dtype is D.float16
        self.bf16 = dtype is D.bfloat16

    def ptr(self, qual: str = "__global") -> str:
        """The pointer type of a buffer of this dtype."""
        return f"{qual} {'half' if self.f16 else self.st}*"

    def load(self, p: str, i: str) -> str:
        if self.is_complex:
            return f"vload2({i}, {p})"
        if self.f16:
            return f"vload_half({i}, {p})"
        if self.bf16:
            return f"bf2f({p}[{i}])"
        return f"{p}[{i}]"

    def store(self, p: str, i: str, v: str) -> str:
        if self.is_complex:
            return f"vstore2(({self.ct})({v}), {i}, {p})"
        if self.f16:
            return f"vstore_half_rte((float)({v}), {i}, {p})"
        if self.bf16:
            return f"{p}[{i}] = f2bf((float)({v}))"
        if self.is_bool:
            return f"{p}[{i}] = (uchar)(({v}) != 0)"
        return f"{p}[{i}] = {v}"

    def field(self, f: str) -> str:
        """The C value of scalar field ``f`` of an argument struct (``"m.a"``) in this type: a
        complex scalar travels as two fields, ``f_re`` and ``f_im``."""
        return f"(({self.ct})({f}_re, {f}_im))" if self.is_complex else f

    def __repr__(self):
        return f"CT({self.name})"


TYPES = {
    "bool": CT(D.bool, "uchar", "uchar"),
    "uint8": CT(D.uint8, "uchar", "uchar"),
    "int8": CT(D.int8, "char", "char"),
    "int16": CT(D.int16, "short", "short"),
    "int32": CT(D.int32, "int", "int"),
    "int64": CT(D.int64, "long", "long"),
    "float16": CT(D.float16, "half", "float"),
    "bfloat16": CT(D.bfloat16, "ushort", "float"),
    "float32": CT(D.float32, "float", "float"),
    "float64": CT(D.float64, "double", "double"),
    "complex64": CT(D.complex64, "float", "float2"),
    "complex128": CT(D.complex128, "double", "double2"),
}


def T(dtype) -> CT:
    return TYPES[dtype.name]


def cast(v: str, src: CT, dst: CT) -> str:
    """Convert compute value ``v`` of ``src`` to the compute type of ``dst`` with PyTorch's
    semantics: to bool is ``!= 0``; float to integer truncates through int64 (saturating, NaN
    gives 0), so no conversion is undefined behaviour; everything else is a C cast."""
    if src.ct == dst.ct and src.is_bool == dst.is_bool:
        return v
    if src.is_complex:  # complex -> complex keeps both parts; to a real type, the real part (numpy's cast)
        if dst.is_complex:
            return f"convert_{dst.ct}({v})"
        if dst.is_bool:
            return f"((uchar)(({v}).x != 0 || ({v}).y != 0))"
        return cast(f"(({v}).x)", TYPES["float64" if src.ct == "double2" else "float32"], dst)
    if dst.is_complex:  # a real value, imaginary part 0
        r = dst.ct[:-1]
        return f"(({dst.ct})(({r})({v}), ({r})0))"
    if dst.is_bool:
        return f"((uchar)(({v}) != 0))"
    if src.is_float and not dst.is_float:  # NaN -> 0 spelled out: some drivers' _sat ignore it
        return f"(isnan({v}) ? ({dst.ct})0 : ({dst.ct})convert_long_sat_rtz({v}))"
    return f"(({dst.ct})({v}))"


HELPERS = r"""
inline float bf2f(ushort b) { return as_float(((uint)b) << 16); }
inline ushort f2bf(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);  /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);                                            /* nearest even */
  return (ushort)(u >> 16);
}
"""


# Vector loads and stores at element alignment. On CPU drivers (built with -DEMBER_CPU) they
# dereference a vector type whose alignment is lowered to the element's: one unaligned vector
# move, where PoCL splits vloadN/vstoreN into 64-bit pieces (1.5x slower on streaming kernels).
# Elsewhere they are the standard vloadN/vstoreN.
_VEC_SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float")
_SIZES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "long": 8, "ulong": 8, "float": 4,
          "double": 8}


def _vector_helpers(fp64: bool) -> str:
    scal = _VEC_SCALARS + (("double",) if fp64 else ())
    defs = [f"typedef {t}{w} __attribute__((aligned({_SIZES[t]}))) {t}{w}_u;" for t in scal for w in (2, 4, 8, 16)]
    return ("#ifdef EMBER_CPU\n" + "\n".join(defs) + "\n"
            "#define VLOAD(vt, w, p) (*(const __global vt##_u*)(p))\n"
            "#define VSTORE(vt, w, v, p) (*(__global vt##_u*)(p) = (v))\n"
            "#else\n"
            "#define VLOAD(vt, w, p) vload##w(0, p)\n"
            "#define VSTORE(vt, w, v, p) vstore##w(v, 0, p)\n"
            "#endif\n")


def vload(vt: str, w: int, p: str) -> str:
    """C expression: the ``vt`` (e.g. ``float16``) at pointer ``p`` (element-aligned)."""
    return f"VLOAD({vt}, {w}, {p})"


def vstore(vt: str, w: int, v: str, p: str) -> str:
    """C statement storing vector ``v`` of type ``vt`` at pointer ``p`` (element-aligned)."""
    return f"VSTORE({vt}, {w}, {v}, {p})"


def preamble(*types: CT, fp64: bool = False, atomics64: bool = False) -> str:
    """Pragmas and helpers a program over ``types`` needs."""
    out = []
    fp64 = fp64 or any(t.dtype is D.float64 or t.dtype is D.complex128 for t in types)
    if fp64:
        out.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if atomics64:
        out.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
    out.append(HELPERS)
    out.append(_vector_helpers(fp64))
    if any(t.is_complex for t in types):
        out.append(cplx.library(False))
        if fp64:
            out.append(cplx.library(True))
    return "\n".join(out) + "\n"


def _limit(t: CT, lowest: bool) -> str:
    if t.is_float:
        return "(-INFINITY)" if lowest else "INFINITY"
    if t.is_bool:
        return "0" if lowest else "1"
    info = np.iinfo(t.dtype.np)
    v = info.min if lowest else info.max
    if v in (-(1 << 63), (1 << 63) - 1):
        return "LONG_MIN" if lowest else "LONG_MAX"
    return f"(({t.ct})({v}L))"


def min_value(t: CT) -> str:
    """The smallest value of the compute type (-inf for floats): the identity of max."""
    return _limit(t, True)


def max_value(t: CT) -> str:
    """The largest value of the compute type (inf for floats): the identity of min."""
    return _limit(t, False)
