"""Generators of calls for the complex-number ops: the parts as views (real, imag, view_as_real,
view_as_complex), conjugation, angle, sgn, polar and complex; real and complex inputs, every layout."""
from __future__ import annotations

from hypothesis import strategies as st

from .calls import Call
from .tensors import ALL, COMPLEX, FLOATS, T, tensors

__all__ = ["COMPLEX_OPS"]

COMPLEX_OPS = {}


def _one(name, dtypes):
    @st.composite
    def gen(draw):
        return Call(name, name, (draw(tensors(dtypes)),))
    return gen()


for _n in ("real", "conj", "conj_physical", "resolve_conj", "resolve_neg", "angle", "sgn"):
    COMPLEX_OPS[_n] = _one(_n, ALL + COMPLEX)
for _n in ("imag", "view_as_real"):
    COMPLEX_OPS[_n] = _one(_n, COMPLEX + FLOATS)


@st.composite
def _view_as_complex(draw):
    x = draw(tensors(FLOATS + ("int64",), min_dims=1))
    if draw(st.integers(0, 3)):  # mostly a last dim of size 2 (contiguous or not)
        shape = x.shape[:-1] + (2,)
        x = draw(tensors((x.dtype,), shape=shape))
    return Call("view_as_complex", "view_as_complex", (x,))


@st.composite
def _pair(draw, name):
    dt = draw(st.sampled_from(("float32", "float64")))
    a = draw(tensors((dt,)))
    dt2 = dt if draw(st.integers(0, 5)) else draw(st.sampled_from(FLOATS + ("int64",)))
    b = draw(tensors((dt2,), shape=a.shape if draw(st.integers(0, 3)) else ()))
    if name == "polar":
        a = T(abs(a.values), a.dtype, a.layout, a.expand_dims)
    return Call(name, name, (a, b))


COMPLEX_OPS["view_as_complex"] = _view_as_complex()
COMPLEX_OPS["polar"] = _pair("polar")
COMPLEX_OPS["complex"] = _pair("complex")
