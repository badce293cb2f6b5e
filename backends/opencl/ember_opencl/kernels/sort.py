"""Sort along one dim: a stable merge sort of (key, index) rows.

Rows are the other dims. The rows are gathered into contiguous key/index buffers, runs of 16
are sorted by insertion (one work-item per run), then runs are merged pairwise, doubling their
width, one work-item per merge, until one run covers each row; the results are written back in
the input's dim order. NaN sorts last ascending and first descending, as in PyTorch; equal keys
keep their order (stable) in both directions.
"""
from __future__ import annotations

from ember.backend import dtypes as D
from ember.backend import Tensor

from . import layout as L
from . import tensors as tn
from .memory import k_copy_, k_fill_
from .types import T, TYPES, preamble

RUN = 16


def _before(t, desc: bool) -> str:
    """C macro body: key ``a`` goes strictly before key ``b``."""
    if t.is_float:
        if desc:
            return "((a) > (b) || (isnan(a) && !isnan(b)))"
        return "((a) < (b) || (!isnan(a) && isnan(b)))"
    return "((a) > (b))" if desc else "((a) < (b))"


def _source(it, kt, Rk, desc):
    # arguments: layout.rows_args with ``w``, the width of the runs being merged
    kc = kt.ct
    L_ = [preamble(it, kt), L.rows_args(Rk, "w").struct(),
          f"#define BEFORE(a, b) {_before(kt, desc)}"]
    # gather rows + sort runs of RUN by insertion
    L_.append(f"__kernel void init(__global {kc}* key, __global long* ix, const {it.ptr()} x, const M m) {{")
    L_.append("  long M_ = m.rows, K = m.k;")
    L_.append(f"  long runs = (K + {RUN - 1}) / {RUN}; long g = get_global_id(0); if (g >= M_ * runs) return;")
    L_.append(f"  long row = g / runs; long lo = (g % runs) * {RUN}; long hi = min(K, lo + {RUN});")
    L_.append(L.row_start(Rk))
    L_.append("  long base = row * K;")
    L_.append("  for (long k = lo; k < hi; ++k) {")
    L_.append(f"    {kc} a = ({kc})({it.load('x', 'off + k * m.sx')}); long j = k;")
    L_.append("    while (j > lo) { " + kc + " b = key[base + j - 1]; if (!BEFORE(a, b)) break;"
              " key[base + j] = b; ix[base + j] = ix[base + j - 1]; --j; }")
    L_.append("    key[base + j] = a; ix[base + j] = k;")
    L_.append("  }")
    L_.append("}")
    # one merge of two sorted runs of width w
    L_.append(f"__kernel void merge(__global {kc}* dk, __global long* di, const __global {kc}* sk, "
              "const __global long* si, const M m) {")
    L_.append("  long M_ = m.rows, K = m.k, w = m.w;")
    L_.append("  long pairs = (K + 2 * w - 1) / (2 * w); long g = get_global_id(0); if (g >= M_ * pairs) return;")
    L_.append("  long row = g / pairs; long lo = (g % pairs) * 2 * w;")
    L_.append("  long mid = min(K, lo + w), hi = min(K, lo + 2 * w); long base = row * K;")
    L_.append("  long i = lo, j = mid, o = lo;")
    L_.append("  while (i < mid && j < hi) {")
    L_.append(f"    {kc} a = sk[base + j], b = sk[base + i];")
    L_.append("    if (BEFORE(a, b)) { dk[base + o] = a; di[base + o] = si[base + j]; ++j; }")
    L_.append("    else { dk[base + o] = b; di[base + o] = si[base + i]; ++i; }")
    L_.append("    ++o;")
    L_.append("  }")
    L_.append("  while (i < mid) { dk[base + o] = sk[base + i]; di[base + o] = si[base + i]; ++i; ++o; }")
    L_.append("  while (j < hi) { dk[base + o] = sk[base + j]; di[base + o] = si[base + j]; ++j; ++o; }")
    L_.append("}")
    # write back in the input's dim order
    L_.append(f"__kernel void back({it.ptr()} ov, __global long* oi, const __global {kc}* key, "
              "const __global long* ix, const M m) {")
    L_.append("  long M_ = m.rows, K = m.k; long g = get_global_id(0); if (g >= M_ * K) return;")
    L_.append("  long row = g / K, k = g % K;")
    L_.append(L.row_start(Rk, x="0"))
    L_.append("  " + it.store("ov", "oo + k * m.so", "key[g]") + ";")
    L_.append("  oi[oo + k * m.so] = ix[g];")
    L_.append("}")
    return "\n".join(L_) + "\n"


def k_sort(x: Tensor, d: int, descending: bool, stable: bool):
    cd = tn.cl_dev(x)
    it = T(x._dtype)
    kt = TYPES["float32"] if it.f16 or it.bf16 else it
    dev = x._device
    vals = tn.new_tensor(cd, x._shape, x._dtype, dev)
    idx = tn.new_tensor(cd, x._shape, D.int64, dev)
    n = vals.numel()
    if n == 0:
        return vals, idx
    if not x._shape:
        k_copy_(vals, x)
        k_fill_(idx, 0)
        return vals, idx
    M, K, ksh, kx, ko = L.along(x, vals, d)
    Rk = len(ksh)
    pack = L.rows_args(Rk, "w").pack

    def meta(w: int) -> bytes:
        return pack(rows=M, k=K, off_x=x._offset, sx=x._stride[d], so=vals._stride[d], w=w, shape=ksh, st_x=kx,
                    st_o=ko)
    key = ("sort", it.name, Rk, bool(descending))
    src = None

    def make(name):
        nonlocal src
        if src is None:
            src = _source(it, kt, Rk, bool(descending))
        return src, name
    kin = cd.kernel(key + ("init",), lambda: make("init"))
    kmg = cd.kernel(key + ("merge",), lambda: make("merge"))
    kbk = cd.kernel(key + ("back",), lambda: make("back"))
    keys = [tn.new_tensor(cd, (M * K,), kt.dtype, dev), tn.new_tensor(cd, (M * K,), kt.dtype, dev)]
    ixs = [tn.new_tensor(cd, (M * K,), D.int64, dev), tn.new_tensor(cd, (M * K,), D.int64, dev)]
    runs = (K + RUN - 1) // RUN
    tn.launch_1d(cd, kin, M * runs, (keys[0], ixs[0], x), meta(0), 64)
    cur = 0
    w = RUN
    while w < K:
        pairs = (K + 2 * w - 1) // (2 * w)
        tn.launch_1d(cd, kmg, M * pairs, (keys[1 - cur], ixs[1 - cur], keys[cur], ixs[cur]), meta(w), 64)
        cur = 1 - cur
        w *= 2
    tn.launch_1d(cd, kbk, M * K, (vals, idx, keys[cur], ixs[cur]), meta(w))
    return vals, idx


KERNELS = {"sort": k_sort}
