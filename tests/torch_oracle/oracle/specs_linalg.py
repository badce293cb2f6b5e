"""Generators of calls for products: matmul and its relatives, einsum, tensordot, kron, cross."""
from __future__ import annotations

from hypothesis import strategies as st

from .calls import Call
from .tensors import COMPLEX, FLOATS, NUMS, scalars, tensors

__all__ = ["LINALG"]

LINALG = {}
_MM = NUMS + COMPLEX


def _n(draw):
    return draw(st.integers(0, 3))


def _mat(draw, *shape, dtypes=_MM):
    return draw(tensors(dtypes, shape=tuple(shape)))


@st.composite
def _products(draw, name):
    n, m, k, b = _n(draw), _n(draw), _n(draw), _n(draw)
    bad = draw(st.integers(0, 7)) == 0
    k2 = k + 1 if bad else k
    ab = {}
    if name in ("addmm", "addmv", "addr", "addbmm", "baddbmm") and draw(st.booleans()):
        ab = {"beta": draw(scalars(("int", "float"))), "alpha": draw(scalars(("int", "float")))}
    if name == "mm":
        return Call(name, name, (_mat(draw, n, k), _mat(draw, k2, m)))
    if name == "mv":
        return Call(name, name, (_mat(draw, n, k), _mat(draw, k2)))
    if name == "bmm":
        return Call(name, name, (_mat(draw, b, n, k), _mat(draw, b, k2, m)))
    if name in ("dot", "vdot", "inner"):
        return Call(name, name, (_mat(draw, k), _mat(draw, k2)))
    if name == "outer":
        return Call(name, name, (_mat(draw, n), _mat(draw, m)))
    if name == "addmm":
        return Call(name, name, (_mat(draw, *draw(st.sampled_from(((n, m), (m,), ())))), _mat(draw, n, k),
                                 _mat(draw, k2, m)), ab)
    if name == "addmv":
        return Call(name, name, (_mat(draw, *draw(st.sampled_from(((n,), ())))), _mat(draw, n, k), _mat(draw, k2)), ab)
    if name == "addr":
        return Call(name, name, (_mat(draw, n, m), _mat(draw, n), _mat(draw, m)), ab)
    if name == "addbmm":
        return Call(name, name, (_mat(draw, n, m), _mat(draw, b, n, k), _mat(draw, b, k2, m)), ab)
    if name == "baddbmm":
        return Call(name, name, (_mat(draw, b, n, m), _mat(draw, b, n, k), _mat(draw, b, k2, m)), ab)
    raise AssertionError(name)


for _x in ("mm", "mv", "bmm", "dot", "vdot", "inner", "outer", "addmm", "addmv", "addr", "addbmm", "baddbmm"):
    LINALG[_x] = _products(_x)


@st.composite
def _matmul(draw):
    k = _n(draw)
    shapes = draw(st.sampled_from((((k,), (k,)), ((2, k), (k,)), ((k,), (k, 3)), ((2, 2, k), (k,)), ((k,), (2, k, 2)),
                                  ((2, 1, 3, k), (2, k, 2)), ((), (k,)), ((2, k), (k + 1, 2)))))
    return Call("matmul", "matmul", tuple(_mat(draw, *s) for s in shapes))


@st.composite
def _einsum(draw):
    eq, shapes = draw(st.sampled_from((("ij,jk->ik", ((2, 3), (3, 2))), ("i,i->", ((3,), (3,))),
                                       ("ii->i", ((3, 3),)), ("bij->bji", ((2, 2, 3),)),
                                       ("...i,...i->...", ((2, 3), (3,))),
                                       ("ij->", ((2, 0),)), ("i,j->ij", ((2,), (3,))))))
    return Call("einsum", "einsum", (eq,) + tuple(draw(tensors(FLOATS + COMPLEX + ("int64",), shape=s))
                                                  for s in shapes))


@st.composite
def _tensordot(draw):
    a = draw(tensors(_MM, shape=(2, 3, 2)))
    b = draw(tensors(_MM, shape=(3, 2, 2)))
    dims = draw(st.sampled_from((0, 1, 2, ([1, 2], [0, 1]), ([1], [0]))))
    return Call("tensordot", "tensordot", (a, b), {"dims": dims})


@st.composite
def _kron(draw):
    return Call("kron", "kron", (draw(tensors(_MM, max_dims=2)), draw(tensors(_MM, max_dims=2))))


@st.composite
def _cross(draw):
    s = draw(st.sampled_from(((3,), (2, 3), (3, 2), (4,))))
    kw = {"dim": draw(st.sampled_from((-1, 0)))} if draw(st.booleans()) else {}
    return Call("cross", "cross", (draw(tensors(_MM, shape=s)), draw(tensors(_MM, shape=s))), kw)


@st.composite
def _matrix_power(draw):
    n = _n(draw)
    x = draw(tensors(FLOATS + ("int64",), shape=draw(st.sampled_from(((n, n), (2, n, n), (2, 3)))), low=-2, high=2))
    return Call("matrix_power", "matrix_power", (x, draw(st.integers(0 if x.dtype == "int64" else -1, 3))))


@st.composite
def _chain(draw):
    n = [_n(draw) for _ in range(4)]
    return Call("chain_matmul", "chain_matmul", tuple(_mat(draw, n[i], n[i + 1], dtypes=FLOATS + COMPLEX)
                                                        for i in range(3)))


LINALG.update({"matmul": _matmul(), "einsum": _einsum(), "tensordot": _tensordot(), "kron": _kron(),
               "cross": _cross(), "matrix_power": _matrix_power(), "chain_matmul": _chain()})
