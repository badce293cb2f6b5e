"""The elementwise ops as C expressions over compute values ``a``, ``b``, ``c``.

Each entry maps an operand type (:class:`~ember_opencl.kernels.types.CT`) to
``(expression, result type, needs the error flag)``. Integer division and remainder by zero set
the device's error flag (raised on the host as RuntimeError); ``INT_MIN / -1`` is computed as
the wrapped value instead of trapping.
"""
from __future__ import annotations

from .types import TYPES

BOOL = TYPES["bool"]

# helper functions some expressions call (added to the program that uses them)
HELPERS = {
    "ipow": r"""
inline long ipow_(long b, long e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
  ulong r = 1, x = (ulong)b;
  while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }
  return (long)r;
}
""",
    "idiv": r"""
inline long idiv_(long a, long b, __global long* err) {
  if (b == 0) { err[0] = 1; err[1] = 0; return 0; }
  if (b == -1) return (long)(0ul - (ulong)a);
  return a / b;
}
inline long imod_(long a, long b, __global long* err) {
  if (b == 0) { err[0] = 1; err[1] = 0; return 0; }
  if (b == -1) return 0;
  return a % b;
}
""",
}


def _float_only(f):
    def g(t):
        return (f(t), t, False) if t.is_float else None
    return g


def _same(e):
    return lambda t: (e, t, False)


def _split(fexpr: str, iexpr: str, int_err: bool = False):
    """Float operands compute ``fexpr``; integer and bool ones ``iexpr`` (``{ct}``: their C type),
    which needs the error flag when ``int_err``."""
    return lambda t: (fexpr, t, False) if t.is_float else (iexpr.format(ct=t.ct), t, int_err)


def _cmp(e):
    return lambda t: (e, BOOL, False)


def _abs(t):
    if t.is_float:
        return ("fabs(a)", t, False)
    if t.signed:
        return (f"(({t.ct})abs(a))", t, False)
    return ("a", t, False)


def _sign(t):
    if t.is_float:
        return ("(isnan(a) ? a : (" + t.ct + ")((a > 0) - (a < 0)))", t, False)
    if t.is_bool:
        return ("a", t, False)
    return (f"(({t.ct})((a > 0) - (a < 0)))", t, False)


UNARY = {
    "neg": _same("-a"),
    "abs": _abs,
    "sign": _sign,
    "exp": _float_only(lambda t: "exp(a)"),
    "log": _float_only(lambda t: "log(a)"),
    "sin": _float_only(lambda t: "sin(a)"),
    "cos": _float_only(lambda t: "cos(a)"),
    "tanh": _float_only(lambda t: "tanh_s(a)" if t.ct == "float" else "tanh(a)"),
    "sqrt": _float_only(lambda t: "sqrt(a)"),
    "erf": _float_only(lambda t: "erf(a)"),
    "floor": _split("floor(a)", "a"),
    "ceil": _split("ceil(a)", "a"),
    "round": _split("rint(a)", "a"),
    "trunc": _split("trunc(a)", "a"),
    "logical_not": _cmp("(a == 0)"),
    # fast paths for composites
    "exp2": _float_only(lambda t: "exp2(a)"),
    "expm1": _float_only(lambda t: "expm1(a)"),
    "log2": _float_only(lambda t: "log2(a)"),
    "log10": _float_only(lambda t: "log10(a)"),
    "log1p": _float_only(lambda t: "log1p(a)"),
    "tan": _float_only(lambda t: "tan(a)"),
    "asin": _float_only(lambda t: "asin(a)"),
    "acos": _float_only(lambda t: "acos(a)"),
    "atan": _float_only(lambda t: "atan(a)"),
    "sinh": _float_only(lambda t: "sinh(a)"),
    "cosh": _float_only(lambda t: "cosh(a)"),
    "asinh": _float_only(lambda t: "asinh(a)"),
    "acosh": _float_only(lambda t: "acosh(a)"),
    "atanh": _float_only(lambda t: "atanh(a)"),
    "rsqrt": _float_only(lambda t: "rsqrt(a)"),
    "sigmoid": _float_only(lambda t: "(1 / (1 + exp(-a)))"),
    "relu": _split("(a > 0 || isnan(a) ? a : 0)", "(a > 0 ? a : ({ct})0)"),
    "square": _same("a * a"),
    "reciprocal": _float_only(lambda t: "(1 / a)"),
    "erfc": _float_only(lambda t: "erfc(a)"),
}

BINARY = {
    "add": _same("a + b"),
    "sub": _same("a - b"),
    "mul": _same("a * b"),
    "div": _split("a / b", "(({ct})idiv_((long)a, (long)b, err))", True),
    "pow": _split("pow(a, b)", "(({ct})ipow_((long)a, (long)b))"),
    "maximum": _split("((a > b || isnan(a)) ? a : b)", "(a > b ? a : b)"),
    "minimum": _split("((a < b || isnan(a)) ? a : b)", "(a < b ? a : b)"),
    "fmod": _split("fmod(a, b)", "(({ct})imod_((long)a, (long)b, err))", True),
    "atan2": _float_only(lambda t: "atan2(a, b)"),
    "eq": _cmp("(a == b)"),
    "ne": _cmp("(a != b)"),
    "lt": _cmp("(a < b)"),
    "le": _cmp("(a <= b)"),
    "gt": _cmp("(a > b)"),
    "ge": _cmp("(a >= b)"),
    "logical_and": _cmp("((a != 0) && (b != 0))"),
    "logical_or": _cmp("((a != 0) || (b != 0))"),
    "logical_xor": _cmp("((a != 0) != (b != 0))"),
    "bitwise_and": _same("a & b"),
    "bitwise_or": _same("a | b"),
    "bitwise_xor": _same("a ^ b"),
    # fast paths for composites
    "hypot": _float_only(lambda t: "hypot(a, b)"),
    "fmax": _split("fmax(a, b)", "(a > b ? a : b)"),
    "fmin": _split("fmin(a, b)", "(a < b ? a : b)"),
}


# the ops whose float expression is also valid on vector types (no ?:, no 0/1 comparisons),
# or their vector form ({vt} is the vector type): they get the vector layout
VECTOR = {name: None for name in (
    "neg", "exp", "log", "sin", "cos", "tanh", "sqrt", "erf", "floor", "ceil", "round", "trunc", "exp2",
    "expm1", "log2", "log10", "log1p", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "rsqrt", "sigmoid", "square", "reciprocal", "erfc", "add", "sub", "mul", "div", "pow", "atan2", "hypot",
    "fmax", "fmin")}
VECTOR.update({
    "abs": "fabs(a)",
    "relu": "select(({vt})0, a, (a > 0) | isnan(a))",
    "maximum": "select(b, a, (a > b) | isnan(a))",
    "minimum": "select(b, a, (a < b) | isnan(a))",
})


for _c in ("eq", "ne", "lt", "le", "gt", "ge"):  # vector compares give -1/0 lanes, stored as 1/0
    VECTOR[_c] = None


# tanh in float: PoCL's is 2x slower on small arguments and gives tanh(inf) = 0.99999994. This is
# a rational approximation x P(x^2) / Q(x^2) on [-9.2, 9.2] (beyond, tanh is +-1 in float),
# fitted for this backend by iteratively reweighted least squares: within 5 ulp of the correctly
# rounded result (the builtin: 1 ulp), no exp, the same cost for every argument.
_TANH_BODY = """
  T_ xc = clamp(x, -9.2f, 9.2f); T_ s = xc * xc;
  T_ p = 1.3051537434138893e-08f; p = p * s + 2.0384771591726737e-05f; p = p * s + 0.0034817066592691711f;
  p = p * s + 0.13369251593957124f; p = p * s + 0.9999999770743474f;
  T_ q = 7.650871633180234e-07f; q = q * s + 0.00032631111215930878f; q = q * s + 0.025823906200814171f;
  q = q * s + 0.46702561266841713f; q = q * s + 1.0f;
  T_ r = clamp(xc * p / q, -1.0f, 1.0f);
  return select(r, x, isnan(x));
"""
HELPERS["tanhv"] = ("inline float16 tanh_v(float16 x) {" + _TANH_BODY.replace("T_", "float16") + "}\n")
HELPERS["tanhs"] = ("inline float tanh_s(float x) {" + _TANH_BODY.replace("T_", "float") + "}\n")


def vector_form(name: str, t, expr: str):
    """The vector form of op ``name``'s expression on float type ``t``, or None."""
    if not t.is_float or name not in VECTOR:
        return None
    if name == "tanh" and t.name == "float32":
        return "tanh_v(a)"
    v = VECTOR[name]
    return expr if v is None else v


def helpers_for(expr: str) -> str:
    out = ""
    if "ipow_" in expr:
        out += HELPERS["ipow"]
    if "idiv_" in expr or "imod_" in expr:
        out += HELPERS["idiv"]
    if "tanh_v(" in expr:
        out += HELPERS["tanhv"]
    if "tanh_s(" in expr:
        out += HELPERS["tanhs"]
    return out
