"""The discrete Fourier transform kernels on numpy arrays: the host functions of the kernel ops
of :mod:`ember.ops.spectral` (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``), run by dispatch with
copies where a backend has no kernel for them, and cpu_numpy's kernels (on its views).

``scale`` is the factor applied to the result, independent of the direction: ``"none"`` (1),
``"sqrt"`` (1/sqrt(N)) or ``"n"`` (1/N), N the product of the signal sizes of the transformed
dims. numpy.fft (pocketfft) computes complex64 for float32/complex64 input and complex128 for
float64/complex128, so the results keep ember's dtypes; the casts below only guard that. ``lib``
is the FFT module (``numpy.fft`` by default; any module with numpy.fft's ``fftn``, ``ifftn``,
``rfftn`` and ``irfftn``, such as ``scipy.fft``, which ember-cpu-numpy's kernels use).
"""
from __future__ import annotations

import numpy as np

__all__ = ["c2c", "r2c", "c2r", "NUMPY_NORM"]

#: numpy's ``norm=`` giving ``scale`` for a forward (``True``) or an inverse (``False``) function
NUMPY_NORM = {(True, "none"): "backward", (True, "sqrt"): "ortho", (True, "n"): "forward",
              (False, "none"): "forward", (False, "sqrt"): "ortho", (False, "n"): "backward"}

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
               np.dtype(np.complex64): np.complex64, np.dtype(np.complex128): np.complex128}
_REAL_OF = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


def c2c(x, dims, scale, forward, lib=np.fft):
    """The complex transform of complex ``x`` over ``dims`` (forward: exp(-2 pi i jk/n))."""
    if not dims:
        return np.array(x, copy=True)
    f = lib.fftn if forward else lib.ifftn
    return f(x, axes=list(dims), norm=NUMPY_NORM[forward, scale]).astype(x.dtype, copy=False)


def r2c(x, dims, scale, forward, lib=np.fft):
    """The transform of real ``x`` over ``dims``, the last of them one-sided (``n // 2 + 1``
    entries, the others follow by Hermitian symmetry)."""
    out = lib.rfftn(x, axes=list(dims), norm=NUMPY_NORM[True, scale])
    if not forward:  # the inverse direction of a real signal is the conjugate of the forward one
        np.conjugate(out, out=out)
    return out.astype(_COMPLEX_OF[x.dtype], copy=False)


def c2r(x, dims, scale, n, forward, lib=np.fft):
    """The real signal of the one-sided Hermitian spectrum ``x`` over ``dims``: the last of them
    holds ``n // 2 + 1`` entries and gives ``n`` outputs (the imaginary parts of the entries that
    are their own mirror image are ignored)."""
    if forward:
        x = np.conjugate(x)
    sizes = [x.shape[d] for d in dims[:-1]] + [n]
    out = lib.irfftn(x, s=sizes, axes=list(dims), norm=NUMPY_NORM[False, scale])
    return out.astype(_REAL_OF[x.dtype], copy=False)
