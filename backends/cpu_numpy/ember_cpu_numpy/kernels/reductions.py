"""Reductions: sum/prod (in the contract's accumulator dtypes), amax/amin, argmax/argmin,
cumulative sums and products, var/std/mean, and max/min along a dim with their indices.

The kernels of each family are closures over one array function (tiny reductions are on the
hot path too: an 8x8 ``sum(1)`` is a few microseconds end to end)."""
from __future__ import annotations

import math

import numpy as np

from .base import KernelGroup
from .rules import BF16_NP, axes, keep_dtype, sum_dtype


class Reductions(KernelGroup):
    """Reductions over dims, scans and the moments."""

    def accumulate(self, f):
        """``k(x, dims, keepdim)`` for sum/prod ``f``: 16-bit floats accumulate in float32,
        integers in their own dtype; the result keeps the input's dtype."""
        xp, nd, wrap = self.xp, self.nd, self.wrap

        def k(x, dims, keepdim):
            a = nd(x)
            acc = keep_dtype(a)
            r = f(a, axis=None if len(dims) == a.ndim else dims, keepdims=keepdim, dtype=acc)  # (axes, inline)
            return wrap(xp.asarray(r).astype(a.dtype, copy=False) if acc is not None else r, x._device)
        return k

    def extreme(self, f):
        """``k(x, dims, keepdim)`` for amax/amin ``f`` (bfloat16 through float32)."""
        xp, nd, wrap = self.xp, self.nd, self.wrap

        def k(x, dims, keepdim):
            a = nd(x)
            if a.dtype is BF16_NP:
                return wrap(xp.asarray(f(a.astype(xp.float32), axis=axes(a, dims), keepdims=keepdim)).astype(a.dtype),
                            x._device)
            return wrap(f(a, axis=axes(a, dims), keepdims=keepdim), x._device)
        return k

    def arg_extreme(self, f):
        """``k(x, dim, keepdim)`` for argmax/argmin ``f`` (``dim`` None: of the flattened input)."""
        xp, nd, wrap = self.xp, self.nd, self.wrap

        def k(x, dim, keepdim):
            a = nd(x)
            if a.dtype is BF16_NP:
                a = a.astype(xp.float32)
            if dim is None:
                return wrap(xp.asarray(f(a), dtype=xp.int64), x._device)
            return wrap(f(a, axis=dim, keepdims=keepdim).astype(xp.int64, copy=False), x._device)
        return k

    def extreme_dim(self, argf):
        """``k(x, d, keepdim) -> (values, indices)`` for max_dim/min_dim, from argmax/argmin ``argf``."""
        xp, nd, wrap = self.xp, self.nd, self.wrap

        def k(x, d, keepdim):
            a = nd(x)
            w = a.astype(xp.float32) if a.dtype is BF16_NP else a
            i = argf(w, axis=d, keepdims=True)
            v = xp.take_along_axis(a, i, axis=d)
            if not keepdim:
                v, i = xp.squeeze(v, d), xp.squeeze(i, d)
            return (wrap(v, x._device), wrap(i.astype(xp.int64, copy=False), x._device))
        return k

    def scan(self, f):
        """``k(x, d)`` for cumsum/cumprod ``f`` (accumulators as :meth:`accumulate`)."""
        nd, wrap = self.nd, self.wrap

        def k(x, d):
            a = nd(x)
            acc = keep_dtype(a)
            r = f(a, axis=d, dtype=acc)
            return wrap(r.astype(a.dtype) if acc is not None else r, x._device)
        return k

    # -- moments --------------------------------------------------------------------------------------
    def _var(self, a, dims, correction, keepdim):
        xp = self.xp
        n = math.prod(a.shape[d] for d in dims)
        r = xp.var(a, axis=axes(a, dims), ddof=0, keepdims=keepdim, dtype=sum_dtype(a))  # sum of squares / n
        if n:
            denom = n - correction
            r = r * (n / denom) if denom > 0 else r * n / 0.0  # no degrees of freedom: inf or nan
        return xp.asarray(r)

    def var(self, x, dims, correction, keepdim):
        a = self.nd(x)
        return self.wrap(self._var(a, dims, correction, keepdim).astype(a.dtype, copy=False), x._device)

    def std(self, x, dims, correction, keepdim):
        a = self.nd(x)  # the root is taken before 16-bit floats are rounded: one rounding, not two
        return self.wrap(self.xp.sqrt(self._var(a, dims, correction, keepdim)).astype(a.dtype, copy=False), x._device)

    def mean(self, x, dims, keepdim):
        xp, a = self.xp, self.nd(x)
        if a.size == 0:  # (numpy warns 'Mean of empty slice'): the mean of nothing is NaN, quietly
            ds = range(a.ndim) if dims is None else (dims,) if isinstance(dims, int) else dims
            n = math.prod(a.shape[d] for d in ds)
            with xp.errstate(invalid="ignore", divide="ignore"):
                r = xp.sum(a, axis=dims, keepdims=keepdim, dtype=sum_dtype(a)) / n
            return self.wrap(xp.asarray(r).astype(a.dtype, copy=False), x._device)
        r = xp.mean(a, axis=dims, keepdims=keepdim, dtype=sum_dtype(a))
        return self.wrap(xp.asarray(r).astype(a.dtype, copy=False), x._device)

    def table(self) -> dict:
        xp = self.xp
        if xp is np:  # numpy's sum/prod/amax/amin are Python wrappers calling these (a third of a tiny sum's time)
            fsum, fprod, fmax, fmin = np.add.reduce, np.multiply.reduce, np.maximum.reduce, np.minimum.reduce
        else:
            fsum, fprod, fmax, fmin = xp.sum, xp.prod, xp.amax, xp.amin
        return {
            "sum": self.accumulate(fsum), "prod": self.accumulate(fprod), "amax": self.extreme(fmax),
            "amin": self.extreme(fmin), "argmax": self.arg_extreme(xp.argmax),
            "argmin": self.arg_extreme(xp.argmin), "cumsum": self.scan(xp.cumsum),
            # fast paths for composites
            "cumprod": self.scan(xp.cumprod), "max_dim": self.extreme_dim(xp.argmax),
            "min_dim": self.extreme_dim(xp.argmin), "var": self.var, "std": self.std, "mean": self.mean,
        }
