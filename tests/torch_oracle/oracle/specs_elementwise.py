"""Generators of calls for the elementwise ops: unary, binary (tensor or python number on either
side, broadcasting, mixed dtypes), ternary, and the ones with scalar parameters."""
from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .calls import Call
from .tensors import ALL, COMPLEX, FLOATS, INTS, NUMS, scalars, tensors

__all__ = ["ELEMENTWISE", "broadcast_pair", "operand"]

ELEMENTWISE = {}

UNARY = ("abs acos acosh asin asinh atan atanh ceil cos cosh deg2rad erf erfc erfinv exp exp2 expm1 floor frac "
         "isfinite isinf isnan isneginf isposinf isreal log log10 log1p log2 logical_not neg positive rad2deg "
         "reciprocal relu round rsqrt sigmoid sign signbit sin sinc sinh sqrt square tan tanh trunc bitwise_not "
         "nan_to_num logit clone").split()

BINARY = ("add sub mul div rsub floor_divide remainder fmod pow float_power atan2 hypot copysign xlogy heaviside "
          "logaddexp logaddexp2 fmax fmin maximum minimum eq ne lt le gt ge logical_and logical_or logical_xor "
          "bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift").split()


# the ops drawn with complex operands too (their values, gradients and refusals are compared)
COMPLEX_UNARY = set(UNARY) - {"bitwise_not", "nan_to_num", "logit", "round"}
COMPLEX_BINARY = set(BINARY) - {"bitwise_left_shift", "bitwise_right_shift", "float_power", "logaddexp", "logaddexp2"}


@st.composite
def broadcast_pair(draw, n=2, dtypes=ALL, **kw):
    shp = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, min_side=0, max_side=3))
    return [draw(tensors(dtypes, shape=s, **kw)) for s in shp.input_shapes]


@st.composite
def operand(draw, t, dtypes=ALL):
    """``t`` itself, or (sometimes) a python number in its place."""
    if draw(st.integers(0, 3)) == 0:
        return draw(scalars())
    return t


def _unary(name):
    @st.composite
    def gen(draw):
        x = draw(tensors(ALL + COMPLEX if name in COMPLEX_UNARY else ALL))
        kwargs = {}
        if name == "round" and draw(st.booleans()):
            kwargs["decimals"] = draw(st.integers(-1, 2))
        if name == "nan_to_num":
            for k in ("nan", "posinf", "neginf"):
                if draw(st.booleans()):
                    kwargs[k] = draw(st.sampled_from((0.0, 1.5, -2.0, 1e30)))
        if name == "logit" and draw(st.booleans()):
            kwargs["eps"] = draw(st.sampled_from((1e-6, 0.1, 0.5)))
        return Call(name, name, (x,), kwargs)
    return gen()


def _binary(name):
    @st.composite
    def gen(draw):
        a, b = draw(broadcast_pair(dtypes=ALL + COMPLEX if name in COMPLEX_BINARY else ALL))
        if draw(st.booleans()):
            a = draw(operand(a))
        else:
            b = draw(operand(b))
        kwargs = {}
        if name in ("add", "sub", "rsub") and draw(st.integers(0, 2)) == 0:
            kwargs["alpha"] = draw(scalars())
        if name == "div" and draw(st.booleans()):
            kwargs["rounding_mode"] = draw(st.sampled_from(("trunc", "floor", None)))
        return Call(name, name, (a, b), kwargs)
    return gen()


for _n in UNARY:
    ELEMENTWISE[_n] = _unary(_n)
for _n in BINARY:
    ELEMENTWISE[_n] = _binary(_n)


@st.composite
def _clamp(draw, name="clamp"):
    x = draw(tensors(NUMS))
    bound = st.one_of(st.none(), scalars(("int", "float")), tensors(NUMS, shape=x.shape[-1:] if x.shape else ()))
    lo, hi = draw(bound), draw(bound)
    if name == "clamp_min":
        return Call(name, name, (x, lo))
    if name == "clamp_max":
        return Call(name, name, (x, hi))
    return Call(name, name, (x,), {"min": lo, "max": hi})


for _n in ("clamp", "clamp_min", "clamp_max"):
    ELEMENTWISE[_n] = _clamp(_n)


@st.composite
def _where(draw):
    c, a, b = draw(broadcast_pair(3))
    c = draw(tensors(("bool",), shape=c.shape))
    return Call("where", "where", (c, a, draw(operand(b))))


@st.composite
def _lerp(draw):
    a, b, w = draw(broadcast_pair(3, FLOATS))
    if draw(st.booleans()):
        w = draw(st.floats(-1, 2))
    return Call("lerp", "lerp", (a, b, w))


@st.composite
def _addc(draw, name):
    a, b, c = draw(broadcast_pair(3, NUMS))
    kwargs = {"value": draw(scalars())} if draw(st.booleans()) else {}
    return Call(name, name, (a, b, c), kwargs)


@st.composite
def _isclose(draw):
    a, b = draw(broadcast_pair(2, NUMS))
    kwargs = {}
    if draw(st.booleans()):
        kwargs = {"rtol": draw(st.sampled_from((0.0, 1e-3, 0.5))), "atol": draw(st.sampled_from((0.0, 1e-8, 1.0))),
                  "equal_nan": draw(st.booleans())}
    return Call("isclose", "isclose", (a, b), kwargs)


@st.composite
def _masked_fill(draw):
    x, m = draw(broadcast_pair(2))
    m = draw(tensors(("bool",), shape=m.shape))
    v = draw(st.one_of(scalars(), tensors(ALL, shape=())))
    return Call("masked_fill", "masked_fill", (x, m, v))


@st.composite
def _histc(draw):
    x = draw(tensors(NUMS))
    kw = {"bins": draw(st.integers(1, 5)), "min": draw(st.sampled_from((0, -1.0, 2))),
          "max": draw(st.sampled_from((0, 1.0, 3)))}
    return Call("histc", "histc", (x,), kw)


@st.composite
def _fill(draw):
    x = draw(tensors(ALL))
    return Call("fill_", "Tensor.fill_", (x, draw(st.one_of(scalars(), tensors(ALL, shape=())))), grad=False)


@st.composite
def _copy(draw):
    dst, src = draw(broadcast_pair(2))
    return Call("copy_", "Tensor.copy_", (dst, src), grad=False)


@st.composite
def _random_inplace(draw, name):
    x = draw(tensors(FLOATS + INTS))
    return Call(name, f"Tensor.{name}", (x,), grad=False)


@st.composite
def _dropout(draw):
    x = draw(tensors(FLOATS))
    return Call("dropout", "dropout", (x, draw(st.sampled_from((0.0, 0.5, 1.0))), draw(st.booleans())))


ELEMENTWISE.update({
    "where": _where(), "lerp": _lerp(), "addcmul": _addc("addcmul"), "addcdiv": _addc("addcdiv"),
    "isclose": _isclose(), "masked_fill": _masked_fill(), "histc": _histc(), "fill_": _fill(), "copy_": _copy(),
    "normal_": _random_inplace("normal_"), "uniform_": _random_inplace("uniform_"), "dropout": _dropout(),
})
