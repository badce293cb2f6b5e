"""Softmax and the losses built on it: ``softmax``, ``log_softmax`` (max-shifted, in float32 for
16-bit floats), their gradients, and ``nll_loss`` (class weights, ``ignore_index``, the three
reductions).

In float32 these kernels keep subnormal numbers out of what they return: a probability below
float32's smallest normal number (1.2e-38) is returned as 0, and so is a term of a gradient that
would underflow into that range. PyTorch's vectorised softmax does the same, and the difference
matters for speed, not for values: a language model's logit gradient was a third subnormals, and
OpenBLAS multiplied it 30 times slower than the same matrix of normal numbers (numpy's ``exp``
returns subnormals where the IEEE result is one)."""
from __future__ import annotations

import numpy as np

from .base import KernelGroup
from .rules import back, work

_TINY32 = float(np.finfo(np.float32).tiny)
_LOG_TINY32 = float(np.log(np.float32(_TINY32)))


class Losses(KernelGroup):
    """softmax, log_softmax, nll_loss."""

    def softmax(self, x, dim):
        a = self.nd(x)
        if a.size == 0:  # an empty result (max refuses to reduce an empty dim)
            return self.wrap(a.copy(), x._device)
        xp = self.xp
        w = work(a)
        e = w - w.max(axis=dim, keepdims=True)
        xp.exp(e, out=e)
        e /= e.sum(axis=dim, keepdims=True)
        if e.dtype == np.float32:
            xp.copyto(e, 0, where=e < _TINY32)  # subnormal probabilities: 0
        return self.wrap(back(e, a.dtype), x._device)

    def _softmax_backward_data(self, g, y, dim):
        xp = self.xp
        a = self.nd(g)
        gw, yw = work(a), work(self.nd(y))
        gy = gw * yw
        r = gy - yw * gy.sum(axis=dim, keepdims=True)
        if r.dtype == np.float32:
            xp.copyto(r, 0, where=xp.abs(r) < _TINY32)
        return self.wrap(back(r, a.dtype), g._device)

    def _log_softmax_backward_data(self, g, y, dim):
        xp = self.xp
        a = self.nd(g)
        gw, yw = work(a), work(self.nd(y))
        s = gw.sum(axis=dim, keepdims=True)
        if yw.dtype == np.float32:
            # exp(y) * s is subnormal where y < log(tiny / |s|): y is raised to that bound, so such a
            # term becomes +-tiny (off by less than 1.2e-38, in four passes with no temporaries);
            # s == 0 needs no bound, and NaN in s or y goes through maximum as NaN
            with np.errstate(divide="ignore"):
                cut = (_LOG_TINY32 + 0.01) - xp.log(xp.abs(s))  # (+0.01: clear of rounding to below tiny)
            cut[s == 0] = -np.inf
            p = xp.maximum(yw, cut)
            xp.exp(p, out=p)
        else:
            p = xp.exp(yw)
        p *= s
        r = xp.subtract(gw, p, out=p)
        return self.wrap(back(r, a.dtype), g._device)

    def log_softmax(self, x, dim):
        xp = self.xp
        a = self.nd(x)
        if a.size == 0:
            return self.wrap(a.copy(), x._device)
        w = work(a)
        s = w - w.max(axis=dim, keepdims=True)
        s -= xp.log(xp.exp(s).sum(axis=dim, keepdims=True))
        return self.wrap(back(s, a.dtype), x._device)

    def nll_loss(self, logp, target, weight, reduction, ignore_index):
        xp = self.xp
        lp = self.nd(logp)
        t = self.nd(target)
        valid = t != ignore_index
        safe = xp.where(valid, t, 0)
        C = lp.shape[1]
        if safe.size and (safe.min() < 0 or safe.max() >= C):
            bad = safe[(safe < 0) | (safe >= C)][0]
            raise IndexError(f"nll_loss: Target {int(bad)} is out of bounds (the input has {C} classes).")
        picked = lp[xp.arange(lp.shape[0]), safe].astype(xp.float64 if lp.dtype == xp.float64 else xp.float32)
        w = valid.astype(picked.dtype)
        if weight is not None:
            w = w * self.nd(weight)[safe]
        loss = xp.where(valid, -(picked * w), 0.0)  # an ignored target adds nothing (not 0 * -inf)
        if reduction == "none":
            r = loss
        elif reduction == "sum":
            r = xp.asarray(loss.sum())
        else:
            r = xp.asarray(loss.sum() / w.sum()) if w.sum() != 0 else xp.asarray(xp.nan)
        return self.wrap(r.astype(lp.dtype), logp._device)

    def table(self) -> dict:
        return {"softmax": self.softmax, "log_softmax": self.log_softmax, "nll_loss": self.nll_loss,
                "_softmax_backward_data": self._softmax_backward_data,
                "_log_softmax_backward_data": self._log_softmax_backward_data}
