"""``ember.sparse``: operations on sparse COO tensors, as ``torch.sparse`` (see docs/sparse.md).

``mm`` (sparse @ dense, with gradients to the dense operand and to the sparse operand's values),
``addmm``, ``sum`` (all entries or over dims), ``softmax`` and ``log_softmax`` over a sparse dim.
"""
from __future__ import annotations

from .ops.sparse import addmm, log_softmax, mm, softmax, spmm, sum  # noqa: A004 - torch.sparse.sum

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spmm"]
