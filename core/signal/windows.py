"""``ember.signal.windows``: PyTorch's ``torch.signal.windows`` window functions, with ``sym=True``
(symmetric, for filter design) or ``sym=False`` (periodic: the symmetric window of ``M + 1``
points, less its last, for spectral analysis). Values are computed in float64 on the host and
created in the requested dtype (float32 or float64), as the top-level ``hann_window`` family."""
from __future__ import annotations

import math

from .. import _dtype as D
from ..ops import creation as CR
from ..ops import spectral_more as SM

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _make(name, values, M_, sym, dtype, device, requires_grad, one=1):
    """``values(n, L)`` for n < M, L the length of the symmetric window the points come from
    (windows of fewer than ``one + 1`` points are ones)."""
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if dt not in (D.float32, D.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    m = int(M_)
    if m < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={m}")
    length = m if sym else m + 1
    vals = [1.0] * m if m <= one else [values(i, length) for i in range(m)]
    r = CR.tensor(vals, dtype=D.float64, device=device).to(dt)
    return r.requires_grad_(True) if requires_grad else r


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``sum_k (-1)^k a[k] cos(2 pi k n / (M - 1))``."""
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return _make("general_cosine", SM.cosine_sum(tuple(a)), M, sym, dtype, device, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (``general_hamming`` with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (``general_hamming`` with alpha 0.54)."""
    return general_hamming(M, alpha=0.54, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (cosine coefficients 0.42, 0.5, 0.08)."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window ``1 - |2 n / (M - 1) - 1|``."""
    return _make("bartlett", SM.triangle, M, sym, dtype, device, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The cosine (sine) window ``sin(pi (n + 0.5) / M)``."""
    return _make("cosine", lambda n, L: math.sin(math.pi * (n + 0.5) / L), M, sym, dtype, device, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``exp(-|n - center| / tau)``, centred in the window unless ``center`` is given (periodic
    windows only)."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")

    def value(n, L):
        c = (L - 1) / 2 if center is None else center
        return math.exp(-abs(n - c) / tau)
    # a given center makes even a one-point window a value of the formula
    return _make("exponential", value, M, sym, dtype, device, requires_grad, one=1 if center is None else 0)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """``exp(-((n - c) / std)^2 / 2)``, c the middle of the window."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _make("gaussian", lambda n, L: math.exp(-0.5 * ((n - (L - 1) / 2) / std) ** 2), M, sym, dtype, device,
                 requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta)``."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    norm = SM.bessel_i0(beta)

    def value(n, L):
        r = 2.0 * n / (L - 1) - 1.0
        return SM.bessel_i0(beta * math.sqrt(max(0.0, 1.0 - r * r))) / norm
    return _make("kaiser", value, M, sym, dtype, device, requires_grad)
