"""Scans along one dim (cumsum, and the cumprod fast path).

Rows are the other dims (collapsed). Many rows: one work-item scans each row. Few long rows: a
work-group of L work-items per row, each scanning a contiguous run (pass 1), the run totals
scanned in local memory, then each run offset by the sum of the runs before it (pass 2).
"""
from __future__ import annotations

from ember.backend import Tensor

from . import cplx
from . import layout as L
from . import tensors as tn
from .memory import k_copy_
from .reduce import acc_type
from .types import T, preamble


def _combine(op: str, at, x: str, y: str) -> str:
    """C expression: ``x`` combined with ``y`` by the scan's operation in type ``at``."""
    if op == "cumsum":
        return f"{x} + {y}"
    return f"cx_mul_{cplx.suffix(at)}({x}, {y})" if at.is_complex else f"{x} * {y}"


def _source(op, it, ot, at, Rk, mode, Lsz):
    if op == "cumsum":
        ident = f"(({at.ct})0)"
    else:
        ident = f"(({at.ct})(1, 0))" if at.is_complex else f"(({at.ct})1)"
    load = f"({at.ct})({it.load('x', 'off + k * sx')})"
    step = f"acc = {_combine(op, at, 'acc', load)};"
    lines = [preamble(it, ot, at), L.rows_args(Rk).struct(),
             f"__kernel void scan({ot.ptr()} out, const {it.ptr()} x, const M m) {{"]
    if mode == "serial":
        lines.append("  long row = get_global_id(0); if (row >= m.rows) return;")
    else:
        lines.append("  long lid = get_local_id(0); long row = get_global_id(1);")
    lines.append(L.row_start(Rk))
    lines.append("  long sx = m.sx, so = m.so, K = m.k;")
    if mode == "serial":
        lines.append(f"  {at.ct} acc = {ident};")
        lines.append("  for (long k = 0; k < K; ++k) {")
        lines.append(f"    {step}")
        lines.append("    " + ot.store("out", "oo + k * so", f"({ot.ct})acc") + ";")
        lines.append("  }")
    else:
        lines.append(f"  long sub = (K + {Lsz - 1}) / {Lsz}; long k0 = min(K, lid * sub), k1 = min(K, k0 + sub);")
        lines.append(f"  {at.ct} acc = {ident};")
        lines.append("  for (long k = k0; k < k1; ++k) {")
        lines.append(f"    {step}")
        lines.append("  }")
        lines.append(f"  __local {at.ct} tot[{Lsz}];")
        lines.append("  tot[lid] = acc; barrier(CLK_LOCAL_MEM_FENCE);")
        lines.append(f"  {at.ct} pre = {ident};")
        lines.append(f"  for (long j = 0; j < lid; ++j) pre = {_combine(op, at, 'pre', 'tot[j]')};")
        lines.append("  acc = pre;")
        lines.append("  for (long k = k0; k < k1; ++k) {")
        lines.append(f"    {step}")
        lines.append("    " + ot.store("out", "oo + k * so", f"({ot.ct})acc") + ";")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", "scan"


def scan(op: str, x: Tensor, d: int, out_dtype=None) -> Tensor:
    cd = tn.cl_dev(x)
    it = T(x._dtype)
    ot = T(out_dtype or x._dtype)
    at = acc_type("sum", it)
    out = tn.new_tensor(cd, x._shape, ot.dtype, x._device)
    n = out.numel()
    if n == 0:
        return out
    if not x._shape:
        return k_copy_(out, x)
    M, K, ksh, kx, ko = L.along(x, out, d)
    Rk = len(ksh)
    if M >= 64 or K <= 256:
        mode, Lsz = "serial", 1
    else:
        mode, Lsz = "block", (16 if cd.is_cpu else 128)
    meta = L.rows_args(Rk).pack(rows=M, k=K, off_x=x._offset, sx=x._stride[d], so=out._stride[d], shape=ksh, st_x=kx,
                          st_o=ko)
    key = ("scan", op, it.name, ot.name, Rk, mode, Lsz)
    k = cd.kernel(key, lambda: _source(op, it, ot, at, Rk, mode, Lsz))
    bufs = (out._storage._data.cl, x._storage._data.cl)
    if mode == "serial":
        cd.launch(k, (L.round_up(M, 64),), (64,), bufs, meta)
    else:
        cd.launch(k, (Lsz, M), (Lsz, 1), bufs, meta)
    return out


def k_cumsum(x, d):
    return scan("cumsum", x, d)


def k_cumprod(x, d):
    return scan("cumprod", x, d)


KERNELS = {"cumsum": k_cumsum, "cumprod": k_cumprod}
