"""Indexing ops, one module per idea:

* :mod:`~ember.ops.indexing.scatter_gather`: gather, scatter / scatter_add / scatter_reduce,
  index_select, index_add/copy/fill/reduce, take, put, take_along_dim;
* :mod:`~ember.ops.indexing.masked`: masked_fill / masked_select / masked_scatter, nonzero,
  argwhere;
* :mod:`~ember.ops.indexing.sorting`: sort, argsort, msort, topk, kthvalue, unique,
  unique_consecutive, searchsorted, bucketize, bincount, histc;
* :mod:`~ember.ops.indexing.histograms`: histogram, histogramdd;
* :mod:`~ember.ops.indexing.advanced`: ``Tensor.__getitem__`` / ``__setitem__`` (:func:`getitem`,
  :func:`setitem`) and the index / index_put ops they run.

Indices are bounds-checked: front ends of composite ops wrap negative indices where PyTorch
allows them and raise ``IndexError`` for anything out of range before any kernel runs;
primitive kernels (gather, scatter_add) check again themselves.
"""
from __future__ import annotations

from . import advanced, histograms, masked, scatter_gather, sorting
from .advanced import *  # noqa: F401,F403
from .advanced import getitem, setitem  # noqa: F401  (Tensor.__getitem__ / __setitem__)
from .histograms import *  # noqa: F401,F403
from .masked import *  # noqa: F401,F403
from .scatter_gather import *  # noqa: F401,F403
from .scatter_gather import check_bounds  # noqa: F401  (internal: shared bounds check)
from .sorting import *  # noqa: F401,F403

__all__ = sorted(scatter_gather.__all__ + masked.__all__ + sorting.__all__ + advanced.__all__ + histograms.__all__)
