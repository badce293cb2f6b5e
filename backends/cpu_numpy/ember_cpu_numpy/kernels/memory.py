"""Kernels that move data: strided copies with casts, fills, clones, concatenation, flips and
constant padding."""
from __future__ import annotations

from .base import KernelGroup
from .windows import pad_array


class Memory(KernelGroup):
    """Copies, fills and layout changes."""

    def copy_(self, dst, src):
        if src._device is not dst._device and src._device._type != "cpu":
            raise RuntimeError(f"copy_: cpu_numpy can't read a tensor on {src._device}")
        self.xp.copyto(self.nd(dst), self.nd(src), casting="unsafe")
        return dst

    def fill_(self, dst, value):
        self.nd(dst).fill(value)
        return dst

    def to_copy(self, x, dtype, dev):
        return self.wrap(self.nd(x).astype(dtype.np, copy=True), dev)

    def clone(self, x):
        return self.wrap(self.nd(x).copy(), x._device)

    def cat(self, tensors, d):
        nd = self.nd
        return self.wrap(self.xp.concatenate([nd(t) for t in tensors], axis=d), tensors[0]._device)

    def flip(self, x, dims):
        xp = self.xp
        return self.wrap(xp.ascontiguousarray(xp.flip(self.nd(x), dims)), x._device)

    def constant_pad_nd(self, x, pad, value):
        a = self.nd(x)
        n = a.ndim
        lohi = [(0, 0)] * n
        for i in range(len(pad) // 2):
            lohi[n - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        return self.wrap(self.xp.ascontiguousarray(pad_array(self.xp, a, lohi, value)), x._device)

    def table(self) -> dict:
        return {"copy_": self.copy_, "fill_": self.fill_, "_to_copy": self.to_copy, "clone": self.clone,
                "cat": self.cat, "flip": self.flip, "constant_pad_nd": self.constant_pad_nd}
