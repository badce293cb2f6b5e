"""The Fourier-transform kernel ops on cpu: numpy.fft through :mod:`ember.ops.spectral_host`
(the ops' own host functions, so that the kernels and the host path agree by construction), on
the tensors' numpy views, without the host path's copies."""
from __future__ import annotations

from ember.ops import spectral_host as H

from ..arrays import nd, wrap

__all__ = ["KERNELS"]


def _c2c(x, dims, scale, forward):
    return wrap(H.c2c(nd(x), dims, scale, forward), x._device)


def _r2c(x, dims, scale, forward):
    return wrap(H.r2c(nd(x), dims, scale, forward), x._device)


def _c2r(x, dims, scale, n, forward):
    return wrap(H.c2r(nd(x), dims, scale, n, forward), x._device)


#: op name -> kernel (numpy only; ember-cuda-cupy does not inherit these: it takes the host path)
KERNELS = {"_fft_c2c": _c2c, "_fft_r2c": _r2c, "_fft_c2r": _c2r}
