"""Transforms made of other transforms: composition, reinterpreting batch dims as event dims,
reshaping, and acting piecewise along a dim (cat, stack)."""
from __future__ import annotations

import math

from .. import ops as _ops
from ._transform_base import Transform, sum_rightmost
from . import constraints

__all__ = ["CatTransform", "ComposeTransform", "IndependentTransform", "ReshapeTransform", "StackTransform",
           "identity_transform"]


class ComposeTransform(Transform):
    """``parts`` applied left to right; the Jacobian terms are summed over the event dims the
    composition ends with."""

    def __init__(self, parts, cache_size: int = 0):
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        dom = self.parts[0].domain
        need = self.parts[-1].codomain.event_dim
        for p in reversed(self.parts):
            need = max(need + p.domain.event_dim - p.codomain.event_dim, p.domain.event_dim)
        return constraints.independent(dom, need - dom.event_dim) if need > dom.event_dim else dom

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        cod = self.parts[-1].codomain
        need = self.parts[0].domain.event_dim
        for p in self.parts:
            need = max(need + p.codomain.event_dim - p.domain.event_dim, p.codomain.event_dim)
        return constraints.independent(cod, need - cod.event_dim) if need > cod.event_dim else cod

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self):
        if self._inv is None:
            inverse = ComposeTransform([p.inv for p in reversed(self.parts)])
            inverse._inv = self
            self._inv = inverse
        return self._inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return _ops.zeros_like(x)
        points = [x]
        for p in self.parts[:-1]:
            points.append(p(points[-1]))
        points.append(y)
        total = 0
        dims = self.domain.event_dim
        for p, a, b in zip(self.parts, points[:-1], points[1:]):
            total = total + sum_rightmost(p.log_abs_det_jacobian(a, b), dims - p.domain.event_dim)
            dims += p.codomain.event_dim - p.domain.event_dim
        return total

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with its last ``reinterpreted_batch_ndims`` batch dims read as event
    dims (the Jacobian term is summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims: int, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the trailing ``in_shape`` event into ``out_shape`` (same number of elements)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.new_zeros(batch)

    def forward_shape(self, shape):
        return self._swap(tuple(shape), self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap(tuple(shape), self.out_shape, self.in_shape)

    @staticmethod
    def _swap(shape, old, new):
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != old:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
        return shape[:cut] + new


class CatTransform(Transform):
    """Transforms applied to consecutive pieces (``lengths``) of ``dim``, the results
    concatenated."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: one length per transform is needed")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError("CatTransform: dim out of range")
        if x.size(self.dim) != self.length:
            raise ValueError("CatTransform: the pieces' lengths do not add up to the size of dim")
        start = 0
        for t, n in zip(self.transforms, self.lengths):
            yield t, x.narrow(self.dim, start, n), start, n
            start += n

    def _call(self, x):
        return _ops.cat([t(piece) for t, piece, _, _ in self._pieces(x)], self.dim)

    def _inverse(self, y):
        return _ops.cat([t.inv(piece) for t, piece, _, _ in self._pieces(y)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        ev = self.event_dim
        for t, xp, start, n in self._pieces(x):
            yp = y.narrow(self.dim, start, n)
            term = t.log_abs_det_jacobian(xp, yp)
            if t.event_dim < ev:
                term = sum_rightmost(term, ev - t.event_dim)
            terms.append(term)
        dim = self.dim if self.dim < 0 else self.dim - x.dim()
        if -dim <= ev:  # the pieces lie inside one event: their terms add up
            return sum(terms[1:], terms[0])
        return _ops.cat(terms, dim + ev)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transform i applied to slice i of ``dim``, the results stacked."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, z):
        if z.size(self.dim) != len(self.transforms):
            raise ValueError("StackTransform: the size of dim must equal the number of transforms")
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        return _ops.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y):
        return _ops.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = [t.log_abs_det_jacobian(a, b) for t, a, b in zip(self.transforms, self._slices(x), self._slices(y))]
        return _ops.stack(terms, self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
