"""Generators of calls for reductions, scans, sorting and selection along a dim."""
from __future__ import annotations

from hypothesis import strategies as st

from .calls import Call, D
from .tensors import ALL, COMPLEX, FLOATS, NUMS, tensors

__all__ = ["REDUCE"]

REDUCE = {}


@st.composite
def _dim(draw, x, allow_none=True, tuple_ok=False):
    nd = len(x.shape)
    opts = [st.integers(-max(nd, 1), max(nd, 1) - 1)]
    if allow_none:
        opts.append(st.none())
    if tuple_ok and nd:
        opts.append(st.lists(st.integers(-nd, nd - 1), max_size=nd, unique=True).map(tuple))
    return draw(st.one_of(*opts))


def _reduction(name, dtypes=ALL, dim_tuple=True, dim_required=False, extra=None):
    @st.composite
    def gen(draw):
        x = draw(tensors(dtypes))
        kwargs = {}
        if dim_required or draw(st.integers(0, 2)):
            d = draw(_dim(x, allow_none=not dim_required, tuple_ok=dim_tuple))
            if d is not None or draw(st.booleans()):
                kwargs["dim"] = d
            if "dim" in kwargs and draw(st.booleans()):
                kwargs["keepdim"] = draw(st.booleans())
        if extra:
            kwargs.update(draw(extra))
        return Call(name, name, (x,), kwargs)
    return gen()


_DT = st.sampled_from((None, "float64", "float32", "int64"))


def _dtype_kw(p=True):
    return st.one_of(st.just({}), _DT.map(lambda d: {"dtype": D(d)} if d else {}))


_CORR = st.one_of(st.just({}), st.sampled_from((0, 1, 2)).map(lambda c: {"correction": c}),
                  st.booleans().map(lambda u: {"unbiased": u}))

for _n in ("sum", "nansum", "mean", "nanmean"):
    REDUCE[_n] = _reduction(_n, ALL + COMPLEX if _n in ("sum", "mean") else ALL, extra=_dtype_kw())
for _n in ("amax", "amin", "all", "any", "count_nonzero", "logsumexp"):
    REDUCE[_n] = _reduction(_n, ALL + COMPLEX if _n == "amax" else ALL, dim_required=_n == "logsumexp")
for _n in ("std", "var", "std_mean", "var_mean"):
    REDUCE[_n] = _reduction(_n, FLOATS + ("int64",) + COMPLEX, extra=_CORR)
REDUCE["norm"] = _reduction("norm", FLOATS + ("int64",), extra=st.sampled_from((0, 1, 2, 3, float("inf"),
                                                                                 -float("inf"), "fro")).map(
    lambda p: {"p": p}))


def _single_dim(name, dtypes=ALL, fn=None, dim_optional=True, keepdim=True, extra=None, pos=False):
    @st.composite
    def gen(draw):
        x = draw(tensors(dtypes))
        kwargs = {}
        args = [x]
        if not dim_optional or draw(st.integers(0, 3)):
            d = draw(_dim(x, allow_none=False))
            if pos:
                args.append(d)
            else:
                kwargs["dim"] = d
            if keepdim and draw(st.booleans()):
                kwargs["keepdim"] = draw(st.booleans())
        if extra:
            kwargs.update(draw(extra(x)) if callable(extra) else draw(extra))
        return Call(name, fn or name, tuple(args), kwargs)
    return gen()


for _n in ("prod",):
    REDUCE[_n] = _single_dim(_n, ALL + COMPLEX, extra=_dtype_kw())
for _n in ("argmax", "argmin", "median", "nanmedian", "max", "min"):
    REDUCE[_n] = _single_dim(_n, ALL + COMPLEX if _n in ("argmax", "max") else ALL)
REDUCE["aminmax"] = _single_dim("aminmax")
REDUCE["max_dim"] = _single_dim("max_dim", fn="max", dim_optional=False, pos=True)
REDUCE["min_dim"] = _single_dim("min_dim", fn="min", dim_optional=False, pos=True)
REDUCE["median_dim"] = _single_dim("median_dim", fn="median", dim_optional=False, pos=True)
REDUCE["mode"] = _single_dim("mode")
for _n in ("cumsum", "cumprod"):
    REDUCE[_n] = _single_dim(_n, ALL + COMPLEX, dim_optional=False, keepdim=False, extra=_dtype_kw())
for _n in ("cummax", "cummin", "logcumsumexp"):
    REDUCE[_n] = _single_dim(_n, dim_optional=False, keepdim=False)
for _n in ("softmax", "log_softmax"):
    REDUCE[_n] = _single_dim(_n, NUMS, dim_optional=False, keepdim=False,
                             extra=st.sampled_from((None, "float64", "float32")).map(
                                 lambda d: {"dtype": D(d)} if d else {}))
REDUCE["sort"] = _single_dim("sort", keepdim=False, extra=st.fixed_dictionaries(
    {}, optional={"descending": st.booleans(), "stable": st.booleans()}))
REDUCE["argsort"] = _single_dim("argsort", keepdim=False, extra=st.fixed_dictionaries(
    {}, optional={"descending": st.booleans(), "stable": st.booleans()}))
REDUCE["msort"] = st.builds(lambda x: Call("msort", "msort", (x,)), tensors(ALL))


@st.composite
def _k_op(draw, name):
    x = draw(tensors(NUMS))
    nd = len(x.shape)
    d = draw(st.integers(-max(nd, 1), max(nd, 1) - 1))
    size = x.shape[d] if nd else 1
    k = draw(st.integers(0, size + 1))
    kwargs = {"dim": d}
    if name == "topk":
        kwargs.update(draw(st.fixed_dictionaries({}, optional={"largest": st.booleans(), "sorted": st.booleans()})))
    elif draw(st.booleans()):
        kwargs["keepdim"] = draw(st.booleans())
    return Call(name, name, (x, k), kwargs)


REDUCE["topk"] = _k_op("topk")
REDUCE["kthvalue"] = _k_op("kthvalue")


@st.composite
def _unique(draw, name):
    x = draw(tensors(ALL, low=-2, high=2, special=False))
    kwargs = draw(st.fixed_dictionaries({}, optional={"return_inverse": st.booleans(),
                                                      "return_counts": st.booleans()}))
    if draw(st.booleans()) and x.shape:
        kwargs["dim"] = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    if name == "unique" and draw(st.booleans()):
        kwargs["sorted"] = True
    return Call(name, name, (x,), kwargs)


REDUCE["unique"] = _unique("unique")
REDUCE["unique_consecutive"] = _unique("unique_consecutive")
