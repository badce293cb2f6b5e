"""Random kernels: the two fills every backend provides (``uniform_``, ``normal_``) and dropout.
They draw from ``gen.rng`` (``random(shape, dtype)``, ``standard_normal(shape, dtype)``: a numpy
``Generator`` on cpu, cuRAND behind the same two calls on cuda) in float32, or float64 for
float64 targets."""
from __future__ import annotations

from ember.backend import dtypes as D

from .base import KernelGroup


class Random(KernelGroup):
    """Kernels drawing from a generator. A backend storing some dtype differently overrides
    :meth:`store` (cuda_cupy: bfloat16 as bit patterns)."""

    def draw_dtype(self, dtype):
        """The dtype samples for a target of ember dtype ``dtype`` are drawn in."""
        return self.xp.float64 if dtype is D.float64 else self.xp.float32

    def store(self, t, r) -> None:
        """Write samples ``r`` (float32/float64) into tensor ``t``, cast to its dtype."""
        self.xp.copyto(self.nd(t), r, casting="unsafe")

    def uniform_(self, t, low, high, gen):
        r = gen.rng.random(t._shape, dtype=self.draw_dtype(t._dtype))
        if low != 0.0 or high != 1.0:
            r = r * (high - low) + low
        self.store(t, r)
        return t

    def normal_(self, t, mean, std, gen):
        r = gen.rng.standard_normal(t._shape, dtype=self.draw_dtype(t._dtype))
        if std != 1.0 or mean != 0.0:
            r = r * std + mean
        self.store(t, r)
        return t

    def dropout(self, x, p, gen):
        a = self.nd(x)
        keep = gen.rng.random(a.shape, dtype=self.draw_dtype(x._dtype)) >= p
        mask = keep.astype(a.dtype) * a.dtype.type(1.0 / (1.0 - p))
        return self.wrap(a * mask, x._device), self.wrap(mask, x._device)

    def table(self) -> dict:
        return {"uniform_": self.uniform_, "normal_": self.normal_, "dropout": self.dropout}
