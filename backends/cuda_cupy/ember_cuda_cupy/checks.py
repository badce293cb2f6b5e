"""Deferred device-side checks (``EMBER_CUDA_INDEX_CHECKS=lazy``).

By default an index-reading kernel checks its indices before it writes anything, which costs one
device-to-host read per call (the conformance suite's contract). In lazy mode a kernel reads
through clamped indices (never outside a buffer), keeps a device-side flag of whether any index
was out of range, and the error is raised at the next point that waits for the GPU anyway
(``synchronize``, a copy to the host, ``item()``): PyTorch's device-side assert, but recoverable
and naming the op.
"""
from __future__ import annotations

import os

from ember.backend import IndexOutOfRangeError

LAZY = os.environ.get("EMBER_CUDA_INDEX_CHECKS", "sync").strip().lower() == "lazy"
_pending: dict = {}  # device index -> [(op, size, dim, flag array)]


def defer(device_index: int, op: str, size: int, dim: int, flag) -> None:
    _pending.setdefault(device_index, []).append((op, size, dim, flag))


def raise_pending(device_index: int) -> None:
    lst = _pending.pop(device_index, None)
    if not lst:
        return
    for op, size, dim, flag in lst:
        if bool(flag):
            raise IndexOutOfRangeError(f"{op}: an index was out of bounds for dimension {dim} with size {size} "
                                       "(found after the kernel ran, EMBER_CUDA_INDEX_CHECKS=lazy: the result of that "
                                       "op and of everything computed from it is invalid)")
