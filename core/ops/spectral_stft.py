"""The short-time Fourier transform and its inverse (``stft``, ``istft``; also Tensor methods),
written over :mod:`ember.ops.spectral`'s transforms: frames are a strided view of the (padded)
signal, and the inverse overlap-adds its frames with ``index_add`` and divides by the
overlap-added squared window."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from . import _args as U
from . import complexops as CX
from . import creation as CR
from . import indexing as IX
from . import spectral as S
from .declare import composite

__all__ = ["stft", "istft"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_signal(x, p: int, mode: str):
    """``x`` (batch, length) padded by ``p`` samples at both ends of its last dim."""
    n = x.shape[-1]
    if mode == "constant":
        return S.PAD.constant_pad_nd(x, (p, p), 0.0)
    if mode == "reflect":
        if p >= n:
            raise RuntimeError(f"stft: Padding size should be less than the corresponding input dimension, but got: "
                               f"padding ({p}, {p}) at dimension 1 of input {list(x.shape)}")
        idx = [abs(i) if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in range(-p, n + p)]
    elif mode == "replicate":
        idx = [min(max(i, 0), n - 1) for i in range(-p, n + p)]
    else:
        idx = [i % n for i in range(-p, n + p)]
    return x.index_select(-1, CR.tensor(idx, dtype=D.int64, device=x.device))


def _full_window(window, win_length: int, n_fft: int, dtype, device, op: str):
    if window is None:
        warnings.warn(f"{op}: a window was not provided, so a rectangular window is applied (the same window "
                      "must be given to stft and istft for a lossless round trip); pass window=ember.ones(n_fft) "
                      "to silence this warning.", UserWarning, stacklevel=4)
        window = CR.ones(win_length, dtype=dtype, device=device)
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    if win_length < n_fft:
        lo = (n_fft - win_length) // 2
        window = S.PAD.constant_pad_nd(window, (lo, n_fft - win_length - lo), 0.0)
    return window


def _lengths(n_fft, hop_length, win_length, op):
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


@composite("stft", out=False, group="fft")
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform of a 1-d signal or a batch of them: ``(batch?, n_freq,
    n_frames)`` complex, frame ``t`` being the transform of ``window * x[t * hop : t * hop + n_fft]``
    (of the signal padded by ``n_fft // 2`` with ``pad_mode`` when ``center``)."""
    x = U.tensor_arg(input, "stft")
    cplx = x._dtype.is_complex or (window is not None and window._dtype.is_complex)
    if return_complex is None:
        if not cplx:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError("stft: expected a tensor of floating point or complex values")
    if x.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, got {x.dim()}D")
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    n_fft = int(n_fft)
    hop, win = _lengths(n_fft, hop_length, win_length, "stft")
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if center:
        if pad_mode not in _PAD_MODES:
            raise NotImplementedError(f"Unrecognised padding mode {pad_mode}")
        x = _pad_signal(x, n_fft // 2, pad_mode)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft < {x.shape[-1]}, but got n_fft={n_fft}")
    w = _full_window(window, win, n_fft, x._dtype if not x._dtype.is_complex else D.to_real(x._dtype), x.device,
                     "stft")
    if align_to_window and win < n_fft:  # frames start where the window's support starts
        lo = (n_fft - win) // 2
        x = S.PAD.constant_pad_nd(x, (lo, n_fft - win - lo), 0.0)
    frames = x.unfold(-1, n_fft, hop) * w
    if onesided is None:
        onesided = not cplx
    elif onesided and cplx:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = S.rfft(frames, norm=norm) if onesided else S.fft(frames, norm=norm)
    out = spec.transpose(-1, -2)
    if not batched:
        out = out.squeeze(0)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated: ember.view_as_real of the complex result "
                      "gives the same values.", UserWarning, stacklevel=3)
        return CX.view_as_real(out)
    return out


def _overlap_add(frames, hop: int):
    """``(batch, n_frames, n_fft)`` frames summed at their offsets ``t * hop``: (batch, length)."""
    b, nf, n = frames.shape
    total = n + hop * (nf - 1)
    idx = (CR.arange(nf, device=frames.device).unsqueeze(1) * hop + CR.arange(n, device=frames.device)).reshape(-1)
    out = CR.zeros((b, total), dtype=frames.dtype, device=frames.device)
    return IX.index_add(out, 1, idx, frames.reshape(b, nf * n))


@composite("istft", out=False, group="fft")
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of :func:`stft`: the frames' inverse transforms, windowed, overlap-added and
    divided by the overlap-added squared window (which must not vanish: the NOLA condition)."""
    z = U.tensor_arg(input, "istft")
    if not z._dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if z.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, got {z.dim()}D")
    n_fft = int(n_fft)
    hop, win = _lengths(n_fft, hop_length, win_length, "istft")
    batched = z.dim() == 3
    if not batched:
        z = z.unsqueeze(0)
    fft_size, nf = z.shape[-2], z.shape[-1]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided:
        if fft_size != n_fft // 2 + 1:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
        if return_complex:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
    elif fft_size != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    norm = "ortho" if normalized else "backward"
    frames = z.transpose(-1, -2)
    if return_complex:
        frames = S.ifft(frames, norm=norm)
    else:  # a real signal: the one-sided half of a two-sided input is read as a Hermitian spectrum
        frames = S.irfft(frames.narrow(-1, 0, n_fft // 2 + 1), n=n_fft, norm=norm)
    w = _full_window(window, win, n_fft, D.to_real(z._dtype), z.device, "istft")
    y = _overlap_add(frames * w, hop)
    env = _overlap_add((w * w).expand(1, nf, n_fft), hop)[0]
    total = y.shape[-1]
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + int(length)
    else:
        end = total - n_fft // 2 if center else total
    end = min(end, total)
    y, env = y[:, start:end], env[start:end]
    if not env.numel():  # PyTorch's NOLA check fails on an empty envelope too
        raise RuntimeError(f"istft: the signal is empty ({nf} frames of n_fft={n_fft}, center={bool(center)}, "
                           f"length={length}), so the window overlap add has no minimum")
    if float(env.abs().min()) < 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {float(env.abs().min())}")
    y = y / env
    if length is not None and y.shape[-1] < length:
        warnings.warn("istft: the signal is shorter than the length asked for; padding it with zeros at the end",
                      UserWarning, stacklevel=3)
        y = S.PAD.constant_pad_nd(y, (0, int(length) - y.shape[-1]), 0.0)
    return y if batched else y.squeeze(0)
