"""Complex numbers in OpenCL C: complex64 is computed as ``float2`` and complex128 as ``double2``
(``.x`` the real part, ``.y`` the imaginary part), stored as pairs of the real type.

OpenCL C has no complex type, so this module writes the arithmetic and the elementary functions
as inline C functions, ``cx_<name>_f`` (float2) and ``cx_<name>_d`` (double2), generated from
one template (:func:`library`; :func:`~ember_opencl.kernels.types.preamble` adds it to every
program that touches a complex type), and gives the elementwise ops' C expressions over them
(:func:`unary_spec`, :func:`binary_spec`). The formulas are the textbook ones, written for
accuracy where it is cheap (Smith's division, a stable square root, Kahan's form of tanh,
log1p/expm1 built on the real ones); the branch cuts are the principal ones numpy and PyTorch
use. Integer powers ``z ** n`` (|n| <= 64) are repeated multiplications, as numpy's.
"""
from __future__ import annotations

# R: the real type, C: the complex (vector) type, S: the name suffix, BIG: |x| past which
# tanh(x + iy) is +-1 to the precision of R.
_TEMPLATE = r"""
inline C cx_mul_S(C a, C b) { return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
inline C cx_div_S(C a, C b) {
  R ax = fabs(b.x), ay = fabs(b.y);
  if (ax >= ay) {
    if (ax == 0) return (C)(a.x / ax, a.y / ax);
    R r = b.y / b.x, d = b.x + b.y * r;
    return (C)((a.x + a.y * r) / d, (a.y - a.x * r) / d);
  }
  R r = b.x / b.y, d = b.y + b.x * r;
  return (C)((a.x * r + a.y) / d, (a.y * r - a.x) / d);
}
inline R cx_abs_S(C a) { return hypot(a.x, a.y); }
inline C cx_recip_S(C a) { return cx_div_S((C)(1, 0), a); }
inline C cx_exp_S(C a) {
  R e = exp(a.x);
  if (a.y == 0) return (C)(e, a.y);
  return (C)(e * cos(a.y), e * sin(a.y));
}
inline C cx_log_S(C a) { return (C)(log(hypot(a.x, a.y)), atan2(a.y, a.x)); }
inline C cx_sqrt_S(C a) {
  R x = a.x, y = a.y;
  if (x == 0 && y == 0) return (C)(0, y);
  if (isinf(y)) return (C)(INFINITY, y);
  R t = sqrt((fabs(x) + hypot(x, y)) * (R)0.5);
  if (x >= 0) return (C)(t, y / (2 * t));
  return (C)(fabs(y) / (2 * t), copysign(t, y));
}
inline C cx_expm1_S(C a) {
  R s = sin(a.y * (R)0.5);
  return (C)(expm1(a.x) * cos(a.y) - 2 * s * s, exp(a.x) * sin(a.y));
}
inline C cx_log1p_S(C a) {
  R x = a.x, y = a.y;
  if (fabs(x) + fabs(y) > (R)0.5) return cx_log_S((C)(1 + x, y));
  return (C)((R)0.5 * log1p(x * (2 + x) + y * y), atan2(y, 1 + x));
}
inline C cx_sin_S(C a) { return (C)(sin(a.x) * cosh(a.y), cos(a.x) * sinh(a.y)); }
inline C cx_cos_S(C a) { return (C)(cos(a.x) * cosh(a.y), -(sin(a.x) * sinh(a.y))); }
inline C cx_sinh_S(C a) { return (C)(sinh(a.x) * cos(a.y), cosh(a.x) * sin(a.y)); }
inline C cx_cosh_S(C a) { return (C)(cosh(a.x) * cos(a.y), sinh(a.x) * sin(a.y)); }
inline C cx_tanh_S(C a) {
  R x = a.x, y = a.y;
  if (fabs(x) > (R)BIG) return (C)(copysign((R)1, x), 4 * sin(y) * cos(y) * exp(-2 * fabs(x)));
  R t = tan(y), b = 1 + t * t, s = sinh(x), r = sqrt(1 + s * s), d = 1 + b * s * s;
  return (C)(b * r * s / d, t / d);
}
inline C cx_mul_i_S(C a) { return (C)(-a.y, a.x); }      /* i z */
inline C cx_mul_negi_S(C a) { return (C)(a.y, -a.x); }   /* -i z */
inline C cx_tan_S(C a) { return cx_mul_negi_S(cx_tanh_S(cx_mul_i_S(a))); }
inline C cx_asinh_S(C a) {
  int flip = signbit(a.x);
  C w = flip ? -a : a;
  C r = cx_log_S(w + cx_sqrt_S(cx_mul_S(w, w) + (C)(1, 0)));
  return flip ? -r : r;
}
inline C cx_asin_S(C a) { return cx_mul_negi_S(cx_asinh_S(cx_mul_i_S(a))); }
inline C cx_acos_S(C a) { C s = cx_asin_S(a); return (C)((R)1.5707963267948966 - s.x, -s.y); }
inline C cx_acosh_S(C a) {
  return cx_log_S(a + cx_mul_S(cx_sqrt_S(a + (C)(1, 0)), cx_sqrt_S(a - (C)(1, 0))));
}
inline C cx_atanh_S(C a) { return (cx_log1p_S(a) - cx_log1p_S(-a)) * (R)0.5; }
inline C cx_atan_S(C a) { return cx_mul_negi_S(cx_atanh_S(cx_mul_i_S(a))); }
inline C cx_pow_S(C a, C b) {
  if (b.y == 0) {
    R n = b.x;
    if (n == 0) return (C)(1, 0);
    if (n == rint(n) && fabs(n) <= 64) {
      long e = (long)fabs(n); C r = (C)(1, 0), p = a;
      while (e) { if (e & 1) r = cx_mul_S(r, p); e >>= 1; if (e) p = cx_mul_S(p, p); }
      return n < 0 ? cx_recip_S(r) : r;
    }
  }
  if (a.x == 0 && a.y == 0) {
    if (b.x == 0 && b.y == 0) return (C)(1, 0);
    return b.x > 0 && b.y == 0 ? (C)(0, 0) : (C)(NAN, NAN);
  }
  return cx_exp_S(cx_mul_S(b, cx_log_S(a)));
}
inline C cx_sigmoid_S(C a) { return cx_recip_S((C)(1, 0) + cx_exp_S(-a)); }
inline int cx_nz_S(C a) { return a.x != 0 || a.y != 0; }
"""


def library(double: bool) -> str:
    """The helper functions for complex64 (``_f``), or for complex128 (``_d``, which needs the
    ``cl_khr_fp64`` pragma before it)."""
    if double:
        return _TEMPLATE.replace("BIG", "22").replace("_S", "_d").replace("C", "double2").replace("R", "double")
    return _TEMPLATE.replace("BIG", "9").replace("_S", "_f").replace("C", "float2").replace("R", "float")


def suffix(t) -> str:
    """The helper functions' suffix for complex type ``t``."""
    return "d" if t.ct == "double2" else "f"


# unary ops: the C expression over ``a`` ({s}: the suffix); every result keeps the complex type
# except abs's, a real one
_UNARY = {
    "neg": "(-a)",
    "exp": "cx_exp_{s}(a)",
    "log": "cx_log_{s}(a)",
    "sin": "cx_sin_{s}(a)",
    "cos": "cx_cos_{s}(a)",
    "tanh": "cx_tanh_{s}(a)",
    "sqrt": "cx_sqrt_{s}(a)",
    "exp2": "cx_exp_{s}(a * ({r})0.6931471805599453)",
    "expm1": "cx_expm1_{s}(a)",
    "log2": "(cx_log_{s}(a) * ({r})1.4426950408889634)",
    "log10": "(cx_log_{s}(a) * ({r})0.4342944819032518)",
    "log1p": "cx_log1p_{s}(a)",
    "tan": "cx_tan_{s}(a)",
    "asin": "cx_asin_{s}(a)",
    "acos": "cx_acos_{s}(a)",
    "atan": "cx_atan_{s}(a)",
    "sinh": "cx_sinh_{s}(a)",
    "cosh": "cx_cosh_{s}(a)",
    "asinh": "cx_asinh_{s}(a)",
    "acosh": "cx_acosh_{s}(a)",
    "atanh": "cx_atanh_{s}(a)",
    "rsqrt": "cx_recip_{s}(cx_sqrt_{s}(a))",
    "sigmoid": "cx_sigmoid_{s}(a)",
    "square": "cx_mul_{s}(a, a)",
    "reciprocal": "cx_recip_{s}(a)",
    "conj_physical": "(({c})(a.x, -a.y))",
}

_BINARY = {
    "add": "(a + b)",
    "sub": "(a - b)",
    "mul": "cx_mul_{s}(a, b)",
    "div": "cx_div_{s}(a, b)",
    "pow": "cx_pow_{s}(a, b)",
}

# ops giving bool
_PREDICATES = {
    "logical_not": "(!cx_nz_{s}(a))",
    "eq": "(a.x == b.x && a.y == b.y)",
    "ne": "(a.x != b.x || a.y != b.y)",
    "logical_and": "(cx_nz_{s}(a) && cx_nz_{s}(b))",
    "logical_or": "(cx_nz_{s}(a) || cx_nz_{s}(b))",
    "logical_xor": "(cx_nz_{s}(a) != cx_nz_{s}(b))",
}

UNARY_NAMES = frozenset(_UNARY) | {"abs", "logical_not"}
BINARY_NAMES = frozenset(_BINARY) | {"eq", "ne", "logical_and", "logical_or", "logical_xor"}


def _fmt(e: str, t) -> str:
    return e.format(s=suffix(t), c=t.ct, r=t.ct[:-1])


def spec(name: str, t, types: dict):
    """``(expression, result type, needs the error flag)`` of elementwise op ``name`` on complex
    type ``t`` (``types``: the table of CTs by dtype name), or None where the op has no complex
    form here (the core refuses those ops for complex tensors before any kernel runs)."""
    if name == "abs":
        return (f"cx_abs_{suffix(t)}(a)", types["float64" if t.ct == "double2" else "float32"], False)
    if name in _PREDICATES:
        return (_fmt(_PREDICATES[name], t), types["bool"], False)
    e = _UNARY.get(name) or _BINARY.get(name)
    return None if e is None else (_fmt(e, t), t, False)


__all__ = ["library", "suffix", "spec", "UNARY_NAMES", "BINARY_NAMES"]
