"""Spatial utilities: ``F.pad``, ``F.interpolate``/``upsample``, ``F.grid_sample``, ``F.affine_grid``,
pixel (un)shuffle and channel shuffle."""
from __future__ import annotations

import math
from fractions import Fraction
import numbers
import struct
import warnings

from ... import _dtype as D
from ...ops import creation as _factory
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops.autocast import policy as _amp_policy
from ._pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from ._util import check_tensor, desc

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _index_pad(x: Tensor, d: int, lo: int, hi: int, mode: str) -> Tensor:
    n = x.shape[d]
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise RuntimeError(f"pad: Padding size should be less than the corresponding input dimension, but got: "
                               f"padding ({lo}, {hi}) at dimension {d} of input {list(x.shape)}")
        idx = [abs(i) if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in range(-lo, n + hi)]
    elif mode == "replicate":
        if n == 0:
            raise RuntimeError(f"pad: input dimension {d} of {list(x.shape)} is empty, it can't be replicated")
        idx = [min(max(i, 0), n - 1) for i in range(-lo, n + hi)]
    else:  # circular
        if lo > n or hi > n:
            raise RuntimeError(f"pad: Padding value causes wrapping around more than once (padding ({lo}, {hi}) at "
                               f"dimension {d} of input {list(x.shape)}).")
        idx = [i % n for i in range(-lo, n + hi)]
    t = _factory.tensor(idx, dtype=D.int64, device=x.device)
    return x.index_select(d, t)


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)`` (last dim
    first). Modes 'constant' (with ``value``), 'reflect', 'replicate', 'circular'; negative
    amounts crop."""
    check_tensor(input, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode == "constant":
        return _nnops.constant_pad_nd(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    npad = len(pad) // 2
    if input.dim() < npad + 1:
        raise NotImplementedError(f"pad: {mode} padding of {npad} dims expects at least {npad + 1}-D input, got "
                                  f"{desc(input)}")
    x = input
    for i in range(npad):
        d = input.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo == 0 and hi == 0:
            continue
        if lo < 0 or hi < 0:
            x = x.narrow(d, max(-lo, 0), x.shape[d] - max(-lo, 0) - max(-hi, 0))
            lo, hi = max(lo, 0), max(hi, 0)
        x = _index_pad(x, d, lo, hi, mode)
    return x


# -- interpolate ----------------------------------------------------------------------------------

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _src_index(o, scale, align_corners, in_size, out_size, cubic, rnd=float):
    """The source coordinate of output ``o``; ``rnd`` rounds each step to the precision PyTorch's
    kernel computes it in (float32 for all but float64 inputs), so that a weight that comes out as
    exactly 0 there (an inf tap times 0 gives NaN) does here too."""
    if align_corners:
        return rnd(rnd((in_size - 1) / (out_size - 1)) * o) if out_size > 1 else 0.0
    if rnd is float:
        s = scale * (o + 0.5) - 0.5
    else:  # one rounding of the exact value: PyTorch's build fuses it into a float32 multiply-add
        s = rnd(float(Fraction(rnd(scale)) * Fraction(o + 0.5) - Fraction(1, 2)))
    return s if cubic or s > 0 else 0.0


def _cubic_coeffs(t, A=-0.75):
    def c1(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def c2(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return (c2(t + 1), c1(t), c1(1 - t), c2(2 - t))


def _f32(v: float) -> float:
    """``v`` rounded to float32 (PyTorch's nearest kernels compute their source index in float)."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _nearest_index(in_size, out_size, scale, mode, nsp, double):
    """The source index of each output position for 'nearest' / 'nearest-exact', as PyTorch's CPU
    kernels compute it: ``floor(o * scale)`` (``floor((o + 0.5) * scale)``) in float32 (float64
    for double inputs, except 2-d), with the 2-d 'nearest' kernel's shortcuts for an unchanged
    or doubled size."""
    if mode == "nearest" and nsp == 2:
        if out_size == in_size:
            return list(range(out_size))
        if out_size == 2 * in_size:
            return [o >> 1 for o in range(out_size)]
        double = False
    rnd = float if double else _f32
    s = rnd(scale)
    off = 0.5 if mode == "nearest-exact" else 0.0
    return [min(math.floor(rnd(rnd(o + off) * s)), in_size - 1) for o in range(out_size)]


def _interp_dim(x, d, in_size, out_size, scale, mode, align_corners):
    dev = x.device
    shape = [1] * x.dim()
    shape[d] = out_size
    if mode in ("nearest", "nearest-exact"):
        idx = _nearest_index(in_size, out_size, scale, mode, x.dim() - 2, x.dtype == D.float64)
        return x.index_select(d, _factory.tensor(idx, dtype=D.int64, device=dev))
    if mode != "bicubic" and out_size == in_size:
        # PyTorch's linear kernels take a kept dim's taps as (i, i) with weights (1, 0): an inf becomes NaN
        return x + x * 0
    if mode == "bicubic":
        taps = [[], [], [], []]
        ws = [[], [], [], []]
        for o in range(out_size):
            s = _src_index(o, scale, align_corners, in_size, out_size, True)
            i0 = math.floor(s)
            cs = _cubic_coeffs(s - i0)
            for k in range(4):
                taps[k].append(min(max(i0 - 1 + k, 0), in_size - 1))
                ws[k].append(cs[k])
        out = None
        for k in range(4):
            part = x.index_select(d, _factory.tensor(taps[k], dtype=D.int64, device=dev))
            w = _factory.tensor(ws[k], dtype=x.dtype, device=dev).reshape(shape)
            out = part * w if out is None else out + part * w
        return out
    i0s, i1s, ls = [], [], []
    rnd = float if x.dtype == D.float64 else _f32
    for o in range(out_size):
        s = _src_index(o, scale, align_corners, in_size, out_size, False, rnd)
        i0 = min(int(math.floor(s)), in_size - 1)
        i1 = min(i0 + 1, in_size - 1)
        i0s.append(i0)
        i1s.append(i1)
        ls.append(min(max(rnd(s - i0), 0.0), 1.0))
    a = x.index_select(d, _factory.tensor(i0s, dtype=D.int64, device=dev))
    b = x.index_select(d, _factory.tensor(i1s, dtype=D.int64, device=dev))
    lam = _factory.tensor(ls, dtype=x.dtype, device=dev).reshape(shape)
    # (1 - lam) * a + lam * b, as PyTorch: an inf tap with weight 1 stays inf (a + (b - a) * lam gives NaN)
    return a * (1 - lam) + b * lam


def _is_integer(v) -> bool:
    """An integer size: a python or numpy integer (not a bool) or an integer tensor."""
    if isinstance(v, Tensor):
        return v.dtype.category == D._INT
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


@_amp_policy("interpolate")
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize (N, C, *spatial) to ``size`` or by ``scale_factor`` with 'nearest', 'nearest-exact',
    'linear', 'bilinear', 'bicubic', 'trilinear' or 'area' (PyTorch's coordinate conventions)."""
    check_tensor(input, "interpolate")
    nsp = input.dim() - 2
    if nsp < 1:
        raise ValueError(f"interpolate: expected an input with at least 3 dims (N, C, *spatial), got {desc(input)}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif mode in _LINEAR_MODES:
        if _LINEAR_MODES[mode] != nsp:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{_LINEAR_MODES[mode] + 2}D input")
        align_corners = bool(align_corners)
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by ember yet")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    in_sp = list(input.shape[2:])
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * nsp
        if len(sizes) != nsp:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {in_sp} and output size of {size}.")
        if not all(_is_integer(s) for s in sizes):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                            f"but got size with types {[type(s) for s in sizes]}")
        out_sp = [int(s) for s in sizes]
        sf = None
    else:
        many = isinstance(scale_factor, (list, tuple))
        sf = [float(s) for s in scale_factor] if many else [float(scale_factor)] * nsp
        if len(sf) != nsp:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {in_sp} and scale_factor of shape {scale_factor}.")
        if recompute_scale_factor or mode == "area":
            out_sp = [math.floor(in_sp[i] * sf[i]) for i in range(nsp)]
            sf = None
        else:
            out_sp = [int(in_sp[i] * sf[i]) for i in range(nsp)]
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nsp - 1](input, out_sp)
    if any(v <= 0 for v in in_sp + out_sp):
        names = ("D", "H", "W")[3 - nsp:]
        fmt = lambda v: ", ".join(f"{n}: {s}" for n, s in zip(names, v))  # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(in_sp)})"
                           f"{' and' if nsp == 1 else ''} output ({fmt(out_sp)})")
    if input.shape[1] == 0:
        raise RuntimeError(f"Non-empty {input.dim()}D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")
    # the kernels' scale: 1 / scale_factor where one was given (and is positive), else in / out
    scales = [1.0 / sf[i] if sf is not None and sf[i] > 0 else in_sp[i] / out_sp[i] for i in range(nsp)]
    # the interpolating modes compute float16 / bfloat16 in float32 and round once, as PyTorch
    x = input.float() if mode in _LINEAR_MODES and input.dtype in (D.float16, D.bfloat16) else input
    for i in range(nsp):
        x = _interp_dim(x, 2 + i, in_sp[i], out_sp[i], scales[i], mode, align_corners)
    return x.to(input.dtype)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate`."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", UserWarning,
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- grid_sample / affine_grid ----------------------------------------------------------------------

def _unnormalize(g, size, align_corners):
    if align_corners:
        return (g + 1) * ((size - 1) / 2)
    return ((g + 1) * size - 1) / 2


def _reflect(c, lo2, hi2):
    """Reflect coordinates into [lo2/2, hi2/2] (PyTorch's reflect_coordinates with doubled bounds)."""
    if lo2 == hi2:
        return c * 0.0
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    c = _ops.abs(c - mn)
    extra = _ops.fmod(c, span)
    flips = _ops.floor(c / span)
    return _ops.where(_ops.remainder(flips, 2) == 0, extra + mn, span - extra + mn)


def _source_coords(g, size, padding_mode, align_corners):
    c = _unnormalize(g, size, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


@_amp_policy("grid_sample")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) at the normalised (x, y) locations of ``grid`` (N, Ho, Wo, 2), with
    'bilinear', 'nearest' or 'bicubic' interpolation and 'zeros', 'border' or 'reflection' padding."""
    check_tensor(input, "grid_sample")
    check_tensor(grid, "grid_sample", "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample: expected 4-D input (N, C, H, W) and grid (N, Ho, Wo, 2) with the same N, "
                           f"got input {desc(input)} and grid {desc(grid)}")
    align_corners = bool(align_corners)
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1:3]
    x = _source_coords(grid[..., 0], W, padding_mode, align_corners)
    y = _source_coords(grid[..., 1], H, padding_mode, align_corners)
    flat = input.reshape(N, C, H * W)

    def tap(ix, iy):
        """Values at integer coords (N, Ho, Wo) (float tensors), zero outside the image."""
        inside = (ix >= 0) & (ix <= W - 1) & (iy >= 0) & (iy <= H - 1)
        ixc = ix.clamp(0, W - 1).to(D.int64)
        iyc = iy.clamp(0, H - 1).to(D.int64)
        idx = (iyc * W + ixc).reshape(N, 1, Ho * Wo).expand(N, C, Ho * Wo)
        v = flat.gather(2, idx).reshape(N, C, Ho, Wo)
        return _ops.where(inside.unsqueeze(1), v, 0.0)  # (a select: an inf at the clamped tap stays out)

    if mode == "nearest":
        return tap(_ops.round(x), _ops.round(y))
    x0 = _ops.floor(x)
    y0 = _ops.floor(y)
    if mode == "bilinear":
        wx = (x - x0).unsqueeze(1)
        wy = (y - y0).unsqueeze(1)
        return (tap(x0, y0) * (1 - wx) * (1 - wy) + tap(x0 + 1, y0) * wx * (1 - wy)
                + tap(x0, y0 + 1) * (1 - wx) * wy + tap(x0 + 1, y0 + 1) * wx * wy)
    # bicubic: 4x4 taps; coordinates for padding are taken before the floor, as PyTorch
    xr = _unnormalize(grid[..., 0], W, align_corners)
    yr = _unnormalize(grid[..., 1], H, align_corners)
    x0 = _ops.floor(xr)
    y0 = _ops.floor(yr)
    tx = (xr - x0).unsqueeze(1)
    ty = (yr - y0).unsqueeze(1)
    cx = _cubic_coeffs(tx)
    cy = _cubic_coeffs(ty)
    out = None
    for j in range(4):
        row = None
        for i in range(4):
            ix = x0 - 1 + i
            iy = y0 - 1 + j
            if padding_mode != "zeros":
                ix = _source_coords((ix * 2 + 1) / W - 1 if not align_corners else ix * 2 / (W - 1) - 1 if W > 1
                                    else ix * 0.0, W, padding_mode, align_corners)
                iy = _source_coords((iy * 2 + 1) / H - 1 if not align_corners else iy * 2 / (H - 1) - 1 if H > 1
                                    else iy * 0.0, H, padding_mode, align_corners)
                ix, iy = _ops.round(ix), _ops.round(iy)
            v = tap(ix, iy) * cx[i]
            row = v if row is None else row + v
        out = row * cy[j] if out is None else out + row * cy[j]
    return out


def _base_coords(n, align_corners, dtype, dev):
    if n <= 1:
        return _factory.zeros(max(n, 1), dtype=dtype, device=dev)
    r = _factory.linspace(-1.0, 1.0, n, dtype=dtype, device=dev)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) for affine matrices ``theta`` (N, 2, 3)
    (or (N, 3, 4)) and an output ``size`` (N, C, H, W) (or (N, C, D, H, W))."""
    check_tensor(theta, "affine_grid", "theta")
    align_corners = bool(align_corners)
    size = list(size)
    if theta.dtype.category != D._FLOAT:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    dt, dev = theta.dtype, theta.device
    if len(size) in (4, 5) and min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{list(theta.shape)}.")
        N, _, H, W = size
        xs = _base_coords(W, align_corners, dt, dev).reshape(1, W).expand(H, W)
        ys = _base_coords(H, align_corners, dt, dev).reshape(H, 1).expand(H, W)
        base = _ops.stack([xs, ys, _factory.ones((H, W), dtype=dt, device=dev)], -1).reshape(1, H * W, 3)
        return base.matmul(theta.transpose(1, 2)).reshape(N, H, W, 2)
    if len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{list(theta.shape)}.")
        N, _, Dd, H, W = size
        xs = _base_coords(W, align_corners, dt, dev).reshape(1, 1, W).expand(Dd, H, W)
        ys = _base_coords(H, align_corners, dt, dev).reshape(1, H, 1).expand(Dd, H, W)
        zs = _base_coords(Dd, align_corners, dt, dev).reshape(Dd, 1, 1).expand(Dd, H, W)
        base = _ops.stack([xs, ys, zs, _factory.ones((Dd, H, W), dtype=dt, device=dev)], -1).reshape(1, -1, 4)
        return base.matmul(theta.transpose(1, 2)).reshape(N, Dd, H, W, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                              f"respectively. Got size {size}.")


# -- shuffles ----------------------------------------------------------------------------------------

def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    check_tensor(input, "pixel_shuffle")
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *lead, C, H, W = input.shape
    if C % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={C} is not divisible by {r * r}")
    oc = C // (r * r)
    x = input.reshape(tuple(lead) + (oc, r, r, H, W))
    n = len(lead)
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(lead) + (oc, H * r, W * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    check_tensor(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *lead, C, H, W = input.shape
    if H % r or W % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but got "
                           f"height={H}, width={W} and downscale_factor={r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (C, H // r, r, W // r, r))
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(lead) + (C * r * r, H // r, W // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: (N, g, C/g, *) -> (N, C/g, g, *)."""
    check_tensor(input, "channel_shuffle")
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    N, C = input.shape[:2]
    if C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((N, groups, C // groups) + rest).transpose(1, 2).reshape((N, C) + rest)


native_channel_shuffle = channel_shuffle
