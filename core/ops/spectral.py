"""The discrete Fourier transforms: three kernel ops a backend may implement, and ``torch.fft``'s
functions as composites over them (:mod:`ember.fft` is their namespace).

* ``_fft_c2c(x, dims, scale, forward)``: complex to complex over ``dims``;
* ``_fft_r2c(x, dims, scale, forward)``: real to the one-sided complex spectrum (the last of
  ``dims`` keeps ``n // 2 + 1`` entries);
* ``_fft_c2r(x, dims, scale, n, forward)``: a one-sided Hermitian spectrum to the real signal
  of ``n`` samples along the last of ``dims``.

``forward`` picks the sign of the exponent (``exp(-2 pi i jk/n)`` when True); ``scale`` the
factor, independent of the direction: ``"none"``, ``"sqrt"`` (1/sqrt(N)) or ``"n"`` (1/N), N the
product of the signal sizes. A transform's adjoint is the opposite direction with the same
scale, which is what the backward formulas use (written in these ops, so double backward works).
None of them has a decomposition: each declares a host path (:mod:`ember.ops.spectral_host`,
numpy.fft), which dispatch runs with copies where a backend has no kernel.
"""
from __future__ import annotations

from .. import _dtype as D
from .._tensor import Tensor
from . import _args as U
from . import creation as CR
from . import spectral_host as H
from .declare import composite, defop
from .nn import padding as PAD

__all__: list = []  # the public functions are ember.fft's (not top-level names)

_LOW = (D.float16, D.bfloat16)


# -- the kernel ops ------------------------------------------------------------------------------

def _c2c_bw(ctx, g):
    _, dims, scale, forward = ctx.args
    return (c2c(g, dims, scale, not forward),)


@defop("_fft_c2c", backward=_c2c_bw, saves=(), out=False, method=False, group="fft", host=H.c2c)
def c2c(x, dims, scale, forward):
    """Complex-to-complex transform of ``x`` over ``dims`` (see the module docstring)."""
    return x._device, (x, tuple(dims), scale, bool(forward)), (x,)


def _r2c_bw(ctx, g):
    x, dims, scale, forward = ctx.args
    last = dims[-1]
    full = resize(g, last, x.shape[last])  # the omitted half of the spectrum had no gradient
    return (c2c(full, dims, scale, not forward).real,)


@defop("_fft_r2c", backward=_r2c_bw, saves=(), out=False, method=False, group="fft", host=H.r2c)
def r2c(x, dims, scale, forward):
    """Real-to-complex transform of ``x`` over ``dims``, one-sided along the last of them."""
    x._device._backend.check_dtype(D.to_complex(x._dtype), "_fft_r2c")  # a backend without complex dtypes
    return x._device, (x, tuple(dims), scale, bool(forward)), (x,)


def _hermitian_weights(g, last, n):
    """The multiplicity of each one-sided entry in the full spectrum of ``n`` entries: 1 for the
    entries that are their own mirror image (0, and n/2 for even n), 2 for the others, shaped to
    broadcast along dim ``last`` of ``g``."""
    m = n // 2 + 1
    twice = (n - 1) // 2
    w = [1.0] + [2.0] * twice + [1.0] * (m - 1 - twice)
    t = CR.tensor(w, dtype=D.to_real(g._dtype), device=g._device)
    return t.reshape((m,) + (1,) * (g.dim() - 1 - last))


def _c2r_bw(ctx, g):
    _, dims, scale, n, forward = ctx.args
    last = dims[-1]
    gx = r2c(g, dims, scale, not forward)
    if (n - 1) // 2 >= 1:
        gx = gx * _hermitian_weights(gx, last, n)
    return (gx,)


@defop("_fft_c2r", backward=_c2r_bw, saves=(), out=False, method=False, group="fft", host=H.c2r)
def c2r(x, dims, scale, n, forward):
    """Complex-to-real transform of the one-sided spectrum ``x`` over ``dims`` (``n`` samples
    along the last of them, which holds ``n // 2 + 1`` entries)."""
    return x._device, (x, tuple(dims), scale, int(n), bool(forward)), (x,)


# -- argument handling -------------------------------------------------------------------------------

def scale_of(norm, forward: bool) -> str:
    """The kernel's ``scale`` for PyTorch's ``norm=`` of a transform in direction ``forward``."""
    if norm is None or norm == "backward":
        return "none" if forward else "n"
    if norm == "forward":
        return "n" if forward else "none"
    if norm == "ortho":
        return "sqrt"
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _check_dtype(x, op: str) -> Tensor:
    U.tensor_arg(x, op)
    if x._dtype in _LOW:
        raise RuntimeError(f"Unsupported dtype {U.type_name(x._dtype)}")
    return x


def _float_input(x, op: str) -> Tensor:
    dt = _check_dtype(x, op)._dtype
    if dt.category < D._FLOAT:
        return x.to(D.get_default_dtype())
    return x


def complex_input(x, op: str) -> Tensor:
    x = _float_input(x, op)
    return x if x._dtype.is_complex else x.to(D.to_complex(x._dtype))


def real_input(x, op: str, message: str) -> Tensor:
    x = _float_input(x, op)
    if x._dtype.is_complex:
        raise RuntimeError(message.format(U.type_name(x._dtype)))
    return x


def wrap(dim, ndim: int, op: str) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return U.wrap_dim(dim, ndim, op)


def check_points(n) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def resize(x, d: int, n: int) -> Tensor:
    """``x`` trimmed or zero-padded at the end of dim ``d`` to ``n`` entries."""
    m = x._shape[d]
    if n == m:
        return x
    if n < m:
        return x.narrow(d, 0, n)
    pad = [0] * (2 * (x.dim() - d))
    pad[-1] = n - m
    return PAD.constant_pad_nd(x, tuple(pad), 0.0)


def dims_and_sizes(x, s, dim, op: str):
    """PyTorch's n-d arguments: the transformed dims (in the order given) and the signal size of
    each (``s``, where -1 keeps the input's size), or None where ``s`` is not given."""
    nd = x.dim()
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(s, int):
        s = (s,)
    if dim is None:
        if s is None:
            dims = tuple(range(nd))
        else:
            if len(s) > nd:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
            dims = tuple(range(nd - len(s), nd))
    else:
        dims = tuple(wrap(d, nd, op) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    if s is None:
        return dims, None
    return dims, [x._shape[d] if int(v) == -1 else check_points(int(v)) for v, d in zip(s, dims)]


def _resized(x, dims, sizes):
    for i, d in enumerate(dims):
        if sizes is not None:
            x = resize(x, d, sizes[i])
        check_points(x._shape[d])
    return x


def _n_or_none(n):
    return None if n is None else [check_points(int(n))]


# -- the transforms (composites) -------------------------------------------------------------------

def _c2c_public(op, x, s, dims, norm, forward):
    x = complex_input(x, op)
    dims, sizes = dims_and_sizes(x, s, dims, op)
    return c2c(_resized(x, dims, sizes), dims, scale_of(norm, forward), forward)


def _r2c_public(op, x, s, dims, norm, forward, message, name):
    x = real_input(x, op, message)
    dims, sizes = dims_and_sizes(x, s, dims, op)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    return r2c(_resized(x, dims, sizes), dims, scale_of(norm, forward), forward)


def _c2r_public(op, x, s, dims, norm, forward, name):
    x = complex_input(x, op)
    dims, sizes = dims_and_sizes(x, s, dims, op)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = dims[-1]
    given = None if s is None else int(s if isinstance(s, int) else s[-1])
    n = check_points(given if given is not None and given != -1 else 2 * (x._shape[last] - 1))
    if sizes is not None:
        x = _resized(x, dims[:-1], sizes[:-1])
    x = resize(x, last, n // 2 + 1)
    return c2r(x, dims, scale_of(norm, forward), n, forward)


def _one(op, x, n, dim):
    x = _check_dtype(x, op)
    d = wrap(dim, x.dim(), op)
    return _n_or_none(n), (d,)


@composite("fft_fft", method=False, group="fft")
def fft(input, n=None, dim=-1, norm=None):
    """The 1-d discrete Fourier transform of ``input`` along ``dim`` (``n``: trim or zero-pad)."""
    s, d = _one("fft_fft", input, n, dim)
    return _c2c_public("fft_fft", input, s, d, norm, True)


@composite("fft_ifft", method=False, group="fft")
def ifft(input, n=None, dim=-1, norm=None):
    """The 1-d inverse discrete Fourier transform."""
    s, d = _one("fft_ifft", input, n, dim)
    return _c2c_public("fft_ifft", input, s, d, norm, False)


@composite("fft_rfft", method=False, group="fft")
def rfft(input, n=None, dim=-1, norm=None):
    """The 1-d transform of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    msg = "rfft expects a real input tensor, but got {}"
    x = real_input(input, "fft_rfft", msg)  # PyTorch checks the dtype before the dim
    s, d = _one("fft_rfft", x, n, dim)
    return _r2c_public("fft_rfft", x, s, d, norm, True, msg, "rfft")


@composite("fft_ihfft", method=False, group="fft")
def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of :func:`hfft`: the one-sided inverse transform of a real signal."""
    msg = "ihfft expects a real input tensor, but got {}"
    x = real_input(input, "fft_ihfft", msg)
    s, d = _one("fft_ihfft", x, n, dim)
    return _r2c_public("fft_ihfft", x, s, d, norm, False, msg, "ihfft")


@composite("fft_irfft", method=False, group="fft")
def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of :func:`rfft`: ``n`` real samples (default ``2 * (m - 1)``) from a one-sided
    spectrum of ``m`` entries."""
    s, d = _one("fft_irfft", input, n, dim)
    return _c2r_public("fft_irfft", input, s, d, norm, False, "irfft")


@composite("fft_hfft", method=False, group="fft")
def hfft(input, n=None, dim=-1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its one-sided half: real output."""
    s, d = _one("fft_hfft", input, n, dim)
    return _c2r_public("fft_hfft", input, s, d, norm, True, "hfft")


@composite("fft_fft2", method=False, group="fft")
def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d transform (:func:`fftn` over ``dim``)."""
    return _c2c_public("fft_fft2", input, s, dim, norm, True)


@composite("fft_ifft2", method=False, group="fft")
def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d inverse transform."""
    return _c2c_public("fft_ifft2", input, s, dim, norm, False)


@composite("fft_fftn", method=False, group="fft")
def fftn(input, s=None, dim=None, norm=None):
    """The n-d transform over ``dim`` (all dims by default; the last ``len(s)`` with ``s``)."""
    return _c2c_public("fft_fftn", input, s, dim, norm, True)


@composite("fft_ifftn", method=False, group="fft")
def ifftn(input, s=None, dim=None, norm=None):
    """The n-d inverse transform."""
    return _c2c_public("fft_ifftn", input, s, dim, norm, False)


_REAL_N = "rfftn expects a real-valued input tensor, but got {}"
_IH_N = "Only supports floating-point dtypes, but found: {}"


@composite("fft_rfft2", method=False, group="fft")
def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d transform of a real signal, one-sided along the last dim."""
    return _r2c_public("fft_rfft2", input, s, dim, norm, True, _REAL_N, "rfftn")


@composite("fft_rfftn", method=False, group="fft")
def rfftn(input, s=None, dim=None, norm=None):
    """The n-d transform of a real signal, one-sided along the last of ``dim``."""
    return _r2c_public("fft_rfftn", input, s, dim, norm, True, _REAL_N, "rfftn")


@composite("fft_ihfft2", method=False, group="fft")
def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of :func:`hfft2`."""
    return _r2c_public("fft_ihfft2", input, s, dim, norm, False, _IH_N, "ihfftn")


@composite("fft_ihfftn", method=False, group="fft")
def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of :func:`hfftn`: one-sided inverse transform of a real signal."""
    return _r2c_public("fft_ihfftn", input, s, dim, norm, False, _IH_N, "ihfftn")


@composite("fft_irfft2", method=False, group="fft")
def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of :func:`rfft2`."""
    return _c2r_public("fft_irfft2", input, s, dim, norm, False, "irfftn")


@composite("fft_irfftn", method=False, group="fft")
def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of :func:`rfftn` (the last of ``dim`` gets ``s[-1]``, default ``2 * (m - 1)``)."""
    return _c2r_public("fft_irfftn", input, s, dim, norm, False, "irfftn")


@composite("fft_hfft2", method=False, group="fft")
def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-d transform of a Hermitian-symmetric signal given by its one-sided half."""
    return _c2r_public("fft_hfft2", input, s, dim, norm, True, "hfftn")


@composite("fft_hfftn", method=False, group="fft")
def hfftn(input, s=None, dim=None, norm=None):
    """The n-d transform of a Hermitian-symmetric signal given by its one-sided half (real)."""
    return _c2r_public("fft_hfftn", input, s, dim, norm, True, "hfftn")
