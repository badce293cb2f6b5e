"""``ember.fft``: PyTorch's ``torch.fft`` namespace (docs/fft.md).

The transforms are composites over three kernel ops (:mod:`ember.ops.spectral`: ``_fft_c2c``,
``_fft_r2c``, ``_fft_c2r``) that a backend may implement; a backend without them computes them
on the host with numpy.fft (copies to and from the device, reported as "host" in the
conformance suite's coverage table).
"""
from __future__ import annotations

from ._tensor import Tensor
from .ops import spectral as _S
from .ops import spectral_more as _M

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
           "Tensor"]

fft = _S.fft
ifft = _S.ifft
fft2 = _S.fft2
ifft2 = _S.ifft2
fftn = _S.fftn
ifftn = _S.ifftn
rfft = _S.rfft
irfft = _S.irfft
rfft2 = _S.rfft2
irfft2 = _S.irfft2
rfftn = _S.rfftn
irfftn = _S.irfftn
hfft = _S.hfft
ihfft = _S.ihfft
hfft2 = _S.hfft2
ihfft2 = _S.ihfft2
hfftn = _S.hfftn
ihfftn = _S.ihfftn
fftfreq = _M.fftfreq
rfftfreq = _M.rfftfreq
fftshift = _M.fftshift
ifftshift = _M.ifftshift
