"""Generators of calls for the miscellaneous numerics: quantiles, differences and integrals,
covariance, histograms, set and product ops, distances, and the float-representation and integer
ops (frexp, ldexp, nextafter, gcd, lcm)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from .calls import Call
from .tensors import ALL, FLOATS, INTS, NUMS, T, tensors

__all__ = ["MATHMISC"]

MATHMISC = {}
_F = ("float32", "float64")
_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _dim(draw, x, none=True):
    nd = len(x.shape)
    opts = [st.integers(-max(nd, 1), max(nd, 1) - 1)]
    if none:
        opts.append(st.none())
    return draw(st.one_of(*opts))


@st.composite
def _quantile(draw, name):
    x = draw(tensors(draw(st.sampled_from((_F, FLOATS + ("int64",)))) if draw(st.integers(0, 9)) == 0 else _F))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        q = draw(st.sampled_from((0.0, 0.25, 0.5, 0.7, 1.0, 1.5)))
    else:
        n = draw(st.integers(0, 4))
        vals = draw(st.lists(st.sampled_from((0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)), min_size=n, max_size=n))
        q = T(np.array(vals), draw(st.sampled_from(("float32", "float64"))) if kind == 3 else x.dtype,
              shape=() if n == 1 and draw(st.booleans()) else None)
    kwargs = {}
    d = _dim(draw, x)
    if d is not None:
        kwargs["dim"] = d
    if draw(st.booleans()):
        kwargs["keepdim"] = draw(st.booleans())
    if draw(st.booleans()):
        kwargs["interpolation"] = draw(st.sampled_from(_MODES))
    return Call(name, name, (x, q), kwargs)


MATHMISC["quantile"] = _quantile("quantile")
MATHMISC["nanquantile"] = _quantile("nanquantile")


@st.composite
def _diff(draw):
    x = draw(tensors(ALL, min_dims=draw(st.sampled_from((0, 1, 1, 1)))))
    kwargs = {}
    if draw(st.booleans()):
        kwargs["n"] = draw(st.integers(-1, 4))
    d = _dim(draw, x, none=False) if x.shape else -1
    if draw(st.booleans()):
        kwargs["dim"] = d
    for which in ("prepend", "append"):
        if x.shape and draw(st.integers(0, 2)) == 0:
            shape = tuple(draw(st.integers(0, 2)) if i == d % len(x.shape) else s for i, s in enumerate(x.shape))
            kwargs[which] = draw(tensors((x.dtype, x.dtype, "float64"), shape=shape))
    return Call("diff", "diff", (x,), kwargs)


MATHMISC["diff"] = _diff()


@st.composite
def _trapezoid(draw, name):
    y = draw(tensors(NUMS + ("bool",), min_dims=draw(st.sampled_from((0, 1, 1, 1)))))
    args, kwargs = [y], {}
    d = _dim(draw, y, none=False) if y.shape else -1
    if draw(st.booleans()):
        kwargs["dim"] = d
    kind = draw(st.integers(0, 2))
    if kind == 1 and y.shape:
        n = y.shape[d % len(y.shape)]
        shape = draw(st.sampled_from(((n,), tuple(y.shape), (n + 1,))))
        args.append(draw(tensors(("float64", "float32", "int64"), shape=shape)))
    elif kind == 2:
        kwargs["dx"] = draw(st.sampled_from((0.5, 2, -1.5)))
    if name == "trapz" and "dx" in kwargs and len(args) > 1:
        del kwargs["dx"]
    return Call(name, name, tuple(args), kwargs)


for _n in ("trapezoid", "trapz", "cumulative_trapezoid"):
    MATHMISC[_n] = _trapezoid(_n)


@st.composite
def _cov(draw):
    x = draw(tensors(NUMS + ("bool",), max_dims=3, min_side=0, low=-5, high=5))  # no int64 overflow games
    n = x.shape[-1] if len(x.shape) >= 1 else 1
    kwargs = {}
    if draw(st.booleans()):
        kwargs["correction"] = draw(st.integers(0, 3))
    if draw(st.integers(0, 2)) == 0:
        kwargs["fweights"] = draw(tensors(("int64", "int32", "float32"), shape=(n,), low=0, high=3, special=False))
    if draw(st.integers(0, 2)) == 0:
        kwargs["aweights"] = draw(tensors((x.dtype if x.dtype in FLOATS else "float64", "float64"), shape=(n,),
                                          low=0.0, high=2.0, special=False))
    return Call("cov", "cov", (x,), kwargs)


MATHMISC["cov"] = _cov()
MATHMISC["corrcoef"] = st.builds(lambda x: Call("corrcoef", "corrcoef", (x,)), tensors(NUMS, max_dims=3))


@st.composite
def _histogram(draw):
    x = draw(tensors(_F + ("int64", "float16"), max_dims=2))
    kwargs = {}
    kind = draw(st.integers(0, 2))
    if kind == 0:
        bins = draw(st.integers(0, 5))
        if draw(st.booleans()):
            lo = draw(st.sampled_from((-3.0, 0.0, 1.0)))
            kwargs["range"] = (lo, lo + draw(st.sampled_from((0.0, 2.0, 5.0, -1.0))))
    else:
        n = draw(st.integers(1, 5))
        edges = sorted(draw(st.lists(st.floats(-4, 4, allow_nan=False), min_size=n, max_size=n)))
        bins = T(np.array(edges), x.dtype if x.dtype in _F else "float32")
    if draw(st.booleans()):
        kwargs["weight"] = draw(tensors((x.dtype,), shape=x.shape, low=0, high=3, special=False))
    if draw(st.booleans()):
        kwargs["density"] = draw(st.booleans())
    return Call("histogram", "histogram", (x, bins), kwargs, grad=False)


MATHMISC["histogram"] = _histogram()


@st.composite
def _histogramdd(draw):
    npts, dims = draw(st.integers(0, 5)), draw(st.integers(1, 3))
    x = draw(tensors(_F, shape=(npts, dims), special=draw(st.booleans())))
    kwargs = {}
    if draw(st.booleans()):
        bins = draw(st.one_of(st.integers(1, 4), st.lists(st.integers(1, 3), min_size=dims, max_size=dims)))
        if draw(st.booleans()):
            kwargs["range"] = [v for _ in range(dims) for v in (-2.0, 3.0)]
    else:
        bins = [T(np.array(sorted(draw(st.lists(st.floats(-4, 4, allow_nan=False), min_size=2, max_size=4)))),
                  x.dtype) for _ in range(dims)]
    if draw(st.booleans()):
        kwargs["weight"] = draw(tensors((x.dtype,), shape=(npts,), low=0, high=3, special=False))
    if draw(st.booleans()):
        kwargs["density"] = True
    return Call("histogramdd", "histogramdd", (x, bins), kwargs, grad=False)


MATHMISC["histogramdd"] = _histogramdd()


@st.composite
def _isin(draw):
    e = draw(tensors(NUMS, low=-3, high=3))
    t = draw(tensors(NUMS, low=-3, high=3))
    args = [e, t]
    if draw(st.integers(0, 4)) == 0:
        args[draw(st.integers(0, 1))] = draw(st.sampled_from((1, 2.0, -1, math.nan)))
    kwargs = draw(st.fixed_dictionaries({}, optional={"invert": st.booleans(), "assume_unique": st.booleans()}))
    return Call("isin", "isin", tuple(args), kwargs)


MATHMISC["isin"] = _isin()


@st.composite
def _cartesian(draw):
    dt = draw(st.sampled_from(ALL))
    k = draw(st.integers(1, 3))
    ts = [draw(tensors((dt,), min_dims=1, max_dims=1)) for _ in range(k)]
    if draw(st.integers(0, 5)) == 0:
        ts[0] = draw(tensors(ALL, max_dims=2))
    return Call("cartesian_prod", "cartesian_prod", tuple(ts))


MATHMISC["cartesian_prod"] = _cartesian()


@st.composite
def _combinations(draw):
    x = draw(tensors(ALL, min_dims=1, max_dims=draw(st.sampled_from((1, 1, 1, 2))), max_side=5))
    args = [x]
    if draw(st.booleans()):
        args.append(draw(st.integers(-1, 4)))
    kwargs = {"with_replacement": draw(st.booleans())} if draw(st.booleans()) else {}
    return Call("combinations", "combinations", tuple(args), kwargs)


MATHMISC["combinations"] = _combinations()


@st.composite
def _vander(draw):
    nd = draw(st.sampled_from((0, 1, 1, 1, 2)))
    x = draw(tensors(ALL, min_dims=nd, max_dims=max(nd, 1), low=-2, high=2))
    kwargs = {}
    if draw(st.booleans()):
        kwargs["N"] = draw(st.integers(-1, 5))
    if draw(st.booleans()):
        kwargs["increasing"] = draw(st.booleans())
    return Call("vander", "vander", (x,), kwargs)


MATHMISC["vander"] = _vander()


@st.composite
def _cdist(draw):
    m = draw(st.integers(0, 3))
    batch = draw(st.sampled_from(((), (2,), (1,), (2, 1))))
    dt = draw(st.sampled_from(_F))
    a = draw(tensors((dt,), shape=batch + (draw(st.integers(0, 4)), m), special=draw(st.integers(0, 3)) == 0))
    b2 = draw(st.sampled_from(((), (2,), (1,)))) if batch else ()
    b = draw(tensors((dt, dt, dt, "float16"), shape=b2 + (draw(st.integers(0, 4)), m if draw(st.integers(0, 9)) else
                                                          m + 1)))
    kwargs = {}
    if draw(st.booleans()):
        kwargs["p"] = draw(st.sampled_from((0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)))
    if draw(st.integers(0, 3)) == 0:
        kwargs["compute_mode"] = "donot_use_mm_for_euclid_dist"
    return Call("cdist", "cdist", (a, b), kwargs)


MATHMISC["cdist"] = _cdist()


@st.composite
def _renorm(draw):
    x = draw(tensors(FLOATS + ("int64",), min_dims=draw(st.sampled_from((1, 2, 2, 2))), max_dims=3, special=False))
    d = _dim(draw, x, none=False)
    p = draw(st.sampled_from((1, 2, 3.0, 0.5, math.inf, 0, -1)))
    maxnorm = draw(st.sampled_from((0.0, 0.5, 1.0, 5.0, -1.0)))
    return Call("renorm", "renorm", (x, p, d, maxnorm))


MATHMISC["renorm"] = _renorm()


@st.composite
def _binary(draw, name, dtypes, dtypes2=None, **kw):
    a = draw(tensors(dtypes, **kw))
    b = draw(tensors(dtypes2 or dtypes, shape=draw(st.sampled_from((a.shape, a.shape[1:], ()))), **kw))
    return Call(name, name, (a, b))


# small values: PyTorch's integer kernels trap on the most negative value divided by -1 (SIGFPE)
MATHMISC["gcd"] = _binary("gcd", INTS + ("int64", "bool", "float32"), low=-40, high=40, special=False)
MATHMISC["lcm"] = _binary("lcm", ("int64", "int32", "int16", "uint8", "float32"), low=-12, high=12, special=False)
MATHMISC["nextafter"] = _binary("nextafter", FLOATS + ("int64",), FLOATS)
MATHMISC["ldexp"] = st.builds(lambda a, b: Call("ldexp", "ldexp", (a, b)), tensors(NUMS + ("bool",)),
                              tensors(("int64", "int32", "float32", "float64", "bool"), shape=None, low=-20, high=20))
MATHMISC["frexp"] = st.builds(lambda x: Call("frexp", "frexp", (x,)), tensors(FLOATS + ("int64",)))
