"""Fast numpy kernels for ember's fused nn ops (``ember.ops.nn``): convolution by im2col + one
GEMM per group, pooling on strided window views, fused softmax / NLL / normalisation /
embedding / dropout. Every kernel takes the op's kernel arguments and returns new tensors; the
core's decompositions define the semantics (the conformance suite compares both).

16-bit floats compute in float32 (numpy has no fast 16-bit loops) and are cast back.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import sys
import weakref

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember.backend import dtypes as D
from ember.backend.shapes import avg_divisor as _avg_divisor
from ember.backend.shapes import conv_out as _conv_out
from ember.backend.shapes import pool_out as _pool_out
from ember.backend.shapes import pool_pads as _pool_pads

from .backend import nd, wrap



def _keep_freed_memory() -> bool:
    """Ask glibc to serve large blocks from its heap and keep freed memory (as PyTorch's CPU
    allocator effectively does). numpy allocates every kernel's result afresh; with glibc's
    defaults each block over ~128 KiB is mmap'ed and unmapped again, so every training step
    re-faults its activations page by page: a third of a conv net's CPU time went to the kernel.
    Set ``EMBER_CPU_MALLOC_TUNING=0`` to keep the process's allocator settings."""
    if os.environ.get("EMBER_CPU_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, 256 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError):  # not glibc (musl, ...): nothing to tune
        return False


MALLOC_TUNED = _keep_freed_memory()


def _work(a: np.ndarray) -> np.ndarray:
    """float32 copy of 16-bit float arrays (float16, bfloat16), else ``a``."""
    dt = a.dtype
    if dt.itemsize == 2 and (dt.kind in "fV" or dt.name == "bfloat16"):  # dtype.name is slow: asked last
        return a.astype(np.float32)
    return a


def _back(r: np.ndarray, dtype) -> np.ndarray:
    return r if r.dtype == dtype else r.astype(dtype)


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


# The weight gradient of a convolution needs the same columns as its forward pass: when the
# weight requires grad, the forward keeps them for the backward of that very input tensor
# (checked by identity, version counter and geometry), within a memory budget.
_COLS_CACHE: dict = {}
_COLS_BUDGET = 256 << 20


def _cols_key(x, kernel, dilation, padding, stride):
    return (x._version[0], x._offset, x._shape, x._stride, tuple(kernel), tuple(dilation), tuple(padding),
            tuple(stride))


def _batch_last(shape, groups) -> bool:
    """Whether the convolution family works in the batch-last layout (C, *sp, N) for inputs of
    ``shape`` (N, C, *sp): for narrow maps numpy's per-row cost dominates im2col/col2im copies in
    the (N, C, *sp) layout, whose rows are one map row long; batch-last rows are (row x N) long."""
    return groups == 1 and shape[0] > 1 and len(shape) > 2 and shape[-1] <= 16


def _cache_cols(x, key, cols, out_sp):
    tid = id(x)
    if cols.nbytes > _COLS_BUDGET // 4:
        return
    used = sum(e[2].nbytes for e in _COLS_CACHE.values())
    while _COLS_CACHE and used + cols.nbytes > _COLS_BUDGET:
        old = _COLS_CACHE.pop(next(iter(_COLS_CACHE)))  # the oldest entry
        used -= old[2].nbytes
    ref = weakref.ref(x, lambda _r, tid=tid: _COLS_CACHE.pop(tid, None))
    _COLS_CACHE[tid] = (ref, key, cols, out_sp)


# The input gradient of a convolution (conv_transpose of g) and its weight gradient both need g
# in the batch-last layout; the conv backward asks for them in that order, so the first keeps its
# transposed copy for the second (one entry: the latest g, checked by identity and version).
_G_LAST: dict = {}


def _keep_last(g, a) -> None:
    def gone(r):  # g died unused: drop its copy
        e = _G_LAST.get("e")
        if e is not None and e[0] is r:
            _G_LAST.pop("e", None)
    _G_LAST["e"] = (weakref.ref(g, gone), g._version[0], g._offset, g._shape, g._stride, a)


def _take_last(g):
    e = _G_LAST.pop("e", None)
    if e is not None and e[0]() is g and e[1:5] == (g._version[0], g._offset, g._shape, g._stride):
        return e[5]
    return None


def _strided_ro(a, shape, strides):
    return as_strided(a, shape, strides, writeable=False)


# -- the kernels, over any numpy-like array module -------------------------------------------------

def make_kernels(xp=np, nd=nd, wrap=wrap, strided=_strided_ro) -> dict:
    """The nn kernel table over the array module ``xp`` (numpy here; ember-cuda-cupy calls it
    with cupy, its own ``nd``/``wrap`` and ``cupy.lib.stride_tricks.as_strided``)."""
    # -- softmax, log_softmax, nll ----------------------------------------------------------------------

    def k_softmax(x, dim):
        a = _work(nd(x))
        e = xp.exp(a - a.max(axis=dim, keepdims=True))
        e /= e.sum(axis=dim, keepdims=True)
        return wrap(_back(e, nd(x).dtype), x._device)


    def k_log_softmax(x, dim):
        a = _work(nd(x))
        s = a - a.max(axis=dim, keepdims=True)
        s -= xp.log(xp.exp(s).sum(axis=dim, keepdims=True))
        return wrap(_back(s, nd(x).dtype), x._device)


    def k_nll_loss(logp, target, weight, reduction, ignore_index):
        lp = nd(logp)
        t = nd(target)
        valid = t != ignore_index
        safe = xp.where(valid, t, 0)
        C = lp.shape[1]
        if safe.size and (safe.min() < 0 or safe.max() >= C):
            bad = safe[(safe < 0) | (safe >= C)][0]
            raise IndexError(f"nll_loss: Target {int(bad)} is out of bounds (the input has {C} classes).")
        picked = lp[xp.arange(lp.shape[0]), safe].astype(xp.float64 if lp.dtype == xp.float64 else xp.float32)
        w = valid.astype(picked.dtype)
        if weight is not None:
            w = w * nd(weight)[safe]
        loss = -(picked * w)
        if reduction == "none":
            r = loss
        elif reduction == "sum":
            r = xp.asarray(loss.sum())
        else:
            r = xp.asarray(loss.sum() / w.sum()) if w.sum() != 0 else xp.asarray(xp.nan)
        return wrap(r.astype(lp.dtype), logp._device)


    def k_threshold_backward(g, y, threshold):
        a = nd(g)
        return wrap(xp.multiply(a, nd(y) > threshold, dtype=a.dtype), g._device)


    # -- linear ------------------------------------------------------------------------------------------

    def k_linear(x, w, b):
        a, m = nd(x), nd(w)
        dt = a.dtype
        a, m = _work(a), _work(m)
        if a.ndim > 2 and a.flags.c_contiguous:  # one GEMM, not one per leading index (as k_matmul)
            r = xp.matmul(a.reshape(_prod(a.shape[:-1]), a.shape[-1]), m.T).reshape(a.shape[:-1] + m.shape[:1])
        else:
            r = xp.matmul(a, m.T)
        if b is not None:
            r += _work(nd(b))
        return wrap(_back(r, dt), x._device)


    # -- padding ------------------------------------------------------------------------------------------

    def _pad_np(a, lohi, value):
        """numpy pad with (lo, hi) per dim; negative amounts crop."""
        if all(lo >= 0 and hi >= 0 for lo, hi in lohi):
            if not any(lo or hi for lo, hi in lohi):
                return a
            out = xp.full(tuple(s + lo + hi for s, (lo, hi) in zip(a.shape, lohi)), value, dtype=a.dtype)
            out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(a.shape, lohi))] = a
            return out
        src = a[tuple(slice(max(-lo, 0), s - max(-hi, 0)) for s, (lo, hi) in zip(a.shape, lohi))]
        return _pad_np(src, [(max(lo, 0), max(hi, 0)) for lo, hi in lohi], value)


    def k_constant_pad_nd(x, pad, value):
        a = nd(x)
        nd_ = a.ndim
        lohi = [(0, 0)] * nd_
        for i in range(len(pad) // 2):
            lohi[nd_ - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        return wrap(xp.ascontiguousarray(_pad_np(a, lohi, value)), x._device)


    def _spatial_pad(a, lo, hi, value=0.0):
        return _pad_np(a, [(0, 0), (0, 0)] + list(zip(lo, hi)), value)


    # -- im2col / convolution -----------------------------------------------------------------------------

    def _windows(xpad, kernel, dilation, stride, out_sp):
        """(N, C, *kernel, *out) strided view of contiguous ``xpad``."""
        st = xpad.strides
        nsp = len(kernel)
        shape = xpad.shape[:2] + tuple(kernel) + tuple(out_sp)
        strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(nsp)) + tuple(st[2 + i] * stride[i]
                                                                                      for i in range(nsp))
        return strided(xpad, shape, strides)


    def _cols(a, kernel, dilation, padding, stride):
        """im2col: columns (N, C*K, L) of (N, C, *sp) ``a`` (zero padded), one copy of the windows."""
        nsp = len(kernel)
        out_sp = tuple(_conv_out(a.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
        N, C = a.shape[:2]
        if all(k == 1 for k in kernel) and all(s == 1 for s in stride) and not any(padding):
            return xp.ascontiguousarray(a).reshape(N, C, -1), out_sp
        xpad = xp.ascontiguousarray(_spatial_pad(a, padding, padding))
        win = _windows(xpad, kernel, dilation, stride, out_sp)  # (N, C, *k, *out): the (N, C*K, L) order
        return xp.ascontiguousarray(win).reshape(N, C * _prod(kernel), _prod(out_sp)), out_sp


    def _batch_to_last(a):
        """(N, *rest) -> contiguous (prod(rest), N). For a few dozen rows and long ones numpy's
        transposing copy runs twice as fast through (N, M/64, 64) -> (M/64, N, 64) blocks
        (32 x 8192 float32: 0.21 -> 0.11 ms); small arrays go straight."""
        N = a.shape[0]
        m = a.reshape(N, -1)
        M = m.shape[1]
        if N > 64 or M < 4096 or M % 64:
            return xp.ascontiguousarray(m.T)
        blocks = xp.ascontiguousarray(m.reshape(N, M // 64, 64).transpose(1, 0, 2))
        return xp.ascontiguousarray(blocks.transpose(0, 2, 1)).reshape(M, N)

    def _cols_last(a, kernel, dilation, padding, stride):
        """im2col in the batch-last layout: columns (C*K, L*N) of (N, C, *sp) ``a``: one transposing
        copy into a zero-padded (C, *padded, N) buffer, then one copy of its windows."""
        nsp = len(kernel)
        sp = a.shape[2:]
        out_sp = tuple(_conv_out(sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
        N, C = a.shape[:2]
        buf = xp.zeros((C,) + tuple(sp[i] + 2 * padding[i] for i in range(nsp)) + (N,), dtype=a.dtype)
        buf[(slice(None),) + tuple(slice(p, p + n) for p, n in zip(padding, sp))] = \
            _batch_to_last(a).reshape((C,) + tuple(sp) + (N,))
        st = buf.strides
        win = strided(buf, (C,) + tuple(kernel) + out_sp + (N,),
                      (st[0],) + tuple(st[1 + i] * dilation[i] for i in range(nsp))
                      + tuple(st[1 + i] * stride[i] for i in range(nsp)) + (st[-1],))
        return xp.ascontiguousarray(win).reshape(C * _prod(kernel), -1), out_sp


    def _cached_cols(x, a, kernel, dilation, padding, stride, last):
        e = _COLS_CACHE.pop(id(x), None)
        if e is not None and e[0]() is x and e[1] == _cols_key(x, kernel, dilation, padding, stride) + (last,):
            return e[2], e[3]
        return (_cols_last if last else _cols)(a, kernel, dilation, padding, stride)


    def k_convolution(x, w, b, stride, padding, dilation, groups):
        a, wt = nd(x), nd(w)
        dt = a.dtype
        a, wt = _work(a), _work(wt)
        N = a.shape[0]
        Cout = wt.shape[0]
        kernel = wt.shape[2:]
        G = groups
        last = _batch_last(a.shape, G)
        # (Cin*K, L*N) batch-last, else (N, Cin*K, L)
        cols, out_sp = (_cols_last if last else _cols)(a, kernel, dilation, padding, stride)
        if w._requires_grad and x._dtype is not D.bfloat16:
            _cache_cols(x, _cols_key(x, kernel, dilation, padding, stride) + (last,), cols, out_sp)
        if last:  # one GEMM for the whole batch, then back to (N, Cout, *out_sp)
            r = xp.matmul(wt.reshape(Cout, -1), cols).reshape((Cout,) + out_sp + (N,))
            if b is not None:
                r += _work(nd(b)).reshape((Cout,) + (1,) * (len(out_sp) + 1))
            return wrap(_back(xp.ascontiguousarray(xp.moveaxis(r, -1, 0)), dt), x._device)
        if G == 1:
            r = xp.matmul(wt.reshape(Cout, -1), cols)  # one GEMM per sample, output already (N, Cout, L)
        else:
            cg = cols.reshape(N, G, cols.shape[1] // G, cols.shape[2])
            r = xp.matmul(wt.reshape(G, Cout // G, -1), cg).reshape(N, Cout, -1)
        if b is not None:
            r += _work(nd(b))[:, None]
        return wrap(_back(r.reshape((N, Cout) + out_sp), dt), x._device)


    def _col2im_np(cols, C, out_sp, kernel, dilation, padding, stride, in_sp):
        """Sum columns (N, C*K, L_in) into (N, C, *out_sp): the adjoint of _cols. Each kernel offset
        adds its (clipped) block straight into the output, without a padded buffer."""
        nsp = len(kernel)
        N = cols.shape[0]
        out = xp.zeros((N, C) + tuple(out_sp), dtype=cols.dtype)
        c = cols.reshape((N, C) + tuple(kernel) + tuple(in_sp))
        for kk in itertools.product(*(range(k) for k in kernel)):
            dst, src = [slice(None), slice(None)], [slice(None), slice(None)] + list(kk)
            empty = False
            for i in range(nsp):
                off = kk[i] * dilation[i] - padding[i]
                s_ = stride[i]
                lo = (-off + s_ - 1) // s_ if off < 0 else 0  # first input position landing at >= 0
                hi = min(in_sp[i], (out_sp[i] - 1 - off) // s_ + 1) if out_sp[i] - 1 - off >= 0 else 0
                if hi <= lo:
                    empty = True
                    break
                start = off + lo * s_
                dst.append(slice(start, start + (hi - lo - 1) * s_ + 1, s_))
                src.append(slice(lo, hi))
            if not empty:
                out[tuple(dst)] += c[tuple(src)]
        return out


    def _col2im_last(cols, C, out_sp, kernel, dilation, padding, stride, in_sp):
        """_col2im_np in the batch-last layout: columns (C*K, L_in*N) into (C, *out_sp, N). Every
        block add then runs over rows of (width x N) contiguous elements instead of width-long
        rows, which is what makes col2im cheap for small images (numpy pays per inner loop)."""
        nsp = len(kernel)
        N = cols.shape[1] // _prod(in_sp)
        out = xp.zeros((C,) + tuple(out_sp) + (N,), dtype=cols.dtype)
        c = cols.reshape((C,) + tuple(kernel) + tuple(in_sp) + (N,))
        for kk in itertools.product(*(range(k) for k in kernel)):
            dst, src = [slice(None)], [slice(None)] + list(kk)
            for i in range(nsp):
                off = kk[i] * dilation[i] - padding[i]
                s_ = stride[i]
                lo = (-off + s_ - 1) // s_ if off < 0 else 0
                hi = min(in_sp[i], (out_sp[i] - 1 - off) // s_ + 1) if out_sp[i] - 1 - off >= 0 else 0
                if hi <= lo:
                    break
                start = off + lo * s_
                dst.append(slice(start, start + (hi - lo - 1) * s_ + 1, s_))
                src.append(slice(lo, hi))
            else:
                out[tuple(dst)] += c[tuple(src)]
        return out

    def k_conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
        a, wt = nd(x), nd(w)
        dt = a.dtype
        a, wt = _work(a), _work(wt)
        N, Cin = a.shape[:2]
        in_sp = a.shape[2:]
        kernel = wt.shape[2:]
        nsp = len(kernel)
        G = groups
        Cout = wt.shape[1] * G
        out_sp = tuple((in_sp[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
                       for i in range(nsp))
        if _batch_last(a.shape, G):
            # batch-last: one GEMM (Cout*K, Cin) @ (Cin, L_in*N), col2im on long rows, then back to
            # (N, Cout, *out_sp). For narrow inputs the two transposing copies cost less than
            # col2im's short rows (LeNet's second conv: 1.48 -> 0.71 ms; 8x8 maps 1.30 -> 1.02);
            # from about 32 columns on, rows are long enough and the copies would not pay.
            xl = _batch_to_last(a).reshape(Cin, -1)
            if x._dtype is not D.bfloat16:
                _keep_last(x, xl)  # for the weight gradient that follows in a conv backward
            cols = xp.matmul(wt.reshape(Cin, -1).T, xl)
            r = _col2im_last(cols, Cout, out_sp, kernel, dilation, padding, stride, in_sp)
            if b is not None:
                r += _work(nd(b)).reshape((Cout,) + (1,) * (nsp + 1))
            return wrap(_back(xp.ascontiguousarray(xp.moveaxis(r, -1, 0)), dt), x._device)
        xm = xp.ascontiguousarray(a).reshape(N, Cin, -1)
        if G == 1:
            cols = xp.matmul(wt.reshape(Cin, -1).T, xm)  # (N, Cout*K, L_in)
        else:
            wg = wt.reshape(G, Cin // G, -1).transpose(0, 2, 1)
            cols = xp.matmul(wg, xm.reshape(N, G, Cin // G, -1)).reshape(N, Cout * _prod(kernel), -1)
        r = _col2im_np(cols, Cout, out_sp, kernel, dilation, padding, stride, in_sp)
        if b is not None:
            r += _work(nd(b)).reshape((1, Cout) + (1,) * nsp)
        return wrap(_back(r, dt), x._device)


    def k_conv_weight_grad(x, g, wshape, stride, padding, dilation, groups):
        a, gg = nd(x), nd(g)
        dt = a.dtype
        a, gg = _work(a), _work(gg)
        kernel = tuple(wshape[2:])
        Cout = wshape[0]
        N = a.shape[0]
        G = groups
        last = _batch_last(a.shape, G)
        cols, _ = _cached_cols(x, a, kernel, dilation, padding, stride, last)  # as k_convolution made them
        if last:  # one GEMM over all samples and positions: (Cout, L*N) @ (L*N, Cin*K)
            gl = _take_last(g)
            if gl is None:
                gl = _batch_to_last(gg).reshape(Cout, -1)
            r = xp.matmul(gl, cols.T)
            return wrap(_back(xp.ascontiguousarray(r.reshape(tuple(wshape))), dt), x._device)
        gm = xp.ascontiguousarray(gg).reshape(N, Cout, -1)
        if G == 1:
            r = xp.matmul(gm, cols.transpose(0, 2, 1)).sum(0)
        else:
            cg = cols.reshape(N, G, cols.shape[1] // G, cols.shape[2])
            r = xp.matmul(gm.reshape(N, G, Cout // G, -1), cg.transpose(0, 1, 3, 2)).sum(0)
        return wrap(_back(xp.ascontiguousarray(r.reshape(tuple(wshape))), dt), x._device)


    def k_im2col(x, kernel, dilation, padding, stride):
        cols, _ = _cols(nd(x), kernel, dilation, padding, stride)
        return wrap(xp.ascontiguousarray(cols), x._device)


    def k_col2im(cols, out_sp, kernel, dilation, padding, stride):
        c = nd(cols)
        K = _prod(kernel)
        C = c.shape[1] // K
        nsp = len(kernel)
        in_sp = tuple(_conv_out(out_sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
        return wrap(_col2im_np(xp.ascontiguousarray(c), C, tuple(out_sp), kernel, dilation, padding, stride, in_sp),
                    cols._device)


    # -- pooling ------------------------------------------------------------------------------------------

    def _pool_view(a, kernel, stride, padding, dilation, out_sp, fill):
        right = _pool_pads(a.shape[2:], out_sp, kernel, stride, padding, dilation)
        xpad = xp.ascontiguousarray(_spatial_pad(a, padding, right, fill))
        return _windows(xpad, kernel, dilation, stride, out_sp)  # (N, C, *k, *out)


    def _max_pool_2x2(a, in_sp, out_sp):
        """2x2 windows, stride 2, no padding: a tournament of three maximums."""
        oh, ow = out_sp
        x = a[:, :, :2 * oh, :2 * ow]
        x00, x01, x10, x11 = x[:, :, 0::2, 0::2], x[:, :, 0::2, 1::2], x[:, :, 1::2, 0::2], x[:, :, 1::2, 1::2]
        top = xp.maximum(x00, x01)
        bot = xp.maximum(x10, x11)
        vals = xp.maximum(top, bot)
        W = in_sp[1]
        right_top = (x01 > x00).astype(xp.int64)  # column offset of each row's winner
        right_bot = (x11 > x10).astype(xp.int64)
        below = bot > top
        off = right_top + below * (W + right_bot - right_top)  # arithmetic: numpy's where is slow on random masks
        base = (xp.arange(oh, dtype=xp.int64)[:, None] * (2 * W) + xp.arange(ow, dtype=xp.int64)[None, :] * 2)
        return vals, base + off


    def _max_pool_small(work, kernel, stride, padding, dilation, in_sp, out_sp, fill):
        """Running max over the K window offsets (K strided passes; no window copy, no argmax)."""
        nsp = len(kernel)
        right = _pool_pads(in_sp, out_sp, kernel, stride, padding, dilation)
        xpad = _spatial_pad(work, padding, right, fill)
        best = None
        arg = None
        offsets = []
        for k, kk in enumerate(itertools.product(*(range(v) for v in kernel))):
            sl = (slice(None), slice(None)) + tuple(
                slice(kk[i] * dilation[i], kk[i] * dilation[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i])
                for i in range(nsp))
            v = xpad[sl]
            off = 0
            for i in range(nsp):
                off = off * in_sp[i] + kk[i] * dilation[i]
            offsets.append(off)
            if best is None:
                best = v.copy()
                arg = xp.zeros(v.shape, dtype=xp.int8)
                better = xp.empty(v.shape, dtype=bool)
                continue
            # masked numpy writes are slow: update by arithmetic (arg += (k - arg) * better)
            xp.greater(v, best, out=better)
            xp.maximum(best, v, out=best)
            d = xp.subtract(xp.int8(k), arg)
            d *= better
            arg += d
        base = None
        for i in range(nsp):
            o = xp.arange(out_sp[i], dtype=xp.int64).reshape((out_sp[i],) + (1,) * (nsp - 1 - i)) * stride[i] - padding[i]
            base = o if base is None else base * in_sp[i] + o
        flat = base + xp.asarray(offsets, dtype=xp.int64)[arg]
        return best, flat


    def k_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
        a = nd(x)
        nsp = len(kernel)
        in_sp = a.shape[2:]
        out_sp = tuple(_pool_out(in_sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nsp))
        fill = -xp.inf if a.dtype.kind == "f" else xp.iinfo(a.dtype).min
        work = _work(a)
        # small windows without NaN: a running max over the window offsets (NaN inputs take the
        # argmax path below, which propagates NaN as PyTorch does)
        if _prod(kernel) <= 64:
            if (kernel == (2, 2) and stride == (2, 2) and padding == (0, 0) and dilation == (1, 1)
                    and 2 * out_sp[0] <= in_sp[0] and 2 * out_sp[1] <= in_sp[1]):  # no ceil-mode partial window
                vals, flat = _max_pool_2x2(work, in_sp, out_sp)
            else:
                vals, flat = _max_pool_small(work, kernel, stride, padding, dilation, in_sp, out_sp, fill)
            if not (work.dtype.kind == "f" and xp.isnan(vals.max())):  # NaN windows: indices from argmax below
                return wrap(_back(vals, a.dtype), x._device), wrap(xp.ascontiguousarray(flat), x._device)
        win = _pool_view(work, kernel, stride, padding, dilation, out_sp, fill)
        perm = (0, 1) + tuple(range(2 + nsp, 2 + 2 * nsp)) + tuple(range(2, 2 + nsp))
        w = win.transpose(perm).reshape(a.shape[:2] + out_sp + (-1,))
        am = w.argmax(axis=-1)
        vals = xp.take_along_axis(w, am[..., None], axis=-1)[..., 0]
        kk = xp.unravel_index(am, kernel)
        flat = None
        for i in range(nsp):
            o = xp.arange(out_sp[i]).reshape((out_sp[i],) + (1,) * (nsp - 1 - i))
            coord = o * stride[i] - padding[i] + kk[i] * dilation[i]
            flat = coord if flat is None else flat * in_sp[i] + coord
        return (wrap(_back(xp.ascontiguousarray(vals), a.dtype), x._device),
                wrap(xp.ascontiguousarray(flat, dtype=xp.int64), x._device))


    def k_max_pool_backward(g, idx, in_shape):
        gg = nd(g)
        ii = nd(idx)
        N, C = in_shape[:2]
        S = _prod(in_shape[2:])
        base = (xp.arange(N * C, dtype=xp.int64) * S).reshape((N, C) + (1,) * (ii.ndim - 2))
        flat = (ii + base).ravel()
        mark = xp.zeros(N * C * S, dtype=bool)
        mark[flat] = True
        if xp.count_nonzero(mark) == flat.size:  # windows never share an argmax: a plain scatter
            r = xp.zeros(N * C * S, dtype=gg.dtype)
            r[flat] = gg.ravel()
            return wrap(r.reshape(tuple(in_shape)), g._device)
        r = xp.bincount(flat, weights=gg.ravel().astype(xp.float64), minlength=N * C * S)
        return wrap(r.astype(gg.dtype).reshape(tuple(in_shape)), g._device)


    def _divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov, dtype):
        per = _avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov)
        if per is None:
            return float(dov)
        d = xp.ones((), dtype=dtype)
        for i, sizes in enumerate(per):
            d = d[..., None] * xp.asarray(sizes, dtype=dtype) if i else xp.asarray(sizes, dtype=dtype)
        return d


    def k_avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
        a = nd(x)
        nsp = len(kernel)
        in_sp = a.shape[2:]
        out_sp = tuple(_pool_out(in_sp[i], kernel[i], stride[i], padding[i], 1, ceil_mode) for i in range(nsp))
        work = _work(a)
        win = _pool_view(work, kernel, stride, padding, (1,) * nsp, out_sp, 0.0)
        s = win.sum(axis=tuple(range(2, 2 + nsp)))
        s = s / _divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, s.dtype)
        return wrap(_back(xp.ascontiguousarray(s), a.dtype), x._device)


    def k_avg_pool_backward(g, in_shape, kernel, stride, padding, ceil_mode, cip, dov):
        gg = _work(nd(g))
        nsp = len(kernel)
        in_sp = tuple(in_shape[2:])
        out_sp = gg.shape[2:]
        gd = gg / _divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov, gg.dtype)
        right = _pool_pads(in_sp, out_sp, kernel, stride, padding, (1,) * nsp)
        padded = tuple(in_sp[i] + padding[i] + right[i] for i in range(nsp))
        out = xp.zeros(tuple(in_shape[:2]) + padded, dtype=gg.dtype)
        for kk in itertools.product(*(range(k) for k in kernel)):
            sl = (slice(None), slice(None)) + tuple(slice(kk[i], kk[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i])
                                                    for i in range(nsp))
            out[sl] += gd
        out = out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_sp))]
        return wrap(_back(xp.ascontiguousarray(out), nd(g).dtype), g._device)


    # -- normalisation --------------------------------------------------------------------------------------

    def _stats(a, axes, eps):
        mean = a.mean(axis=axes, keepdims=True)
        c = a - mean
        var = xp.mean(c * c, axis=axes, keepdims=True)
        return c, mean, 1.0 / xp.sqrt(var + eps)


    def _chan_sum(a3):
        """Per-channel sums of (N, C, L): the contiguous axis first (pairwise summation)."""
        return a3.sum(axis=2).sum(axis=0)

    def _chan_dot(u3, v3):
        """Per-channel sums of u * v for (N, C, L) arrays: N*C dot products through matmul (no
        product array) when rows are long enough to pay for a BLAS call each."""
        if u3.shape[2] < 8:
            return _chan_sum(u3 * v3)
        return xp.matmul(u3[:, :, None, :], v3[:, :, :, None]).reshape(u3.shape[:2]).sum(axis=0)


    def k_batch_norm(x, w, b, eps):
        a = nd(x)
        work = _work(a)
        N, C = a.shape[:2]
        a3 = work.reshape(N, C, -1)
        n = a3.shape[0] * a3.shape[2]
        mean = _chan_sum(a3) / n
        out = a3 - mean[:, None]
        inv = 1.0 / xp.sqrt(_chan_dot(out, out) / n + eps)
        scale = inv if w is None else inv * _work(nd(w))
        out *= scale[:, None]  # the centred input's buffer becomes the output
        if b is not None:
            out += _work(nd(b))[:, None]
        dev = x._device
        return (wrap(_back(out.reshape(a.shape), a.dtype), dev), wrap(_back(mean, a.dtype), dev),
                wrap(_back(inv, a.dtype), dev))


    def k_batch_norm_backward(g, x, w, mean, invstd, need_w, need_b):
        gg, a = _work(nd(g)), _work(nd(x))
        dt = nd(x).dtype
        N, C = a.shape[:2]
        g3 = xp.ascontiguousarray(gg).reshape(N, C, -1)
        a3 = a.reshape(N, C, -1)
        n = a3.shape[0] * a3.shape[2]
        m = _work(nd(mean))
        inv = _work(nd(invstd))
        gb = _chan_sum(g3)
        xc = a3 - m[:, None]  # centred before any product: no cancellation for inputs far from 0
        gw = _chan_dot(g3, xc) * inv  # sum(g * xhat) per channel
        # gx = w * inv * (g - (gb + xhat * gw) / n), in xc's buffer: four in-place passes
        xc *= (-inv * gw / n)[:, None]
        xc += g3
        xc -= (gb / n)[:, None]
        xc *= (inv if w is None else inv * _work(nd(w)))[:, None]
        dev = x._device
        return (wrap(_back(xc.reshape(a.shape), dt), dev), wrap(_back(gw, dt), dev), wrap(_back(gb, dt), dev))


    def k_layer_norm(x, w, b, k, eps):
        a = nd(x)
        work = _work(a)
        axes = tuple(range(a.ndim - k, a.ndim))
        c, mean, inv = _stats(work, axes, eps)
        out = c * inv
        if w is not None:
            out *= _work(nd(w))
        if b is not None:
            out += _work(nd(b))
        dev = x._device
        return wrap(_back(out, a.dtype), dev), wrap(_back(mean, a.dtype), dev), wrap(_back(inv, a.dtype), dev)


    # -- embedding, dropout ---------------------------------------------------------------------------------

    def k_embedding(w, idx, padding_idx):
        wt, ii = nd(w), nd(idx)
        return wrap(xp.take(wt, ii.ravel(), axis=0).reshape(ii.shape + (wt.shape[1],)), w._device)


    def k_embedding_backward(g, idx, num, padding_idx):
        gg, ii = nd(g), nd(idx).ravel()
        D_ = gg.shape[-1]
        g2 = gg.reshape(-1, D_)
        acc = xp.float32 if gg.dtype.itemsize == 2 else gg.dtype
        out = xp.zeros((num, D_), dtype=acc)
        xp.add.at(out, ii, g2.astype(acc, copy=False))
        if padding_idx is not None:
            out[padding_idx] = 0
        return wrap(out.astype(gg.dtype, copy=False), g._device)


    def k_dropout(x, p, gen):
        a = nd(x)
        rd = xp.float64 if a.dtype == xp.float64 else xp.float32
        keep = gen.rng.random(a.shape, dtype=rd) >= p
        mask = keep.astype(a.dtype) * a.dtype.type(1.0 / (1.0 - p))
        return wrap(a * mask, x._device), wrap(mask, x._device)


    return {
        "threshold_backward": k_threshold_backward, "softmax": k_softmax, "log_softmax": k_log_softmax, "nll_loss": k_nll_loss, "linear": k_linear,
        "constant_pad_nd": k_constant_pad_nd, "convolution": k_convolution, "conv_transpose": k_conv_transpose,
        "conv_weight_grad": k_conv_weight_grad, "im2col": k_im2col, "col2im": k_col2im, "max_pool": k_max_pool,
        "max_pool_backward": k_max_pool_backward, "avg_pool": k_avg_pool, "avg_pool_backward": k_avg_pool_backward,
        "batch_norm": k_batch_norm, "batch_norm_backward": k_batch_norm_backward, "layer_norm": k_layer_norm,
        "embedding": k_embedding, "embedding_backward": k_embedding_backward, "dropout": k_dropout,
    }


KERNELS = make_kernels()
