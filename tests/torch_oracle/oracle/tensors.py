"""Tensor specs: the values (a numpy array, before the layout), the dtype and the layout of one
input, built the same way in ember and in torch, and drawn by hypothesis.

A spec is built as ``lib.tensor(flat values, dtype=<float64|int64|bool>).reshape(base shape)``,
cast with ``.to(dtype)`` and then laid out: ``contiguous``, ``transposed`` (the base holds the
reversed shape and is permuted back), ``stepped`` (the base's last dim is twice as long and is
sliced with step 2) or ``expanded`` (the base has size 1 in some dims and is expanded: stride 0).
The float64 leaf that gradients are taken of is the base, before the layout.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = ["T", "FLOATS", "INTS", "ALL", "NUMS", "COMPLEX", "GRAD_DTYPES",
           "LAYOUTS", "tensors", "shapes", "scalars", "INT_RANGE"]

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("uint8", "int8", "int16", "int32", "int64")
ALL = ("bool",) + INTS + FLOATS
NUMS = INTS + FLOATS
COMPLEX = ("complex64", "complex128")
GRAD_DTYPES = ("float64", "complex128")  # the leaves gradients are taken of
LAYOUTS = ("contiguous", "transposed", "stepped", "expanded")
INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
             "int64": (-2**63, 2**63 - 1), "bool": (0, 1)}
_SPECIAL = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, math.inf, -math.inf, math.nan)


def _storage(dtype):
    if dtype in COMPLEX:
        return "complex128"
    return "float64" if dtype in FLOATS else "bool" if dtype == "bool" else "int64"


def _fmt(v):
    if isinstance(v, (complex, np.complexfloating)):
        v = complex(v)
        return f"complex({_fmt(v.real)}, {_fmt(v.imag)})"
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return repr(int(v))


class T:
    """One tensor argument: ``T(values, dtype, layout)``; ``values`` have the logical shape."""

    def __init__(self, values, dtype="float32", layout="contiguous", expand_dims=(), requires_grad=None, shape=None):
        arr = np.asarray(values, dtype=np.dtype(_storage(dtype)))
        if shape is not None:
            arr = arr.reshape(shape)
        self.values = arr
        self.dtype = dtype
        self.layout = layout if arr.ndim else "contiguous"
        if self.layout == "expanded":
            # the expanded dims must hold one value along them: keep the first slice
            expand_dims = tuple(d for d in expand_dims if d < arr.ndim) or (0,)
            for d in expand_dims:
                arr = np.repeat(np.take(arr, [0], axis=d), arr.shape[d], axis=d) if arr.shape[d] else arr
            self.values = arr
        self.expand_dims = tuple(expand_dims) if self.layout == "expanded" else ()
        self.requires_grad = requires_grad

    @property
    def shape(self):
        return self.values.shape

    def base(self):
        """The base array (before the layout) and the python source of the layout step."""
        a, nd = self.values, self.values.ndim
        if self.layout == "transposed" and nd >= 2:
            perm = tuple(reversed(range(nd)))
            return np.transpose(a, perm), f".permute{perm}"
        if self.layout == "stepped" and nd >= 1:
            b = np.repeat(a, 2, axis=-1)
            return b, "[..., ::2]"
        if self.layout == "expanded":
            b = a
            for d in self.expand_dims:
                if a.shape[d]:
                    b = np.take(b, [0], axis=d)
            return b, f".expand{tuple(a.shape)}"
        return a, ""

    def source(self, lib="lib", grad=False):
        base, step = self.base()
        flat = ", ".join(_fmt(v) for v in base.ravel().tolist())
        s = f"{lib}.tensor([{flat}], dtype={lib}.{_storage(self.dtype)}).reshape({tuple(base.shape)})"
        if self.dtype != _storage(self.dtype):
            s += f".to({lib}.{self.dtype})"
        if grad:
            s += ".requires_grad_()"
        return s, step

    def build(self, lib, grad=False):
        """(leaf, tensor): the leaf is the base when ``grad`` (float64 only), else None."""
        base, _ = self.base()
        t = lib.tensor(base.ravel().tolist(), dtype=getattr(lib, _storage(self.dtype))).reshape(tuple(base.shape))
        if self.dtype != _storage(self.dtype):
            t = t.to(getattr(lib, self.dtype))
        leaf = None
        if grad and self.dtype in GRAD_DTYPES and self.requires_grad is not False:
            t.requires_grad_()
            leaf = t
        nd = self.values.ndim
        if self.layout == "transposed" and nd >= 2:
            t = t.permute(*reversed(range(nd)))
        elif self.layout == "stepped" and nd >= 1:
            t = t[..., ::2]
        elif self.layout == "expanded":
            t = t.expand(*self.values.shape)
        return leaf, t

    def finite(self):
        return self.dtype not in FLOATS + COMPLEX or bool(np.isfinite(self.values).all())

    def __repr__(self):
        extra = f", {self.expand_dims!r}" if self.layout == "expanded" else ""
        if self.values.size == 0:
            extra += f", shape={self.values.shape!r}"
        return f"T({self.values.tolist()!r}, {self.dtype!r}, {self.layout!r}{extra})"


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def _elements(dtype, low=None, high=None, special=True):
    if dtype == "bool":
        return st.booleans()
    if dtype in INTS:
        lo, hi = INT_RANGE[dtype]
        small = st.integers(max(lo, -5 if low is None else low), min(hi, 5 if high is None else high))
        if special and low is None and high is None:
            return st.one_of(small, small, small, st.sampled_from((lo, hi, 0)))
        return small
    if dtype in COMPLEX:
        part = _elements("float64", low, high, special)
        return st.builds(complex, part, part)
    lo = -4.0 if low is None else low
    hi = 4.0 if high is None else high
    finite = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    ties = st.integers(int(math.ceil(lo)), int(math.floor(hi))).map(float)
    if not special:
        return st.one_of(finite, ties)
    return st.one_of(finite, finite, ties, st.sampled_from(_SPECIAL))


@st.composite
def tensors(draw, dtypes=ALL, shape=None, layouts=LAYOUTS, low=None, high=None, special=True,
            min_dims=0, max_dims=3, max_side=4, min_side=0, unique=False):
    """A :class:`T`: the dtype from ``dtypes``, the shape given or drawn, values with specials."""
    dtype = draw(st.sampled_from(tuple(dtypes)))
    if shape is None:
        shape = draw(shapes(min_dims, max_dims, min_side, max_side))
    n = int(np.prod(shape)) if shape else 1
    vals = draw(st.lists(_elements(dtype, low, high, special), min_size=n, max_size=n, unique=unique))
    arr = np.array(vals, dtype=np.dtype(_storage(dtype))).reshape(shape)
    layout = draw(st.sampled_from(tuple(layouts))) if len(shape) else "contiguous"
    exp = ()
    if layout == "expanded":
        exp = tuple(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    return T(arr, dtype, layout, exp)


def scalars(kinds=("int", "float", "bool"), low=-3, high=3):
    """Python numbers: ints, floats (specials included), bools."""
    opts = []
    if "int" in kinds:
        opts.append(st.integers(low, high))
    if "float" in kinds:
        opts.append(st.one_of(st.floats(float(low), float(high)), st.sampled_from((0.0, -0.0, 0.5, 2.5, math.inf,
                                                                                   -math.inf, math.nan))))
    if "bool" in kinds:
        opts.append(st.booleans())
    return st.one_of(*opts)
