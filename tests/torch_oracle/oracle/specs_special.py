"""Generators of calls for the special functions (lgamma, digamma, polygamma, mvlgamma, i0 and
the ops of ``torch.special``): every dtype, the edge values (poles, 0, -0, infinities, NaN) and,
for half of the draws, wide ranges of arguments."""
from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .calls import Call
from .specs_elementwise import broadcast_pair, operand
from .tensors import ALL, FLOATS, INTS, tensors

__all__ = ["SPECIAL"]

SPECIAL = {}

# op name -> the function called in both libraries, and the range of the wide draws
UNARY = {
    "lgamma": ("lgamma", 200.0), "digamma": ("digamma", 200.0), "i0": ("i0", 60.0),
    "special_i0e": ("special.i0e", 800.0), "special_i1": ("special.i1", 60.0), "special_i1e": ("special.i1e", 800.0),
    "special_ndtr": ("special.ndtr", 40.0), "special_log_ndtr": ("special.log_ndtr", 1e3),
    "special_ndtri": ("special.ndtri", 1.0), "special_erfcx": ("special.erfcx", 1e4),
    "special_entr": ("special.entr", 1e3), "special_spherical_bessel_j0": ("special.spherical_bessel_j0", 100.0),
    "special_modified_bessel_i0": ("special.modified_bessel_i0", 60.0),
    "special_modified_bessel_i1": ("special.modified_bessel_i1", 60.0),
    "special_bessel_j0": ("special.bessel_j0", 60.0), "special_bessel_j1": ("special.bessel_j1", 60.0),
    "special_bessel_y0": ("special.bessel_y0", 60.0), "special_bessel_y1": ("special.bessel_y1", 60.0),
    "special_modified_bessel_k0": ("special.modified_bessel_k0", 60.0),
    "special_modified_bessel_k1": ("special.modified_bessel_k1", 60.0),
    "special_scaled_modified_bessel_k0": ("special.scaled_modified_bessel_k0", 800.0),
    "special_scaled_modified_bessel_k1": ("special.scaled_modified_bessel_k1", 800.0),
    "special_airy_ai": ("special.airy_ai", 30.0),
}
ALIASES = {"lgamma": ("special.gammaln",), "digamma": ("special.psi", "special.digamma"), "i0": ("special.i0",)}
POLYS = ("chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v chebyshev_polynomial_w "
         "shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v "
         "shifted_chebyshev_polynomial_w hermite_polynomial_h hermite_polynomial_he laguerre_polynomial_l "
         "legendre_polynomial_p").split()


def _input(draw, wide, name=""):
    if draw(st.booleans()):
        if name == "special_airy_ai":
            # PyTorch's and ember's float32 Ai both lose the phase 2/3 |x|^(3/2) for large negative x
            return draw(tensors(ALL, low=-30, high=30))
        if name.startswith("special_bessel_"):
            # integers up to 1000 only: for large x, PyTorch's float32 J and Y lose the phase of
            # x - pi/4 (ember reduces the argument exactly: docs/special.md)
            return draw(tensors(ALL, low=-1000, high=1000))
        return draw(tensors(ALL))
    lo = 0.0 if wide == 1.0 else -wide
    return draw(tensors(FLOATS, low=lo, high=wide))


def _unary(name, fn, wide):
    @st.composite
    def gen(draw):
        x = _input(draw, wide, name)
        path = draw(st.sampled_from((fn,) + ALIASES.get(name, ())))
        if name in ("lgamma", "digamma", "i0") and draw(st.integers(0, 3)) == 0:
            path = f"Tensor.{name}"
        return Call(name, path, (x,))
    return gen()


@st.composite
def _polygamma(draw):
    n = draw(st.integers(0, 4))
    x = _input(draw, 50.0)
    if draw(st.integers(0, 3)) == 0:
        return Call("polygamma", "Tensor.polygamma", (x, n))
    return Call("polygamma", draw(st.sampled_from(("polygamma", "special.polygamma"))), (n, x))


@st.composite
def _mvlgamma(draw):
    p = draw(st.integers(1, 4))
    if draw(st.booleans()):
        x = draw(tensors(FLOATS, low=(p - 1) / 2 + 0.01, high=30.0))
    else:
        x = draw(tensors(FLOATS + INTS))
    if draw(st.booleans()):
        return Call("mvlgamma", "mvlgamma", (x,), {"p": p})
    return Call("mvlgamma", "special.multigammaln", (x, p))


def _binary(name, fn, **kw):
    @st.composite
    def gen(draw):
        a, b = draw(broadcast_pair(2, FLOATS + INTS, **kw))
        if draw(st.booleans()):
            a = draw(operand(a))
        else:
            b = draw(operand(b))
        return Call(name, fn, (a, b))
    return gen()


def _poly(name):
    @st.composite
    def gen(draw):
        # no NaN: PyTorch's recurrence stops at a NaN and returns an unset value (ember: NaN)
        x = draw(tensors(FLOATS + INTS, low=-2.0, high=2.0, special=False))
        if draw(st.booleans()):
            n = draw(st.integers(-1, 12))
        else:
            n = draw(tensors(("int64", "float32", "float64"), low=-1, high=12, special=False, max_dims=1))
        return Call("special_" + name, "special." + name, (x, n))
    return gen()


def _igamma(name, special_name):
    @st.composite
    def gen(draw):
        shp = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=3))
        sa, sx = shp.input_shapes
        kind = draw(st.integers(0, 3))
        if kind == 0:  # edge values, integer and bool tensors (refused), every float dtype
            a, x = draw(tensors(ALL, shape=sa)), draw(tensors(ALL, shape=sx))
        elif kind == 1:  # a 0-d float32 shape, a float64 x: a float64 gradient in x alone (PyTorch raises for a's)
            a = draw(tensors(("float32",), shape=(), low=0.0, high=60.0, special=False))
            x = draw(tensors(("float64",), shape=sx, low=0.0, high=80.0, special=False))
        else:  # wide ranges on both sides of the transition x = a
            top = draw(st.sampled_from((2.0, 30.0, 1e3, 1e5)))
            a = draw(tensors(FLOATS, shape=sa, low=0.0, high=top))
            x = draw(tensors(FLOATS, shape=sx, low=0.0, high=top * 1.5))
        if draw(st.integers(0, 3)) == 0:
            return Call(name, "Tensor." + name, (a, x))
        return Call(name, draw(st.sampled_from((name, special_name))), (a, x))
    return gen()


for _n, (_fn, _wide) in UNARY.items():
    SPECIAL[_n] = _unary(_n, _fn, _wide)
SPECIAL["polygamma"] = _polygamma()
SPECIAL["mvlgamma"] = _mvlgamma()
SPECIAL["special_zeta"] = _binary("special_zeta", "special.zeta")
SPECIAL["special_xlog1py"] = _binary("special_xlog1py", "special.xlog1py")
SPECIAL["igamma"] = _igamma("igamma", "special.gammainc")
SPECIAL["igammac"] = _igamma("igammac", "special.gammaincc")
for _n in POLYS:
    SPECIAL["special_" + _n] = _poly(_n)
