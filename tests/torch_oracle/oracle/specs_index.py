"""Generators of calls for indexing, scatter/gather, searching and counting."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .calls import Call
from .tensors import ALL, FLOATS, NUMS, T, tensors

__all__ = ["INDEX"]

INDEX = {}


@st.composite
def _idx(draw, size, shape, dtype="int64", negative=True, oob=True):
    lo = -size if negative else 0
    hi = size - 1 + (1 if oob and draw(st.integers(0, 5)) == 0 else 0)
    if size == 0 and not oob:
        return T(np.zeros(shape, dtype=np.int64), dtype)
    n = int(np.prod(shape)) if shape else 1
    vals = draw(st.lists(st.integers(lo, max(hi, lo)), min_size=n, max_size=n))
    return T(np.array(vals, dtype=np.int64).reshape(shape), draw(st.sampled_from((dtype, dtype, "int32"))))


def _dim_of(draw, x):
    nd = len(x.shape)
    return draw(st.integers(-max(nd, 1), max(nd, 1) - 1))


def _size(x, d):
    return x.shape[d] if x.shape else 1


@st.composite
def _index_select(draw):
    x = draw(tensors(ALL, min_dims=0))
    d = _dim_of(draw, x)
    return Call("index_select", "index_select", (x, d, draw(_idx(_size(x, d), (draw(st.integers(0, 4)),)))))


@st.composite
def _take(draw):
    x = draw(tensors(ALL))
    n = int(np.prod(x.shape)) if x.shape else 1
    return Call("take", "take", (x, draw(_idx(n, draw(st.sampled_from(((), (3,), (2, 2))))))))


@st.composite
def _gatherlike(draw, name):
    x = draw(tensors(ALL, min_dims=1))
    d = _dim_of(draw, x)
    ishape = tuple(draw(st.integers(0, s)) for s in x.shape)
    ishape = ishape[:d % len(x.shape)] + (draw(st.integers(0, 3)),) + ishape[d % len(x.shape) + 1:]
    idx = draw(_idx(max(_size(x, d), 1), ishape, negative=name == "take_along_dim"))
    if name == "gather":
        return Call(name, name, (x, d, idx), {"sparse_grad": False} if draw(st.booleans()) else {})
    if name == "take_along_dim":
        return Call(name, name, (x, idx), {"dim": d})
    src = draw(tensors(ALL, shape=ishape))
    kwargs = {}
    if name == "scatter":
        if draw(st.booleans()):
            src = draw(st.one_of(st.integers(-2, 2), st.floats(-2, 2)))
        if draw(st.integers(0, 2)) == 0:
            kwargs["reduce"] = draw(st.sampled_from(("add", "multiply")))
    if name == "scatter_reduce":
        kwargs = {"reduce": draw(st.sampled_from(("sum", "prod", "mean", "amax", "amin"))),
                  "include_self": draw(st.booleans())}
        return Call(name, name, (x, d, idx, src, kwargs.pop("reduce")), kwargs)
    return Call(name, name, (x, d, idx, src), kwargs)


for _n in ("gather", "take_along_dim", "scatter", "scatter_add", "scatter_reduce"):
    INDEX[_n] = _gatherlike(_n)


@st.composite
def _index_family(draw, name):
    x = draw(tensors(ALL, min_dims=1))
    d = _dim_of(draw, x)
    k = draw(st.integers(0, 3))
    idx = draw(_idx(_size(x, d), (k,), negative=True))
    src_shape = x.shape[:d % len(x.shape)] + (k,) + x.shape[d % len(x.shape) + 1:]
    if name == "index_fill":
        return Call(name, name, (x, d, idx, draw(st.one_of(st.integers(-2, 2), st.floats(-2, 2)))))
    src = draw(tensors(ALL, shape=src_shape))
    if name == "index_add" and draw(st.booleans()):
        return Call(name, name, (x, d, idx, src), {"alpha": draw(st.integers(-2, 2))})
    if name == "index_reduce":
        return Call(name, name, (x, d, idx, src, draw(st.sampled_from(("prod", "mean", "amax", "amin")))),
                    {"include_self": draw(st.booleans())})
    return Call(name, name, (x, d, idx, src))


for _n in ("index_add", "index_copy", "index_fill", "index_reduce"):
    INDEX[_n] = _index_family(_n)


@st.composite
def _masked(draw, name):
    x = draw(tensors(ALL))
    m = draw(tensors(("bool",), shape=draw(st.sampled_from((x.shape, x.shape[1:], ())))))
    if name == "masked_select":
        return Call(name, name, (x, m))
    src = draw(tensors((x.dtype,), shape=(int(np.prod(x.shape)) if x.shape else 1,) + (() if True else ())))
    return Call(name, name, (x, m, src))


INDEX["masked_select"] = _masked("masked_select")
INDEX["masked_scatter"] = _masked("masked_scatter")


@st.composite
def _put(draw):
    x = draw(tensors(ALL))
    n = int(np.prod(x.shape)) if x.shape else 1
    k = draw(st.integers(0, 3))
    idx = draw(_idx(n, (k,)))
    src = draw(tensors((x.dtype,), shape=(k,)))
    return Call("put", "put", (x, idx, src), {"accumulate": draw(st.booleans())})


@st.composite
def _index(draw):
    x = draw(tensors(ALL, min_dims=1))
    kind = draw(st.integers(0, 2))
    if kind == 0:
        key = draw(_idx(x.shape[0], (draw(st.integers(0, 3)),)))
    elif kind == 1:
        key = draw(tensors(("bool",), shape=x.shape[:1]))
    else:
        key = (slice(None), draw(_idx(_size(x, -1) if len(x.shape) > 1 else 1, (2,))))
    return Call("index", "Tensor.__getitem__", (x, key))


@st.composite
def _index_put(draw):
    x = draw(tensors(ALL, min_dims=1))
    k = draw(st.integers(0, 3))
    idx = draw(_idx(x.shape[0], (k,)))
    v = draw(tensors((x.dtype,), shape=draw(st.sampled_from(((), (k,) + x.shape[1:], x.shape[1:])))))
    return Call("index_put", "index_put", (x, (idx,), v), {"accumulate": draw(st.booleans())})


@st.composite
def _bucketize(draw, name):
    b = draw(tensors(NUMS, min_dims=1, max_dims=1, special=False, layouts=("contiguous",)))
    b = T(np.sort(b.values), b.dtype)
    x = draw(tensors(NUMS))
    kw = draw(st.fixed_dictionaries({}, optional={"right": st.booleans(), "out_int32": st.booleans()}))
    if name == "bucketize":
        return Call(name, name, (x, b), kw)
    if draw(st.booleans()):
        x = draw(st.integers(-3, 3))
    return Call(name, name, (b, x), kw)


@st.composite
def _bincount(draw):
    x = draw(tensors(("int64", "uint8", "int32"), min_dims=1, max_dims=1, low=0, high=6))
    kw = {}
    if draw(st.booleans()):
        kw["weights"] = draw(tensors(FLOATS + ("int64",), shape=x.shape))
    if draw(st.booleans()):
        kw["minlength"] = draw(st.integers(0, 8))
    return Call("bincount", "bincount", (x,), kw)


INDEX.update({"index_select": _index_select(), "take": _take(), "put": _put(), "index": _index(),
              "index_put": _index_put(), "bucketize": _bucketize("bucketize"),
              "searchsorted": _bucketize("searchsorted"), "bincount": _bincount()})
