"""Softmax and the losses built on it: ``softmax``, ``log_softmax`` (max-shifted, in float32 for
16-bit floats) and ``nll_loss`` (class weights, ``ignore_index``, the three reductions)."""
from __future__ import annotations

from .base import KernelGroup
from .rules import back, work


class Losses(KernelGroup):
    """softmax, log_softmax, nll_loss."""

    def softmax(self, x, dim):
        a = self.nd(x)
        if a.size == 0:  # an empty result (max refuses to reduce an empty dim)
            return self.wrap(a.copy(), x._device)
        w = work(a)
        e = self.xp.exp(w - w.max(axis=dim, keepdims=True))
        e /= e.sum(axis=dim, keepdims=True)
        return self.wrap(back(e, a.dtype), x._device)

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
        return {"softmax": self.softmax, "log_softmax": self.log_softmax, "nll_loss": self.nll_loss}
