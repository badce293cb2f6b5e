"""Indexing and sorting: gather/scatter (their reductions through ``ufunc.at``), advanced
indexing, ``index_select``, ``nonzero``, stable ``sort``, ``searchsorted``, and the embedding
lookup with its backward. Kernels that read indices check them before writing anything."""
from __future__ import annotations

import numpy as np

from ember.backend import Tensor

from .base import KernelGroup
from .rules import BF16_NP, check_idx, region


class Indexing(KernelGroup):
    """Kernels reading or writing through index tensors. ``ufunc.at`` is the array module's (a
    backend whose ufuncs lack ``at`` for some dtypes passes a namespace whose ufuncs have it)."""

    def fancy(self, idx, d):
        """The index tuple addressing a[..., idx along d, ...] for index array ``idx`` (open
        grids elsewhere, as ``np.indices(sparse=True)``, which cupy lacks)."""
        xp = self.xp
        k = idx.ndim
        return tuple(idx if i == d else xp.arange(n).reshape((1,) * i + (n,) + (1,) * (k - 1 - i))
                     for i, n in enumerate(idx.shape))

    def gather(self, x, d, index):
        a, idx = self.nd(x), self.nd(index)
        check_idx("gather", idx, a.shape[d], d)
        return self.wrap(self.xp.take_along_axis(region(a, idx.shape, d), idx, axis=d), x._device)

    def scatter_add(self, x, d, index, src):
        a, idx, s = self.nd(x), self.nd(index), self.nd(src)
        check_idx("scatter_add", idx, a.shape[d], d)
        out = a.copy()
        self.xp.add.at(out, self.fancy(idx, d), region(s, idx.shape, d))
        return self.wrap(out, x._device)

    def scatter(self, x, d, index, src):
        a, idx = self.nd(x), self.nd(index)
        check_idx("scatter", idx, a.shape[d], d)
        out = a.copy()
        out[self.fancy(idx, d)] = region(self.nd(src), idx.shape, d) if isinstance(src, Tensor) else src
        return self.wrap(out, x._device)

    def scatter_reduce(self, x, d, index, src, reduce, include_self):
        xp, nd = self.xp, self.nd
        a, idx, s = nd(x), nd(index), region(nd(src), index._shape, d)
        check_idx("scatter_reduce", idx, a.shape[d], d)
        out = a.copy()
        f = self.fancy(idx, d)
        if reduce == "mean":
            cnt = xp.zeros(a.shape, dtype=xp.int64)
            xp.add.at(cnt, f, 1)
            if not include_self:
                out[f] = 0
            xp.add.at(out, f, s)
            c = cnt + (1 if include_self else 0)
            hit = cnt > 0
            if out.dtype.kind == "f":
                out[hit] = out[hit] / c[hit]
            else:
                out[hit] = xp.floor_divide(out[hit], c[hit])
            return self.wrap(out, x._device)
        ufunc = {"sum": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
        if not include_self:
            ident = {"sum": 0, "prod": 1,
                     "amax": (-np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min if a.dtype.kind in "iu"
                              else False),
                     "amin": (np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).max if a.dtype.kind in "iu"
                              else True)}[reduce]
            out[f] = ident
        ufunc.at(out, f, s)
        return self.wrap(out, x._device)

    def index_select(self, x, d, index):
        return self.wrap(self.xp.take(self.nd(x), self.nd(index), axis=d), x._device)

    def index(self, x, indices):
        nd = self.nd
        key = tuple(slice(None) if i is None else nd(i) for i in indices)
        return self.wrap(self.xp.ascontiguousarray(nd(x)[key]), x._device)

    def index_put(self, x, indices, values, accumulate):
        nd = self.nd
        out = nd(x).copy()
        key = tuple(slice(None) if i is None else nd(i) for i in indices)
        if accumulate:
            self.xp.add.at(out, key, nd(values))
        else:
            out[key] = nd(values)
        return self.wrap(out, x._device)

    def nonzero(self, x):
        return self.wrap(self.xp.argwhere(self.nd(x)).astype(self.xp.int64, copy=False), x._device)

    def sort(self, x, d, descending, stable):
        xp = self.xp
        a = self.nd(x)
        work = a.astype(xp.float32) if a.dtype is BF16_NP else a
        if descending:
            idx = xp.flip(xp.argsort(xp.flip(work, d), axis=d, kind="stable"), d)
            idx = (a.shape[d] - 1) - idx
        else:
            idx = xp.argsort(work, axis=d, kind="stable")
        idx = xp.ascontiguousarray(idx, dtype=xp.int64)
        return (self.wrap(xp.take_along_axis(a, idx, axis=d), x._device), self.wrap(idx, x._device))

    def searchsorted(self, seq, values, right):
        xp = self.xp
        s, v = self.nd(seq), self.nd(values)
        side = "right" if right else "left"
        out = xp.empty(v.shape, dtype=xp.int64)
        rows = 1
        for n in s.shape[:-1]:
            rows *= n
        # explicit row counts: -1 cannot be inferred when the last dim is empty
        s2 = s.reshape(rows, s.shape[-1])
        v2 = v.reshape(rows, v.shape[-1])
        o2 = out.reshape(rows, v.shape[-1])
        for i in range(s2.shape[0]):
            o2[i] = xp.searchsorted(s2[i], v2[i], side=side)
        return self.wrap(out, seq._device)

    # -- embedding --------------------------------------------------------------------------------------
    def embedding(self, w, idx, padding_idx):
        wt, ii = self.nd(w), self.nd(idx)
        return self.wrap(self.xp.take(wt, ii.ravel(), axis=0).reshape(ii.shape + (wt.shape[1],)), w._device)

    def embedding_backward(self, g, idx, num, padding_idx):
        xp = self.xp
        gg, ii = self.nd(g), self.nd(idx).ravel()
        D_ = gg.shape[-1]
        g2 = gg.reshape(ii.size, D_)  # (no -1: D_ may be 0)
        acc = xp.float32 if gg.dtype.itemsize == 2 else gg.dtype
        out = xp.zeros((num, D_), dtype=acc)
        xp.add.at(out, ii, g2.astype(acc, copy=False))
        if padding_idx is not None:
            out[padding_idx] = 0
        return self.wrap(out.astype(gg.dtype, copy=False), g._device)

    def table(self) -> dict:
        return {
            "gather": self.gather, "scatter_add": self.scatter_add, "nonzero": self.nonzero, "sort": self.sort,
            # fast paths for composites
            "index_select": self.index_select, "index": self.index, "index_put": self.index_put,
            "searchsorted": self.searchsorted, "scatter": self.scatter, "scatter_reduce": self.scatter_reduce,
            "embedding": self.embedding, "embedding_backward": self.embedding_backward,
        }
