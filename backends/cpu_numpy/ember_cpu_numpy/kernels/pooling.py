"""Pooling: max pooling (with the flat indices of each window's maximum) and average pooling,
and their backwards, on strided window views of the padded input."""
from __future__ import annotations

import itertools
import math

from ember.backend.shapes import avg_divisor, pool_out, pool_pads

from .base import KernelGroup
from .rules import back, work
from .windows import sliding_windows, spatial_pad


class Pooling(KernelGroup):
    """max_pool and avg_pool, forward and backward."""

    def __init__(self, ns):
        super().__init__(ns)
        self.strided = ns.strided

    def windows(self, a, kernel, stride, padding, dilation, out_sp, fill):
        """(N, C, *kernel, *out) strided view of the windows of (N, C, *sp) ``a`` padded with ``fill``."""
        xp = self.xp
        right = pool_pads(a.shape[2:], out_sp, kernel, stride, padding, dilation)
        xpad = xp.ascontiguousarray(spatial_pad(xp, a, padding, right, fill))
        return sliding_windows(self.strided, xpad, kernel, dilation, stride, out_sp)

    def _max_pool_2x2(self, a, in_sp, out_sp):
        """2x2 windows, stride 2, no padding: a tournament of three maximums."""
        xp = self.xp
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

    def _max_pool_small(self, a, kernel, stride, padding, dilation, in_sp, out_sp, fill):
        """Running max over the K window offsets (K strided passes; no window copy, no argmax)."""
        xp = self.xp
        nsp = len(kernel)
        right = pool_pads(in_sp, out_sp, kernel, stride, padding, dilation)
        xpad = spatial_pad(xp, a, padding, right, fill)
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
            o = (xp.arange(out_sp[i], dtype=xp.int64).reshape((out_sp[i],) + (1,) * (nsp - 1 - i)) * stride[i]
                 - padding[i])
            base = o if base is None else base * in_sp[i] + o
        flat = base + xp.asarray(offsets, dtype=xp.int64)[arg]
        return best, flat

    def _window_masks(self, in_sp, out_sp, kernel, stride, padding, dilation):
        """(*out, K) masks of the window positions inside the image, and at or past its start."""
        xp = self.xp
        nsp = len(kernel)
        inside = started = True
        for i in range(nsp):
            c = (xp.arange(out_sp[i])[:, None] * stride[i] - padding[i]
                 + xp.arange(kernel[i])[None, :] * dilation[i])  # (out_i, k_i)
            shape = [1] * (2 * nsp)
            shape[i], shape[nsp + i] = out_sp[i], kernel[i]
            inside = inside & ((c >= 0) & (c < in_sp[i])).reshape(shape)
            started = started & (c >= 0).reshape(shape)
        K = math.prod(kernel)
        return inside.reshape(tuple(out_sp) + (K,)), started.reshape(tuple(out_sp) + (K,))

    def max_pool(self, x, kernel, stride, padding, dilation, ceil_mode):
        xp, wrap = self.xp, self.wrap
        a = self.nd(x)
        nsp = len(kernel)
        in_sp = a.shape[2:]
        out_sp = tuple(pool_out(in_sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nsp))
        w32 = work(a)
        fill = -xp.inf if w32.dtype.kind == "f" else xp.iinfo(w32.dtype).min  # (bfloat16 works in float32)
        # small windows without NaN: a running max over the window offsets (NaN inputs take the
        # argmax path below, which propagates NaN as PyTorch does)
        if math.prod(kernel) <= 64:
            if (kernel == (2, 2) and stride == (2, 2) and padding == (0, 0) and dilation == (1, 1)
                    and 2 * out_sp[0] <= in_sp[0] and 2 * out_sp[1] <= in_sp[1]):  # no ceil-mode partial window
                vals, flat = self._max_pool_2x2(w32, in_sp, out_sp)
            else:
                vals, flat = self._max_pool_small(w32, kernel, stride, padding, dilation, in_sp, out_sp, fill)
            # NaN windows take their indices from the path below (an empty result has none), and
            # so do windows whose maximum is the padding's value (the padding may come first)
            if not ((w32.dtype.kind == "f" and vals.size and xp.isnan(vals.max()))
                    or (any(padding) and vals.size and (vals == fill).any())):
                return wrap(back(vals, a.dtype), x._device), wrap(xp.ascontiguousarray(flat), x._device)
        win = self.windows(w32, kernel, stride, padding, dilation, out_sp, fill)
        perm = (0, 1) + tuple(range(2 + nsp, 2 + 2 * nsp)) + tuple(range(2, 2 + nsp))
        w = win.transpose(perm).reshape(a.shape[:2] + out_sp + (-1,))
        # PyTorch's loop: over the window's in-image positions, the first one greater than the
        # running max (from -inf) or any NaN (so the last NaN); none: the window's first position
        # at or past the image's start (outside it only in a window all of padding)
        inside, started = self._window_masks(in_sp, out_sp, kernel, stride, padding, dilation)
        vals = w.max(axis=-1)
        cand = (w == vals[..., None]) & inside
        am = xp.where(cand.any(axis=-1), cand.argmax(axis=-1), started.argmax(axis=-1))
        if w.dtype.kind == "f":
            nans = xp.isnan(w) & inside
            some = nans.any(axis=-1)
            if some.any():
                am = xp.where(some, w.shape[-1] - 1 - nans[..., ::-1].argmax(axis=-1), am)
        kk = xp.unravel_index(am, kernel)
        flat = None
        for i in range(nsp):
            o = xp.arange(out_sp[i]).reshape((out_sp[i],) + (1,) * (nsp - 1 - i))
            coord = o * stride[i] - padding[i] + kk[i] * dilation[i]
            flat = coord if flat is None else flat * in_sp[i] + coord
        return (wrap(back(xp.ascontiguousarray(vals), a.dtype), x._device),
                wrap(xp.ascontiguousarray(flat, dtype=xp.int64), x._device))

    def max_pool_backward(self, g, idx, in_shape):
        xp, wrap = self.xp, self.wrap
        gg = self.nd(g)
        ii = self.nd(idx)
        N, C = in_shape[:2]
        S = math.prod(in_shape[2:])
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

    def _divisor(self, in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov, dtype):
        xp = self.xp
        per = avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov)
        if per is None:
            return float(dov)
        d = xp.ones((), dtype=dtype)
        for i, sizes in enumerate(per):
            d = d[..., None] * xp.asarray(sizes, dtype=dtype) if i else xp.asarray(sizes, dtype=dtype)
        return d

    def avg_pool(self, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
        a = self.nd(x)
        nsp = len(kernel)
        in_sp = a.shape[2:]
        out_sp = tuple(pool_out(in_sp[i], kernel[i], stride[i], padding[i], 1, ceil_mode) for i in range(nsp))
        win = self.windows(work(a), kernel, stride, padding, (1,) * nsp, out_sp, 0.0)
        s = win.sum(axis=tuple(range(2, 2 + nsp)))
        s = s / self._divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
                              s.dtype)
        return self.wrap(back(self.xp.ascontiguousarray(s), a.dtype), x._device)

    def avg_pool_backward(self, g, in_shape, kernel, stride, padding, ceil_mode, cip, dov):
        xp = self.xp
        gg = work(self.nd(g))
        nsp = len(kernel)
        in_sp = tuple(in_shape[2:])
        out_sp = gg.shape[2:]
        gd = gg / self._divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, cip, dov, gg.dtype)
        right = pool_pads(in_sp, out_sp, kernel, stride, padding, (1,) * nsp)
        padded = tuple(in_sp[i] + padding[i] + right[i] for i in range(nsp))
        out = xp.zeros(tuple(in_shape[:2]) + padded, dtype=gg.dtype)
        for kk in itertools.product(*(range(k) for k in kernel)):
            sl = (slice(None), slice(None)) + tuple(slice(kk[i], kk[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i])
                                                    for i in range(nsp))
            out[sl] += gd
        out = out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_sp))]
        return self.wrap(back(xp.ascontiguousarray(out), self.nd(g).dtype), g._device)

    def table(self) -> dict:
        return {"max_pool": self.max_pool, "max_pool_backward": self.max_pool_backward, "avg_pool": self.avg_pool,
                "avg_pool_backward": self.avg_pool_backward}
