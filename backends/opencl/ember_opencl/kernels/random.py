"""Random fills with a counter-based generator: Philox4x32-10 (Salmon et al., SC'11).

A generator is a 64-bit key (the seed) and a 64-bit call counter. A fill of n values takes one
Philox block per work-item, counter = (work-item, call): the stream is the same whatever the
device's work-group size, and no state lives on the device. ``get_state`` is the seed and the
counter as 16 little-endian bytes (plus a magic tag), so it round-trips exactly.
"""
from __future__ import annotations

import functools
import struct

import numpy as np

from ember.backend import BackendGenerator, DEFAULT_SEED, Tensor

from . import tensors as tn
from .args import Args
from .memory import k_copy_
from .types import T, preamble

_MAGIC = b"EPX1"

PHILOX = r"""
inline uint4 philox(uint4 c, uint2 k) {
  for (int r = 0; r < 10; ++r) {
    uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k.x += 0x9E3779B9u; k.y += 0xBB67AE85u;
  }
  return c;
}
"""


@functools.lru_cache(maxsize=None)
def _args(ct: str) -> Args:
    """``n`` values from element ``off``; the Philox ``key`` (the seed) and ``call`` counter; ``a``
    and ``b``, the low/high bounds or the mean/std, in ``ct`` (float, or double)."""
    return Args().long("n", "off").ulong("key", "call").scalar("a", ct).scalar("b", ct)


def _source(t, dist: str):
    dbl = t.ct == "double"
    per = 2 if dbl else 4
    lines = [preamble(t), PHILOX, _args("double" if dbl else "float").struct(),
             f"__kernel void rng({t.ptr()} out, const M m) {{",
             "  long g = get_global_id(0); long n = m.n;",
             f"  if (g * {per} >= n) return;",
             "  uint4 c = (uint4)((uint)g, (uint)((ulong)g >> 32), (uint)m.call, (uint)(m.call >> 32));",
             "  uint4 r = philox(c, (uint2)((uint)m.key, (uint)(m.key >> 32)));"]
    if dbl:
        lines.append("  double a = m.a, b = m.b;")
        lines.append("  double u0 = ((r.x >> 5) * 67108864.0 + (r.y >> 6)) * (1.0 / 9007199254740992.0);")
        lines.append("  double u1 = ((r.z >> 5) * 67108864.0 + (r.w >> 6)) * (1.0 / 9007199254740992.0);")
        us = ["u0", "u1"]
        ct = "double"
    else:
        lines.append("  float a = m.a, b = m.b;")
        lines.append("  float u0 = (r.x >> 8) * (1.0f / 16777216.0f), u1 = (r.y >> 8) * (1.0f / 16777216.0f);")
        lines.append("  float u2 = (r.z >> 8) * (1.0f / 16777216.0f), u3 = (r.w >> 8) * (1.0f / 16777216.0f);")
        us = ["u0", "u1", "u2", "u3"]
        ct = "float"
    vals = []
    if dist == "uniform":
        for u in us:
            lines.append(f"  {ct} v{u} = a + (b - a) * {u}; if (v{u} >= b && b > a) v{u} = nextafter(b, a);")
            vals.append(f"v{u}")
    else:  # Box-Muller on pairs, u in [0, 1) so 1 - u is in (0, 1]
        two_pi = "6.283185307179586" + ("" if dbl else "f")
        for i in range(0, len(us), 2):
            u, w = us[i], us[i + 1]
            lines.append(f"  {ct} rad{i} = sqrt(-2 * log(1 - {u})), th{i} = {two_pi} * {w};")
            lines.append(f"  {ct} z{i} = a + b * rad{i} * cos(th{i}), z{i + 1} = a + b * rad{i} * sin(th{i});")
            vals += [f"z{i}", f"z{i + 1}"]
    lines.append(f"  long o = m.off + g * {per};")
    for j, v in enumerate(vals):
        lines.append(f"  if (g * {per} + {j} < n) " + t.store("out", f"o + {j}", f"({t.ct})({v})") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n", "rng"


class PhiloxGenerator(BackendGenerator):
    """The backend generator object behind ``ember.Generator('opencl:N')``: the seed is the
    Philox key, ``calls`` counts the fills since it was set (seeding is the base class's)."""

    def __init__(self, device=None, seed: int = DEFAULT_SEED):
        self.device = device
        super().__init__(seed)

    def reset(self, seed: int) -> None:
        self.calls = 0

    def get_state(self) -> np.ndarray:
        raw = _MAGIC + struct.pack("<QQ", self._seed, self.calls)
        return np.frombuffer(raw, dtype=np.uint8).copy()

    def set_state(self, arr: np.ndarray) -> None:
        raw = bytes(np.asarray(arr, dtype=np.uint8))
        if len(raw) != 20 or raw[:4] != _MAGIC:
            raise RuntimeError(f"set_state: expected an opencl (Philox) generator state of 20 bytes starting with "
                               f"{_MAGIC!r}, got {len(raw)} bytes")
        self._seed, self.calls = struct.unpack("<QQ", raw[4:])

    def next_call(self) -> int:
        c = self.calls
        self.calls = (c + 1) & 0xFFFFFFFFFFFFFFFF
        return c


def _fill(dist: str, t_: Tensor, a: float, b: float, gen: PhiloxGenerator) -> Tensor:
    cd = tn.cl_dev(t_)
    t = T(t_._dtype)
    n = t_.numel()
    if n == 0:
        return t_
    if not t_.is_contiguous():
        tmp = tn.new_tensor(cd, t_._shape, t_._dtype, t_._device)
        _fill(dist, tmp, a, b, gen)
        return k_copy_(t_, tmp)
    dbl = t.ct == "double"
    meta = _args("double" if dbl else "float").pack(n=n, off=t_._offset, key=gen._seed, call=gen.next_call(),
                                                     a=a, b=b)
    per = 2 if dbl else 4
    k = cd.kernel(("rng", dist, t.name), lambda: _source(t, dist))
    items = (n + per - 1) // per
    tn.launch_1d(cd, k, items, (t_,), meta, 64)
    return t_


def k_uniform_(t: Tensor, low: float, high: float, gen) -> Tensor:
    return _fill("uniform", t, low, high, gen)


def k_normal_(t: Tensor, mean: float, std: float, gen) -> Tensor:
    return _fill("normal", t, mean, std, gen)


KERNELS = {"uniform_": k_uniform_, "normal_": k_normal_}
