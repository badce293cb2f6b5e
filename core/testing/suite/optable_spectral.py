"""Op table, Fourier transforms (``ember.fft``, ``stft``/``istft``, the windows) against numpy.fft
in float64/complex128, on every layout, gradchecked in float64 (real inputs) and complex128
(:data:`SPECTRAL_GRADS`, complex inputs), twice where the formulas are transforms themselves.
The kernel ops ``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r`` are native on cpu and run on the host
elsewhere."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
CX = (ember.complex64, ember.complex128)
T = ember.fft
TOL = {"rtol": 1e-4, "atol": 1e-4}
S = (3, 8)
S3 = (2, 3, 6)


def _np_irfftn_default(a, axes):
    return np.fft.irfftn(a, axes=axes)


def _np_hfftn(a, axes):
    """The forward transform of the Hermitian signal whose one-sided half is ``a``."""
    return np.fft.irfftn(np.conj(a), axes=axes, norm="forward")


def _np_ihfftn(a, axes):
    return np.conj(np.fft.rfftn(a, axes=axes, norm="forward"))


def _np_stft(x, n_fft, hop, w):
    p = n_fft // 2
    xp = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)], mode="reflect")
    nf = 1 + (xp.shape[-1] - n_fft) // hop
    frames = np.stack([xp[..., t * hop:t * hop + n_fft] * w for t in range(nf)], -2)
    return np.swapaxes(np.fft.rfft(frames), -1, -2)


def _hann(n):
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


def _stft(x):
    return ember.stft(x, 8, hop_length=3, window=ember.hann_window(8, dtype=x.dtype, device=x.device),
                      return_complex=True)


def _stft_roundtrip(x):
    w = ember.hann_window(8, dtype=x.dtype, device=x.device)
    z = ember.stft(x, 8, hop_length=2, window=w, return_complex=True)
    return ember.istft(z, 8, hop_length=2, window=w, length=x.shape[-1])


SPECTRAL_CASES = [
    C("fft_fft", T.fft, np.fft.fft, [S], dtypes=F, grad=True, **TOL),
    C("fft_fft_n_pad_ortho", lambda a: T.fft(a, n=11, dim=0, norm="ortho"),
      lambda a: np.fft.fft(a, n=11, axis=0, norm="ortho"), [S], dtypes=F, grad=True, **TOL),
    C("fft_fft_complex", lambda a: T.fft(a, n=5), lambda a: np.fft.fft(a, n=5), [S], dtypes=CX, **TOL),
    C("fft_ifft", lambda a: T.ifft(a, norm="forward"), lambda a: np.fft.ifft(a, norm="forward"), [S], dtypes=CX,
      **TOL),
    C("fft_rfft", T.rfft, np.fft.rfft, [S], dtypes=F, grad=True, **TOL),
    C("fft_rfft_n_trim", lambda a: T.rfft(a, n=5, norm="forward"), lambda a: np.fft.rfft(a, n=5, norm="forward"),
      [S], dtypes=F, grad=True, **TOL),
    C("fft_irfft", T.irfft, np.fft.irfft, [S], dtypes=CX, **TOL),
    C("fft_irfft_odd_n", lambda a: T.irfft(a, n=9, dim=0, norm="ortho"),
      lambda a: np.fft.irfft(a, n=9, axis=0, norm="ortho"), [S], dtypes=CX, **TOL),
    C("fft_hfft", lambda a: T.hfft(a, n=10), lambda a: np.fft.hfft(a, n=10), [S], dtypes=CX, **TOL),
    C("fft_ihfft", T.ihfft, np.fft.ihfft, [S], dtypes=F, grad=True, **TOL),
    C("fft_fft2", T.fft2, np.fft.fft2, [S3], dtypes=F + CX, grad=True, **TOL),
    C("fft_ifftn_s", lambda a: T.ifftn(a, s=(4, 5)), lambda a: np.fft.ifftn(a, s=(4, 5), axes=(-2, -1)), [S3],
      dtypes=CX, **TOL),
    C("fft_fftn_dims", lambda a: T.fftn(a, dim=(2, 0)), lambda a: np.fft.fftn(a, axes=(2, 0)), [S3], dtypes=F,
      grad=True, **TOL),
    C("fft_rfftn", T.rfftn, np.fft.rfftn, [S3], dtypes=F, grad=True, **TOL),
    C("fft_rfft2_dims", lambda a: T.rfft2(a, dim=(2, 1)), lambda a: np.fft.rfftn(a, axes=(2, 1)), [S3], dtypes=F,
      grad=True, **TOL),
    C("fft_irfftn", T.irfftn, lambda a: _np_irfftn_default(a, (0, 1, 2)), [S3], dtypes=CX, **TOL),
    C("fft_irfft2_s", lambda a: T.irfft2(a, s=(4, 7)), lambda a: np.fft.irfftn(a, s=(4, 7), axes=(-2, -1)), [S3],
      dtypes=CX, **TOL),
    C("fft_hfftn", lambda a: T.hfftn(a, dim=(0, 2)), lambda a: _np_hfftn(a, (0, 2)), [S3], dtypes=CX, **TOL),
    C("fft_ihfft2", T.ihfft2, lambda a: _np_ihfftn(a, (-2, -1)), [S3], dtypes=F, grad=True, **TOL),
    C("fft_fftshift", T.fftshift, np.fft.fftshift, [(3, 5)], dtypes=F + CX, grad=True),
    C("fft_ifftshift_dim", lambda a: T.ifftshift(a, dim=1), lambda a: np.fft.ifftshift(a, axes=1), [(3, 5)],
      dtypes=F, grad=True),
    C("stft", _stft, lambda a: _np_stft(a, 8, 3, _hann(8)), [(2, 30)], dtypes=F, grad=True, **TOL),
    C("stft_istft_roundtrip", _stft_roundtrip, lambda a: a, [(2, 30)], dtypes=F, grad=True, **TOL),
]

#: complex-input gradchecks (complex128): name -> (function, input shape)
SPECTRAL_GRADS = {
    "fft_fft": (lambda a: T.fft(a, n=5), (3, 4)),
    "fft_ifft_ortho": (lambda a: T.ifft(a, norm="ortho"), (3, 4)),
    "fft_irfft_even": (lambda a: T.irfft(a, n=6), (2, 4)),
    "fft_irfft_odd": (lambda a: T.irfft(a, n=7, dim=0), (4, 3)),
    "fft_hfft_forward": (lambda a: T.hfft(a, norm="forward"), (2, 5)),
    "fft_fft2": (T.fft2, (3, 4)),
    "fft_irfftn": (lambda a: T.irfftn(a, s=(3, 5)), (3, 3)),
    "fft_hfftn": (T.hfftn, (3, 4)),
    "istft": (lambda z: ember.istft(z, 4, hop_length=1, window=ember.hann_window(4, dtype=ember.float64,
                                                                                  device=z.device)), (3, 6)),
}
