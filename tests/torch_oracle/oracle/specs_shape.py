"""Generators of calls for views, reshapes, joins and splits."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .calls import Call
from .tensors import ALL, tensors

__all__ = ["SHAPE"]

SHAPE = {}


def _d(draw, nd):
    return draw(st.integers(-max(nd, 1), max(nd, 1) - 1))


@st.composite
def _x_then(draw, name, fn, more, dtypes=ALL, **kw):
    x = draw(tensors(dtypes, **kw))
    args, kwargs = more(draw, x)
    return Call(name, fn, (x,) + tuple(args), kwargs)


def simple(name, more, fn=None, **kw):
    SHAPE[name] = _x_then(name, fn or name, more, **kw)


def _reshape_target(draw, x):
    n = int(np.prod(x.shape)) if x.shape else 1
    opts = [(n,), (-1,), x.shape[::-1], (1, n), (n, 1, 1)]
    if n % 2 == 0 and n:
        opts += [(2, -1), (-1, 2), (n // 2, 2)]
    opts.append((n + 1,))
    return tuple(draw(st.sampled_from(opts)))


simple("view", lambda d, x: (_reshape_target(d, x), {}), fn="Tensor.view")
simple("reshape", lambda d, x: ((_reshape_target(d, x),), {}))
simple("flatten", lambda d, x: ((), {"start_dim": _d(d, len(x.shape)), "end_dim": -1}))
simple("ravel", lambda d, x: ((), {}))
simple("contiguous", lambda d, x: ((), {}), fn="Tensor.contiguous")
simple("alias", lambda d, x: ((), {}), fn="Tensor.view_as")
simple("t", lambda d, x: ((), {}), max_dims=3)
simple("adjoint", lambda d, x: ((), {}))
simple("permute", lambda d, x: ((tuple(d(st.permutations(range(len(x.shape))))),), {}))
simple("transpose", lambda d, x: ((_d(d, len(x.shape)), _d(d, len(x.shape))), {}))
simple("movedim", lambda d, x: ((_d(d, len(x.shape)), _d(d, len(x.shape))), {}))
simple("squeeze", lambda d, x: ((_d(d, len(x.shape)),) if d(st.booleans()) else (), {}), max_side=2)
simple("unsqueeze", lambda d, x: ((d(st.integers(-len(x.shape) - 1, len(x.shape))),), {}))
simple("flip", lambda d, x: ((tuple(d(st.lists(st.integers(-max(len(x.shape), 1), max(len(x.shape), 1) - 1),
                                                 unique=True, max_size=2))),), {}))
simple("fliplr", lambda d, x: ((), {}))
simple("flipud", lambda d, x: ((), {}))
simple("roll", lambda d, x: ((d(st.integers(-5, 5)),), {"dims": _d(d, len(x.shape))} if d(st.booleans()) else {}))
simple("rot90", lambda d, x: ((d(st.integers(-3, 4)), d(st.sampled_from(((0, 1), (1, 0), (-1, -2), (0, 0))))), {}))
simple("repeat", lambda d, x: ((tuple(d(st.lists(st.integers(0, 2), min_size=len(x.shape),
                                                   max_size=len(x.shape) + 1))),), {}), fn="Tensor.repeat")
simple("tile", lambda d, x: ((tuple(d(st.lists(st.integers(0, 2), max_size=3))),), {}))
simple("repeat_interleave", lambda d, x: ((d(st.integers(0, 2)),), {"dim": _d(d, len(x.shape))}
                                          if d(st.booleans()) else {}))
simple("diagonal", lambda d, x: ((), {"offset": d(st.integers(-2, 2)), "dim1": _d(d, len(x.shape)),
                                      "dim2": _d(d, len(x.shape))}))
simple("diag_embed", lambda d, x: ((), {"offset": d(st.integers(-1, 1))}))
simple("diag", lambda d, x: ((d(st.integers(-2, 2)),), {}), max_dims=2)
simple("diagflat", lambda d, x: ((d(st.integers(-1, 1)),), {}))
simple("trace", lambda d, x: ((), {}), min_dims=2, max_dims=2)
simple("tril", lambda d, x: ((d(st.integers(-2, 2)),), {}))
simple("triu", lambda d, x: ((d(st.integers(-2, 2)),), {}))
simple("narrow", lambda d, x: ((_d(d, len(x.shape)), d(st.integers(-1, 2)), d(st.integers(0, 2))), {}))
simple("select", lambda d, x: ((_d(d, len(x.shape)), d(st.integers(-3, 3))), {}))
simple("slice", lambda d, x: ((d(st.sampled_from((slice(None), slice(1, None), slice(None, None, 2),
                                                    slice(-2, None), slice(5, 1), slice(0, 3, 3)))),), {}),
       fn="Tensor.__getitem__", min_dims=1)
simple("split", lambda d, x: ((d(st.sampled_from((1, 2, 3, [1, 2], [0, 3]))),), {"dim": _d(d, len(x.shape))}))
simple("split_with_sizes", lambda d, x: ((d(st.sampled_from(([1, 2], [0, 3], [3], [2, 2]))),),
                                         {"dim": _d(d, len(x.shape))}))
simple("chunk", lambda d, x: ((d(st.integers(1, 4)),), {"dim": _d(d, len(x.shape))}))
simple("tensor_split", lambda d, x: ((d(st.sampled_from((1, 2, 3, (1,), (1, 3), (2, 1)))),),
                                     {"dim": _d(d, len(x.shape))}))
for _n in ("hsplit", "vsplit", "dsplit"):
    simple(_n, lambda d, x: ((d(st.sampled_from((1, 2, [1]))),), {}))
simple("unbind", lambda d, x: ((), {"dim": _d(d, len(x.shape))}))
simple("unflatten", lambda d, x: ((_d(d, len(x.shape)), d(st.sampled_from(((-1,), (1, -1), (2, -1), (-1, 1))))), {}),
       min_dims=1)
simple("unfold", lambda d, x: ((_d(d, len(x.shape)), d(st.integers(0, 3)), d(st.integers(1, 2))), {}),
       fn="Tensor.unfold")
simple("expand", lambda d, x: ((tuple(d(st.sampled_from(((2,) + x.shape, tuple(-1 for _ in x.shape),
                                                          tuple(3 if s == 1 else s for s in x.shape),
                                                          (3,) * len(x.shape))))),), {}), fn="Tensor.expand",
       max_side=2)
simple("broadcast_to", lambda d, x: ((tuple(d(st.sampled_from(((2,) + x.shape,
                                                                tuple(3 if s == 1 else s for s in x.shape),
                                                                (3,) * len(x.shape))))),), {}), max_side=2)
simple("sum_to_size", lambda d, x: ((tuple(d(st.sampled_from((tuple(1 for _ in x.shape), x.shape[1:],
                                                               x.shape[:1] + (1,) * (len(x.shape) - 1), (5,))))),), {}),
       fn="Tensor.sum_to_size")
for _n in ("atleast_1d", "atleast_2d", "atleast_3d"):
    simple(_n, lambda d, x: ((), {}))


@st.composite
def _as_strided(draw):
    x = draw(tensors(ALL, layouts=("contiguous",), min_dims=1))
    n = int(np.prod(x.shape))
    size, stride = draw(st.sampled_from((((1,), (1,)), ((2, 2), (1, 2)), ((2,), (0,)), ((n,), (1,)), ((3, 2), (2, 1)))))
    off = draw(st.integers(0, 2))
    return Call("as_strided", "as_strided", (x, size, stride, off))


def _like(name, fn):
    @st.composite
    def gen(draw):
        x = draw(tensors(ALL))
        other = draw(tensors(ALL, shape=draw(st.sampled_from((x.shape, x.shape[::-1], (int(np.prod(x.shape)),),
                                                               (2,) + x.shape)))))
        return Call(name, fn, (x, other))
    return gen()


SHAPE["as_strided"] = _as_strided()
SHAPE["view_as"] = _like("view_as", "Tensor.view_as")
SHAPE["reshape_as"] = _like("reshape_as", "Tensor.reshape_as")
SHAPE["expand_as"] = _like("expand_as", "Tensor.expand_as")


def _seq(name, min_dims=0, same_rank=True):
    @st.composite
    def gen(draw):
        shape = draw(st.lists(st.integers(0, 3), min_size=min_dims, max_size=3).map(tuple))
        n = draw(st.integers(1 if name not in ("cat", "concatenate") else 0, 3))
        xs = []
        for _ in range(n):
            s = shape
            if draw(st.integers(0, 3)) == 0 and s:
                s = s[:-1] + (draw(st.integers(0, 3)),)
            if not same_rank and draw(st.integers(0, 3)) == 0:
                s = s[1:]
            xs.append(draw(tensors(ALL, shape=s)))
        kwargs = {}
        if name in ("cat", "concatenate", "stack") and draw(st.booleans()):
            kwargs["dim"] = draw(st.integers(-len(shape) - 1, max(len(shape), 1) - 1))
        if name == "meshgrid":
            xs = [draw(tensors(ALL, max_dims=1, min_dims=1)) for _ in range(n)]
            kwargs = {"indexing": draw(st.sampled_from(("ij", "xy")))}
        return Call(name, name, (xs,) if name not in ("block_diag", "broadcast_tensors", "meshgrid") else tuple(xs),
                    kwargs)
    return gen()


for _n in ("cat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"):
    SHAPE[_n] = _seq(_n)
SHAPE["block_diag"] = _seq("block_diag", same_rank=False)
SHAPE["broadcast_tensors"] = _seq("broadcast_tensors", same_rank=False)
SHAPE["meshgrid"] = _seq("meshgrid")
SHAPE["argwhere"] = st.builds(lambda x: Call("argwhere", "argwhere", (x,)), tensors(ALL))
SHAPE["nonzero"] = st.builds(lambda x, t: Call("nonzero", "nonzero", (x,), {"as_tuple": t}), tensors(ALL),
                             st.booleans())
