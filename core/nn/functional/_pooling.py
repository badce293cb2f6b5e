"""Pooling: max / average / adaptive / LP pooling and max unpooling."""
from __future__ import annotations

import math

from ... import _dtype as D
from ..._hoststep import host_step
from ...backend.shapes import pool_out
from ...ops import creation as _factory
from ... import ops as _ops
from ..._tensor import Tensor
from ...ops import nn as _nnops
from ...ops._args import dtype_not_implemented
from ...ops.autocast import policy as _amp_policy
from ._util import check_tensor, desc, ntuple

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _batched(op, input, nsp, nonempty=False):
    """``input`` with a batch dim, and whether it had one; ``nonempty`` refuses empty channel or
    spatial dims (only the batch may be empty), as PyTorch's max/avg/lp pooling does."""
    check_tensor(input, op)
    if input.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{op}: Expected {nsp + 1}D or {nsp + 2}D input tensor (got {desc(input)})")
    batched = input.dim() == nsp + 2
    if nonempty and any(s == 0 for s in input.shape[int(batched):]):
        raise RuntimeError(f"{op}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{list(input.shape)}")
    return (input, True) if batched else (input.unsqueeze(0), False)


def _pool_args(op, nsp, x, kernel_size, stride, padding, dilation, ceil_mode):
    k = ntuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else ntuple(stride, nsp, "stride", op)
    p = ntuple(padding, nsp, "padding", op)
    d = ntuple(dilation, nsp, "dilation", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride must be greater than zero, but got {list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {list(d)}")
    for i in range(nsp):
        if p[i] < 0 or p[i] > k[i] // 2:  # (as PyTorch: of the kernel size, whatever the dilation)
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={list(p)}, "
                               f"kernel_size={list(k)} and dilation={list(d)}")
    sp = x.shape[2:]
    out = [pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nsp)]
    if any(o <= 0 for o in out):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, [x.shape[1]] + out))}). Output size is too small")
    return k, s, p, d


def _max_pool(op, nsp, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = _batched(op, input, nsp, True)
    k, s, p, d = _pool_args(op, nsp, x, kernel_size, stride, padding, dilation, ceil_mode)
    out, idx = _nnops.max_pool(x, k, s, p, d, ceil_mode)
    if not batched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-d max pooling over (N, C, L); with ``return_indices`` also the argmax positions."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-d max pooling over (N, C, H, W); indices are flat positions in each H*W plane."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@_amp_policy("max_pool3d")
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """3-d max pooling over (N, C, D, H, W)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool(op, nsp, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, batched = _batched(op, input, nsp, True)
    k, s, p, _ = _pool_args(op, nsp, x, kernel_size, stride, padding, 1, ceil_mode)
    if nsp == 3 and any(x.shape[2 + i] < k[i] for i in range(3)):  # (PyTorch's 3-d check, whatever the padding)
        T, H, W = x.shape[2:]
        raise RuntimeError(f"{op}: input image (T: {T} H: {H} W: {W}) smaller than kernel size "
                           f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    out = _nnops.avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor_override)
    return out if batched else out.squeeze(0)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling over (N, C, L)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """2-d average pooling; ``count_include_pad`` counts zero padding in the divisor,
    ``divisor_override`` replaces it."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@_amp_policy("avg_pool3d")
def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """3-d average pooling."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_sizes(op, nsp, x, output_size):
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nsp
    output_size = tuple(output_size)
    if len(output_size) == 1 and nsp > 1:
        output_size = output_size * nsp
    if len(output_size) != nsp:
        raise ValueError(f"{op}: output_size must have {nsp} elements, got {list(output_size)}")
    out = tuple(x.shape[2 + i] if o is None else int(o) for i, o in enumerate(output_size))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}: output_size must be non-negative, got {list(out)}")
    # (PyTorch's adaptive max pooling and 3-d average pooling also refuse 0 channels)
    if any(s == 0 for s in x.shape[2:]) or (x.shape[1] == 0 and (op.startswith("adaptive_max") or nsp == 3)):
        raise RuntimeError(f"{op}: Expected input to have non-zero size for non-batch dimensions, but got {desc(x)}")
    return out


def _bounds(L, O):
    return [((i * L) // O, -(-((i + 1) * L) // O)) for i in range(O)]


def _empty_window(x, out):
    """The (N, C, *out) result of pooling to an empty output size, still in ``x``'s graph."""
    return x.flatten(2).narrow(2, 0, 0).reshape(tuple(x.shape[:2]) + tuple(out))


def _adaptive_avg(op, nsp, input, output_size):
    x, batched = _batched(op, input, nsp)
    if x.dtype.category != D._FLOAT:
        raise dtype_not_implemented(op, x.dtype)
    out = _adaptive_sizes(op, nsp, x, output_size)
    sp = x.shape[2:]
    if any(o == 0 for o in out):
        r = _empty_window(x, out)
    elif all(o == 1 for o in out):  # global average pooling: a mean (its gradient is a broadcast)
        r = x.mean(tuple(range(2, 2 + nsp)), keepdim=True)
    elif all(sp[i] % out[i] == 0 for i in range(nsp)):
        k = tuple(sp[i] // out[i] for i in range(nsp))
        r = _nnops.avg_pool(x, k, k, (0,) * nsp, False, True, None) if any(v > 1 for v in k) else x
    else:
        # windows of varying size, one dim at a time (separable): gather each window's elements,
        # padded to the widest window with a zero appended to the dim, sum and divide by its size
        # (a gather, not a matmul with an averaging matrix, so an inf or NaN stays in its windows)
        r = x
        for i in range(nsp):
            d, L, O = 2 + i, sp[i], out[i]
            b = _bounds(L, O)
            kmax = max(e - s for s, e in b)
            idx = [s + j if s + j < e else L for s, e in b for j in range(kmax)]
            zero = _factory.zeros(r.shape[:d] + (1,) + r.shape[d + 1:], dtype=r.dtype, device=r.device)
            w = _ops.cat([r, zero], d).index_select(d, _factory.tensor(idx, dtype=D.int64, device=r.device))
            w = w.reshape(r.shape[:d] + (O, kmax) + r.shape[d + 1:]).sum(d + 1)
            n = _factory.tensor([e - s for s, e in b], dtype=r.dtype, device=r.device)
            r = w / n.reshape((O,) + (1,) * (nsp - 1 - i))
    return r if batched else r.squeeze(0)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output length (windows [floor(iL/O), ceil((i+1)L/O)))."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed (H, W) (None keeps that dim's size)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


@_amp_policy("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


@host_step
def _nan_wins(g, vals, arg):
    """A NaN in a window wins, the last one (PyTorch's loop: val > max or isnan(val))."""
    nans = g.isnan()
    if bool(nans.any()):
        arg = _ops.where(nans.any(-1), (g.shape[-1] - 1) - nans.to(D.int64).flip(-1).argmax(-1), arg)
        vals = g.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return vals, arg


def _adaptive_max(op, nsp, input, output_size, return_indices):
    x, batched = _batched(op, input, nsp)
    out = _adaptive_sizes(op, nsp, x, output_size)
    sp = x.shape[2:]
    if any(o == 0 for o in out):
        shape = tuple(x.shape[:2]) + out
        vals = _empty_window(x, out)
        pos = _factory.empty(shape, dtype=D.int64, device=x.device)
        if not batched:
            vals, pos = vals.squeeze(0), pos.squeeze(0)
        return (vals, pos) if return_indices else vals
    # gather every window (padded to the largest window by repeating its last index)
    idx_tabs = []
    for i in range(nsp):
        b = _bounds(sp[i], out[i])
        kmax = max(e - s for s, e in b)
        idx_tabs.append([[min(s + j, e - 1) for j in range(kmax)] for s, e in b])
    flat_idx = None
    shape_o = []
    for i, tab in enumerate(idx_tabs):
        t = _factory.tensor(tab, dtype=D.int64, device=x.device)  # (O_i, k_i)
        O_i, k_i = t.shape
        view = [1] * (2 * nsp)
        view[i] = O_i
        view[nsp + i] = k_i
        t = t.reshape(view)
        flat_idx = t if flat_idx is None else flat_idx * sp[i] + t
        shape_o.append(O_i)
    ks = [len(tab[0]) for tab in idx_tabs]
    flat_idx = flat_idx.expand(tuple(shape_o) + tuple(ks)).reshape(tuple(shape_o) + (-1,))  # (*out, K)
    N, C = x.shape[:2]
    xf = x.reshape(N, C, math.prod(sp))  # (no -1: N may be 0)
    K = flat_idx.shape[-1]
    g = xf.index_select(2, flat_idx.reshape(-1)).reshape((N, C) + tuple(shape_o) + (K,))
    vals, arg = g.max(-1)
    if g.dtype.category == D._FLOAT:
        vals, arg = _nan_wins(g, vals, arg)
    if not return_indices:
        return vals if batched else vals.squeeze(0)
    pos = flat_idx.expand((N, C) + tuple(shape_o) + (K,)).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if not batched:
        vals, pos = vals.squeeze(0), pos.squeeze(0)
    return vals, pos


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed output length."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed (H, W)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


@_amp_policy("adaptive_max_pool3d")
def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


def _lp_pool(op, nsp, input, norm_type, kernel_size, stride, ceil_mode):
    x, batched = _batched(op, input, nsp, True)
    k = ntuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None else ntuple(stride, nsp, "stride", op)
    K = math.prod(k)
    if norm_type == math.inf:
        return max_pool1d(input, k, s, 0, 1, ceil_mode) if nsp == 1 else _max_pool(
            op, nsp, input, k, s, 0, 1, ceil_mode, False)
    # (the checks of the avg_pool it is made of: the output size, and the 3-d input size)
    out = _avg_pool(op, nsp, x.pow(norm_type), k, s, 0, ceil_mode, True, None)
    out = (_ops.sign(out) * _ops.relu(_ops.abs(out))).mul(K).pow(1.0 / norm_type)
    return out if batched else out.squeeze(0)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum x^p)^(1/p) over each window."""
    return _lp_pool("lp_pool1d", 1, input, float(norm_type), kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling."""
    return _lp_pool("lp_pool2d", 2, input, float(norm_type), kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    return _lp_pool("lp_pool3d", 3, input, float(norm_type), kernel_size, stride, ceil_mode)


def _max_unpool(op, nsp, input, indices, kernel_size, stride, padding, output_size):
    x, batched = _batched(op, input, nsp)
    idx = indices if batched else indices.unsqueeze(0)
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor ({desc(x)}) but "
                           f"got indices tensor with shape: {list(idx.shape)}")
    k = ntuple(kernel_size, nsp, "kernel_size", op)
    s = k if stride is None else ntuple(stride, nsp, "stride", op)
    p = ntuple(padding, nsp, "padding", op)
    default = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nsp)]
    if output_size is None:
        out_sp = default
    else:
        out_sp = list(output_size)[-nsp:]
        for i in range(nsp):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < out_sp[i] < hi:
                raise ValueError(f"{op}: invalid output_size {list(output_size)} "
                                 f"(dim {i} must be between {lo} and {hi})")
    N, C = x.shape[:2]
    total = math.prod(out_sp)
    flat = idx.reshape(N, C, -1)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= total):
        raise RuntimeError(f"{op}: Found an invalid max index: {int(flat.max())} (output volumes are of size "
                           f"{'x'.join(map(str, out_sp))})")
    z = _factory.zeros((N, C, total), dtype=x.dtype, device=x.device)
    r = z.scatter(2, flat, x.reshape(N, C, -1)).reshape((N, C) + tuple(out_sp))
    return r if batched else r.squeeze(0)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool1d: values put back at their indices, zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


@_amp_policy("max_unpool2d")
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool2d."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


@_amp_policy("max_unpool3d")
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
