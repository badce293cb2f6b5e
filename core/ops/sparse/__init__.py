"""Sparse COO tensors (see docs/sparse.md): :mod:`.coo` builds them and converts them,
:mod:`.kernels` holds their operations and the kernels of the sparse dispatch key. These names
are not ``ember.*`` op functions: ``ember.sparse`` (the public namespace), ``ember.sparse_coo_tensor``,
``ember.spmm`` and the Tensor methods (``to_dense``, ``coalesce``, ``indices``...) expose them."""
from __future__ import annotations

from . import coo, kernels
from .coo import (coalesce, dense_dim, indices, is_coalesced, is_sparse, make_sparse, nnz, raw_indices, raw_values,
                  sparse_coo_tensor, sparse_dim, sparse_to, to_dense, to_sparse, values)
from .kernels import addmm, log_softmax, mm, softmax, spmm, sum

__all__ = ["coo", "kernels", "coalesce", "dense_dim", "indices", "is_coalesced", "is_sparse", "make_sparse", "nnz",
           "raw_indices", "raw_values", "sparse_coo_tensor", "sparse_dim", "sparse_to", "to_dense", "to_sparse",
           "values", "addmm", "log_softmax", "mm", "softmax", "spmm", "sum"]
