"""Normalisation: batch norm (training statistics, forward and backward) and layer norm, in
float32 for 16-bit floats; per-channel sums run over contiguous rows."""
from __future__ import annotations

import math

from .base import KernelGroup
from .rules import back, work


class Normalization(KernelGroup):
    """batch_norm, batch_norm_backward, layer_norm."""

    def _chan_sum(self, a3):
        """Per-channel sums of (N, C, L): the contiguous axis first (pairwise summation)."""
        return a3.sum(axis=2).sum(axis=0)

    def _chan_dot(self, u3, v3):
        """Per-channel sums of u * v for (N, C, L) arrays: N*C dot products through matmul (no
        product array) when rows are long enough to pay for a BLAS call each."""
        if u3.shape[2] < 8:
            return self._chan_sum(u3 * v3)
        return self.xp.matmul(u3[:, :, None, :], v3[:, :, :, None]).reshape(u3.shape[:2]).sum(axis=0)

    def batch_norm(self, x, w, b, eps):
        a = self.nd(x)
        N, C = a.shape[:2]
        a3 = work(a).reshape(N, C, math.prod(a.shape[2:]))  # (not -1: N may be 0)
        n = max(a3.shape[0] * a3.shape[2], 1)  # an empty batch: zero statistics, not 0 / 0
        mean = self._chan_sum(a3) / n
        out = a3 - mean[:, None]
        inv = 1.0 / self.xp.sqrt(self._chan_dot(out, out) / n + eps)
        scale = inv if w is None else inv * work(self.nd(w))
        out *= scale[:, None]  # the centred input's buffer becomes the output
        if b is not None:
            out += work(self.nd(b))[:, None]
        dev, wrap = x._device, self.wrap
        return (wrap(back(out.reshape(a.shape), a.dtype), dev), wrap(back(mean, a.dtype), dev),
                wrap(back(inv, a.dtype), dev))

    def batch_norm_backward(self, g, x, w, mean, invstd, need_w, need_b):
        nd = self.nd
        gg, a = work(nd(g)), work(nd(x))
        dt = nd(x).dtype
        N, C = a.shape[:2]
        L = math.prod(a.shape[2:])
        g3 = self.xp.ascontiguousarray(gg).reshape(N, C, L)
        a3 = a.reshape(N, C, L)
        n = max(N * L, 1)
        m = work(nd(mean))
        inv = work(nd(invstd))
        gb = self._chan_sum(g3)
        xc = a3 - m[:, None]  # centred before any product: no cancellation for inputs far from 0
        gw = self._chan_dot(g3, xc) * inv  # sum(g * xhat) per channel
        # gx = w * inv * (g - (gb + xhat * gw) / n), in xc's buffer: four in-place passes
        xc *= (-inv * gw / n)[:, None]
        xc += g3
        xc -= (gb / n)[:, None]
        xc *= (inv if w is None else inv * work(nd(w)))[:, None]
        dev, wrap = x._device, self.wrap
        return wrap(back(xc.reshape(a.shape), dt), dev), wrap(back(gw, dt), dev), wrap(back(gb, dt), dev)

    def layer_norm(self, x, w, b, k, eps):
        xp = self.xp
        a = self.nd(x)
        w32 = work(a)
        axes = tuple(range(a.ndim - k, a.ndim))
        mean = w32.mean(axis=axes, keepdims=True)
        out = w32 - mean
        inv = 1.0 / xp.sqrt(xp.mean(out * out, axis=axes, keepdims=True) + eps)
        out = out * inv
        if w is not None:
            out *= work(self.nd(w))
        if b is not None:
            out += work(self.nd(b))
        dev, wrap = x._device, self.wrap
        return wrap(back(out, a.dtype), dev), wrap(back(mean, a.dtype), dev), wrap(back(inv, a.dtype), dev)

    def table(self) -> dict:
        return {"batch_norm": self.batch_norm, "batch_norm_backward": self.batch_norm_backward,
                "layer_norm": self.layer_norm}
