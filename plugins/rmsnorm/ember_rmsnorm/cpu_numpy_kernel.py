"""The fused ``rms_norm`` kernel for the cpu_numpy backend: one pass of numpy over the input
(sum of squares by ``einsum``, without a squared temporary), registered through
``ember_register_kernels``. It reads tensors through ``ember_cpu_numpy.backend.nd`` (the numpy
view of a cpu tensor) and returns results with ``wrap`` (a tensor owning a numpy array), the
helpers cpu_numpy offers kernel authors."""
from __future__ import annotations

import numpy as np

import ember
from ember_cpu_numpy.backend import nd, wrap


def rms_norm_kernel(x, weight, k: int, eps: float):
    """Same arguments and values as :func:`ember_rmsnorm.op.decomposition`."""
    a = nd(x)
    ct = np.float64 if x.dtype is ember.float64 else np.float32
    n = 1
    for s in a.shape[a.ndim - k:]:
        n *= s
    rows = a.reshape(a.shape[:a.ndim - k] + (n,)).astype(ct, copy=False)
    ms = np.einsum("...i,...i->...", rows, rows) / ct(n)
    out = rows * (ct(1.0) / np.sqrt(ms + ct(eps)))[..., None]
    if weight is not None:
        out *= nd(weight).reshape(n).astype(ct, copy=False)
    return wrap(out.reshape(a.shape).astype(x.dtype.np, copy=False), x.device)
