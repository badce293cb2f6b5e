"""``torch.fft``'s helpers (``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``) and the
window functions (``hann_window``, ``hamming_window``, ``blackman_window``, ``bartlett_window``,
``kaiser_window``), written in ember ops.

A window is computed in float64 on the host (python's math, a few hundred values at most in
practice) and created on the device in the requested dtype: the values are PyTorch's formulas
rounded once, where PyTorch evaluates them in the target dtype (a difference of an ulp or so in
float32).
"""
from __future__ import annotations

import math

from .. import _dtype as D
from . import _args as U
from . import creation as CR
from . import shape as SH

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


# -- frequencies and shifts -------------------------------------------------------------------------

def _freq_dtype(dtype, op):
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{op} requires a floating point or complex dtype")
    return dt


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of a length-``n`` transform with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    dt = _freq_dtype(dtype, "fftfreq")
    n = int(n)
    if n < 0:
        CR.empty(n)  # PyTorch's negative-dimension error
    k = [i if i < (n + 1) // 2 else i - n for i in range(n)]
    r = CR.tensor(k, dtype=D.float64, device=device).mul_(1.0 / (d * n) if n else math.nan).to(dt)
    return _finish(r, out, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of :func:`ember.fft.rfft`: ``[0, ..., n // 2] / (d * n)``."""
    dt = _freq_dtype(dtype, "rfftfreq")
    n = int(n)
    if n < 0:
        CR.empty(n)  # PyTorch's negative-dimension error
    r = CR.tensor(list(range(n // 2 + 1)), dtype=D.float64, device=device).mul_(1.0 / (d * n) if n else math.nan)
    return _finish(r.to(dt), out, requires_grad)


def _finish(r, out, requires_grad):
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r.requires_grad_(True) if requires_grad else r


def _shift_dims(x, dim, op):
    if dim is None:
        return tuple(range(x.dim()))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(U.wrap_dim(d, x.dim(), op) for d in dim)


def fftshift(input, dim=None):
    """``input`` rolled so that the zero frequency is in the middle of each of ``dim`` (all dims
    by default)."""
    U.tensor_arg(input, "fft_fftshift")
    dims = _shift_dims(input, dim, "fft_fftshift")
    if not dims:
        return input.clone()
    return SH.roll(input, tuple(input.shape[d] // 2 for d in dims), dims)


def ifftshift(input, dim=None):
    """The inverse of :func:`fftshift`."""
    U.tensor_arg(input, "fft_ifftshift")
    dims = _shift_dims(input, dim, "fft_ifftshift")
    if not dims:
        return input.clone()
    return SH.roll(input, tuple(-(input.shape[d] // 2) for d in dims), dims)


# -- windows -----------------------------------------------------------------------------------------

def _window(op, values_of, window_length, periodic, dtype, device, requires_grad):
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dt}")
    n = int(window_length)
    if n < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={n}")
    if n <= 1:
        vals = [1.0] * n
    else:
        m = n + 1 if periodic else n  # a periodic window is the symmetric one of n + 1 points, less its last
        vals = [values_of(i, m) for i in range(n)]
    r = CR.tensor(vals, dtype=D.float64, device=device).to(dt)
    return r.requires_grad_(True) if requires_grad else r


def cosine_sum(coeffs):
    """``sum_k (-1)^k a_k cos(2 pi k i / (m - 1))``: the generalised cosine windows."""
    def value(i, m):
        t = 2 * math.pi * i / (m - 1)
        return sum((-1) ** k * a * math.cos(k * t) for k, a in enumerate(coeffs))
    return value


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi i / (N - 1))`` (N = window_length + 1 when periodic)."""
    return _window("hann_window", cosine_sum((0.5, 0.5)), window_length, periodic, dtype, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi i / (N - 1))``."""
    return _window("hamming_window", cosine_sum((alpha, beta)), window_length, periodic, dtype, device,
                   requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi i / (N - 1)) + 0.08 cos(4 pi i / (N - 1))``."""
    return _window("blackman_window", cosine_sum((0.42, 0.5, 0.08)), window_length, periodic, dtype, device,
                   requires_grad)


def triangle(i, m):
    return 1.0 - abs(2.0 * i / (m - 1) - 1.0)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window ``1 - |2 i / (N - 1) - 1|``."""
    return _window("bartlett_window", triangle, window_length, periodic, dtype, device, requires_grad)


def bessel_i0(x: float) -> float:
    """The modified Bessel function of the first kind, order 0, by its power series."""
    term, total, k = 1.0, 1.0, 0
    q = x * x / 4.0
    while term > 1e-17 * total:
        k += 1
        term *= q / (k * k)
        total += term
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2 i / (N - 1) - 1)^2)) / I0(beta)``."""
    norm = bessel_i0(beta)

    def value(i, m):
        r = 2.0 * i / (m - 1) - 1.0
        return bessel_i0(beta * math.sqrt(max(0.0, 1.0 - r * r))) / norm
    return _window("kaiser_window", value, window_length, periodic, dtype, device, requires_grad)
