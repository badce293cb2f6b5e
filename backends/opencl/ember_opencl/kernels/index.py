"""Indexing kernels: gather, scatter_add, index_select (fast path) and nonzero.

Every index is checked on the device: a kernel that meets an index outside its dim neither
reads nor writes there; it records the bad value in the device's error flag, and the host
raises IndexError after the launch (which waits for the kernel: the price of never touching
memory out of bounds).
"""
from __future__ import annotations

import functools
import math

from ember.backend import dtypes as D
from ember.backend import Tensor
from ember.backend import index_error

from . import layout as L
from . import tensors as tn
from .args import Args
from .memory import clone
from .pointwise import KERNELS as PW
from .scan import scan
from .types import T, TYPES, preamble

I64 = TYPES["int64"]


def _raise_if_bad(cd, op: str, dim: int, size: int) -> None:
    bad = cd.read_error()
    if bad is not None:
        raise index_error(op, bad, dim, size)


def _region_strides(t: Tensor, d: int, zero_d: bool) -> list:
    st = list(t._stride)
    if zero_d:
        st[d] = 0
    return st


# -- gather (and index_select) -----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _gather_args(R: int) -> Args:
    """``n`` outputs over ``shape[R]``; ``off_i``/``st_i`` the index's offset and strides,
    ``off_x``/``st_x`` x's (0 along the gathered dim), ``size`` and ``st_d`` x's size and stride
    along it."""
    return Args().long("n", "off_i", "off_x", "size", "st_d").array("shape", R).array("st_i", R).array("st_x", R)


def _gather_src(xt, R):
    lines = [preamble(xt), _gather_args(R).struct(),
             f"__kernel void gather({xt.ptr()} out, const __global long* idx, const {xt.ptr()} x, "
             "__global long* err, const M m) {",
             "  long g = get_global_id(0); if (g >= m.n) return;",
             "  long oi = m.off_i, ox = m.off_x;",
             L.offsets_code(R, ["oi", "ox"], "m.shape", ["m.st_i", "m.st_x"], "g"),
             "  long v = idx[oi];",
             "  if (v < 0 || v >= m.size) { err[0] = 1; err[1] = v; " + xt.store("out", "g", "0") + "; return; }",
             "  " + xt.store("out", "g", xt.load("x", "ox + v * m.st_d")) + ";",
             "}"]
    return "\n".join(lines) + "\n", "gather"


def _gather(x: Tensor, d: int, index: Tensor, op: str) -> Tensor:
    """out[p] = x[p with coordinate d replaced by index[p]] over ``index``'s shape (any strides)."""
    cd = tn.cl_dev(x)
    xt = T(x._dtype)
    shape = index._shape
    out = tn.new_tensor(cd, shape, x._dtype, x._device)
    n = out.numel()
    if n == 0:
        return out
    if not shape:  # 0-d
        x, index, shape, d = tn.view(x, (1,), (0,)), tn.view(index, (1,), (0,)), (1,), 0
    R = len(shape)
    meta = _gather_args(R).pack(n=n, off_i=index._offset, off_x=x._offset, size=x._shape[d], st_d=x._stride[d],
                                shape=shape, st_i=index._stride, st_x=_region_strides(x, d, True))
    k = cd.kernel(("gather", xt.name, R), lambda: _gather_src(xt, R))
    tn.launch_1d(cd, k, n, (out, index, x, cd.error_buffer()), meta, 64)
    _raise_if_bad(cd, op, d, x._shape[d])
    return out


def k_gather(x: Tensor, d: int, index: Tensor) -> Tensor:
    return _gather(x, d, index, "gather")


def k_index_select(x: Tensor, d: int, index: Tensor) -> Tensor:
    """A gather whose index is ``index`` (1-D) broadcast over every dim but ``d``."""
    if len(index._shape) != 1:
        index = tn.view(clone(index), (index.numel(),))
    if not x._shape:
        x = tn.view(x, (1,), (0,))
    shape = x._shape[:d] + (index._shape[0],) + x._shape[d + 1:]
    ist = [0] * len(shape)
    ist[d] = index._stride[0]
    return _gather(x, d, tn.view(index, shape, tuple(ist)), "index_select")


# -- scatter_add -------------------------------------------------------------------------------

def _atomic_add(t, dev) -> str | None:
    """C statement ``p[o] += v`` done atomically, or None when this dtype has no atomics here."""
    if t.name == "float32":
        return ("{ volatile __global uint* q = (volatile __global uint*)(p + o); uint old = *q, seen;"
                " do { seen = old; old = atomic_cmpxchg(q, seen, as_uint(as_float(seen) + v)); }"
                " while (old != seen); }")
    if t.name == "int32":
        return "atomic_add(p + o, v);"
    if dev.int64_atomics:
        if t.name == "float64":
            return ("{ volatile __global ulong* q = (volatile __global ulong*)(p + o); ulong old = *q, seen;"
                    " do { seen = old; old = atom_cmpxchg(q, seen, as_ulong(as_double(seen) + v)); }"
                    " while (old != seen); }")
        if t.name == "int64":
            return "atom_add(p + o, v);"
    return None


@functools.lru_cache(maxsize=None)
def _scatter_args(R: int) -> Args:
    """``n`` updates over ``shape[R]``; the index's and src's offsets and strides (``off_i``,
    ``st_i``, ``off_s``, ``st_s``); the output's strides ``st_o`` (0 along the scattered dim), its
    ``size`` and stride ``st_d`` along it."""
    return (Args().long("n", "off_i", "off_s", "size", "st_d").array("shape", R).array("st_i", R)
            .array("st_s", R).array("st_o", R))


def _scatter_src(xt, st, R, atomic, serial):
    need64 = atomic is not None and ("atom_" in atomic)
    lines = [preamble(xt, st, atomics64=need64), _scatter_args(R).struct(),
             f"__kernel void scat({xt.ptr()} p, const __global long* idx, const {st.ptr()} src, "
             "__global long* err, const M m) {"]
    if serial:
        lines.append("  if (get_global_id(0) != 0) return;")
        lines.append("  for (long g = 0; g < m.n; ++g) {")
    else:
        lines.append("  long g = get_global_id(0); if (g >= m.n) return;")
        lines.append("  {")
    lines.append("  long oi = m.off_i, os = m.off_s, o = 0;")
    lines.append(L.offsets_code(R, ["oi", "os", "o"], "m.shape", ["m.st_i", "m.st_s", "m.st_o"], "g"))
    lines.append("  long iv = idx[oi];")
    lines.append("  if (iv < 0 || iv >= m.size) { err[0] = 1; err[1] = iv; continue; }" if serial else
                 "  if (iv < 0 || iv >= m.size) { err[0] = 1; err[1] = iv; return; }")
    lines.append("  o += iv * m.st_d;")
    lines.append(f"  {xt.ct} v = ({xt.ct})({st.load('src', 'os')});")
    if serial:
        lines.append("  " + xt.store("p", "o", f"{xt.load('p', 'o')} + v") + ";")
    else:
        lines.append("  " + atomic)
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", "scat"


def scatter_add_into(out: Tensor, d: int, index: Tensor, src: Tensor, op: str = "scatter_add",
                     check: bool = True) -> Tensor:
    """Add ``src`` into the contiguous tensor ``out`` at ``index`` along ``d`` (in place).
    ``check=False`` (indices this backend produced itself) skips reading the error flag, so the
    queue does not wait; the kernel still never writes out of bounds."""
    cd = tn.cl_dev(out)
    xt, st = T(out._dtype), T(src._dtype)
    shape = index._shape
    n = math.prod(shape)
    if n == 0:
        return out
    if not shape:
        out, index, src, shape, d = tn.view(out, (1,)), tn.view(index, (1,), (0,)), tn.view(src, (1,), (0,)), (1,), 0
    R = len(shape)
    atomic = _atomic_add(xt, cd) if st is xt else None
    serial = atomic is None or n <= 4096  # small or without atomics: one work-item, in order (deterministic)
    meta = _scatter_args(R).pack(n=n, off_i=index._offset, off_s=src._offset, size=out._shape[d],
                                 st_d=out._stride[d], shape=shape, st_i=index._stride, st_s=src._stride,
                                 st_o=_region_strides(out, d, True))
    k = cd.kernel(("scatter_add", xt.name, st.name, R, serial), lambda: _scatter_src(xt, st, R, atomic, serial))
    gs = (1,) if serial else (L.round_up(n, 64),)
    ls = (1,) if serial else (64,)
    cd.launch(k, gs, ls, (out._storage._data.cl, index._storage._data.cl, src._storage._data.cl, cd.error_buffer()),
              meta)
    if check:
        _raise_if_bad(cd, op, d, out._shape[d])
    return out


def k_scatter_add(x: Tensor, d: int, index: Tensor, src: Tensor) -> Tensor:
    out = clone(x)
    return scatter_add_into(out, d, index, src)


# -- nonzero -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _nz_args(R: int) -> Args:
    """``n`` flags over ``shape[R]``."""
    return Args().long("n").array("shape", R)


def _nz_src(R):
    # pos = inclusive prefix sums of the flags
    lines = [_nz_args(R).struct(),
             "__kernel void nzw(__global long* out, const __global uchar* flag, const __global long* pos, const M m) {",
             "  long g = get_global_id(0); if (g >= m.n || !flag[g]) return;",
             "  long row = pos[g] - 1; long r_ = g;"]
    for d in range(R - 1, -1, -1):
        if d == 0:
            lines.append(f"  out[row * {R} + 0] = r_;")
        else:
            lines.append(f"  {{ long s_ = m.shape[{d}]; out[row * {R} + {d}] = r_ % s_; r_ /= s_; }}")
    lines.append("}")
    return "\n".join(lines) + "\n", "nzw"


def k_nonzero(x: Tensor) -> Tensor:
    cd = tn.cl_dev(x)
    R = len(x._shape)
    n = x.numel()
    if n == 0:
        return tn.new_tensor(cd, (0, R), D.int64, x._device)
    flag = PW["ne"](x, False if x._dtype is D.bool else 0)  # contiguous bool
    flat = tn.view(flag, (n,))
    pos = scan("cumsum", flat, 0, D.int64)
    total = int(tn.view(pos, (), (), n - 1).item())
    out = tn.new_tensor(cd, (total, R), D.int64, x._device)
    if total == 0 or R == 0:
        return out
    k = cd.kernel(("nonzero", R), lambda: _nz_src(R))
    tn.launch_1d(cd, k, n, (out, flag, pos), _nz_args(R).pack(n=n, shape=x._shape))
    return out


KERNELS = {"gather": k_gather, "scatter_add": k_scatter_add, "index_select": k_index_select, "nonzero": k_nonzero}
