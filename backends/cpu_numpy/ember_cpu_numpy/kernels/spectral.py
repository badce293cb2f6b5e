"""The Fourier-transform kernel ops on cpu: the ops' own host functions
(:mod:`ember.ops.spectral_host`, so that the kernels and the host path compute the same thing),
on the tensors' numpy views without the host path's copies, with scipy.fft (a dependency of
this distribution, and several times faster than numpy.fft on float32 and batched transforms)
as the FFT library; numpy.fft where scipy can't be imported."""
from __future__ import annotations

import numpy as np

from ember.ops import spectral_host as H

from ..arrays import nd, wrap

try:
    from scipy import fft as _LIB
except ImportError:  # pragma: no cover - scipy is a dependency; kept for minimal environments
    _LIB = np.fft

__all__ = ["KERNELS"]


def _c2c(x, dims, scale, forward):
    return wrap(H.c2c(nd(x), dims, scale, forward, _LIB), x._device)


def _r2c(x, dims, scale, forward):
    return wrap(H.r2c(nd(x), dims, scale, forward, _LIB), x._device)


def _c2r(x, dims, scale, n, forward):
    return wrap(H.c2r(nd(x), dims, scale, n, forward, _LIB), x._device)


#: op name -> kernel (numpy only; ember-cuda-cupy does not inherit these: it takes the host path)
KERNELS = {"_fft_c2c": _c2c, "_fft_r2c": _r2c, "_fft_c2r": _c2r}
