"""Normalisations as fast paths for ``ember.ops.nn``: softmax/log_softmax along one dim (a
work-item per row), and batch norm with batch statistics (a work-group per channel computing the
mean and the biased variance in two passes, then one elementwise kernel) and its fused backward.
Accumulation is in float (double for float64)."""
from __future__ import annotations

import functools
import math

from . import elementwise as ew
from . import layout as L
from . import tensors as tn
from .args import Args
from .memory import clone, k_to_copy
from .reduce import acc_type
from .types import T, preamble


# -- softmax / log_softmax -----------------------------------------------------------------------

def _softmax_src(t, at, Rk, log):
    a = at.ct
    lines = [preamble(t, at), L.rows_args(Rk).struct(),
             f"__kernel void softmax({t.ptr()} out, const {t.ptr()} x, const M m) {{",
             "  long row = get_global_id(0); if (row >= m.rows) return;",
             L.row_start(Rk),
             "  long K = m.k, sx = m.sx, so = m.so;",
             f"  {a} mx = -INFINITY; int bad = 0;",
             f"  for (long k = 0; k < K; ++k) {{ {a} v = ({a})({t.load('x', 'off + k * sx')});"
             " mx = max(mx, v); bad |= isnan(v); }",
             "  if (bad) mx = NAN; else if (isinf(mx)) mx = mx < 0 ? 0 : mx;",
             f"  {a} s = 0;",
             f"  for (long k = 0; k < K; ++k) s += exp(({a})({t.load('x', 'off + k * sx')}) - mx);"]
    if log:
        lines.append(f"  {a} ls = log(s) + mx;")
        lines.append("  for (long k = 0; k < K; ++k) " +
                     t.store("out", "oo + k * so", f"({t.ct})(({a})({t.load('x', 'off + k * sx')}) - ls)") + ";")
    else:
        lines.append(f"  {a} inv = 1 / s;")
        lines.append("  for (long k = 0; k < K; ++k) " +
                     t.store("out", "oo + k * so",
                             f"({t.ct})(exp(({a})({t.load('x', 'off + k * sx')}) - mx) * inv)") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n", "softmax"


def _softmax(x, d, log):
    cd = tn.cl_dev(x)
    t = T(x._dtype)
    at = acc_type("sum", t)
    out = tn.new_tensor(cd, x._shape, x._dtype, x._device)
    if out.numel() == 0:
        return out
    M, K, ksh, kx, ko = L.along(x, out, d)
    Rk = len(ksh)
    meta = L.rows_args(Rk).pack(rows=M, k=K, off_x=x._offset, sx=x._stride[d], so=out._stride[d], shape=ksh, st_x=kx,
                                st_o=ko)
    k = cd.kernel(("softmax", t.name, Rk, log), lambda: _softmax_src(t, at, Rk, log))
    tn.launch_1d(cd, k, M, (out, x), meta, 64)
    return out


def k_softmax(x, dim):
    return _softmax(x, dim, False)


def k_log_softmax(x, dim):
    return _softmax(x, dim, True)


# -- batch norm ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _bn_args(at) -> Args:
    """x viewed as (``n``, ``c``, ``s``): its offset and strides ``sn``, ``sc``, ``ss``; the
    gradient's offset ``off_g`` (it has x's strides); ``eps`` in the accumulation type."""
    return Args().long("n", "c", "s", "off_x", "sn", "sc", "ss", "off_g").scalar("eps", at)


def _bn_src(t, at, Lsz):
    # one work-group per channel
    a = at.ct
    lines = [preamble(t, at), _bn_args(at).struct(),
             f"#define LD(i) (({a})({t.load('x', 'i')}))",
             f"#define LG(i) (({a})({t.load('gr', '(i) - m.off_x + m.off_g')}))"]

    def fold(name, expr):
        return [f"  {{ {a} s_ = 0;",
                "    for (long e = lid; e < tot; e += " + str(Lsz) + ") {",
                "      long n = e / S, s = e % S; long o = m.off_x + n * m.sn + c * m.sc + s * m.ss;",
                f"      s_ += {expr}; }}",
                "    red[lid] = s_; barrier(CLK_LOCAL_MEM_FENCE);",
                f"    for (int w = {Lsz // 2}; w > 0; w >>= 1) {{ if (lid < w) red[lid] += red[lid + w]; "
                "barrier(CLK_LOCAL_MEM_FENCE); }",
                f"    {name} = red[0]; barrier(CLK_LOCAL_MEM_FENCE); }}"]
    # statistics: the mean, then the biased variance around it (two passes: accurate)
    lines.append(f"__kernel void bn_stats(__global {a}* mean, __global {a}* inv, const {t.ptr()} x, const M m) {{")
    lines.append("  long c = get_group_id(0), lid = get_local_id(0); long S = m.s, tot = m.n * S;")
    lines.append(f"  __local {a} red[{Lsz}]; {a} mu, var;")
    lines += fold("mu", "LD(o)")
    lines.append("  mu /= tot;")
    lines += fold("var", "(LD(o) - mu) * (LD(o) - mu)")
    lines.append("  var /= tot;")
    lines.append("  if (lid == 0) { mean[c] = mu; inv[c] = rsqrt(var + m.eps); }")
    lines.append("}")
    # backward: per channel sum(g) and sum(g * xhat); g has x's strides, its own offset
    lines.append(f"__kernel void bn_bsums(__global {a}* sg, __global {a}* sgx, __global {a}* sgm, __global {a}* sgxm, "
                 f"const {t.ptr()} x, const {t.ptr()} gr, const __global {a}* mean, const __global {a}* inv, "
                 "const M m) {")
    lines.append("  long c = get_group_id(0), lid = get_local_id(0); long S = m.s, tot = m.n * S;")
    lines.append(f"  __local {a} red[{Lsz}]; {a} r1, r2; {a} mu = mean[c], iv = inv[c];")
    lines += fold("r1", "LG(o)")
    lines += fold("r2", "LG(o) * (LD(o) - mu) * iv")
    lines.append("  if (lid == 0) { sg[c] = r1; sgx[c] = r2; sgm[c] = r1 / tot; sgxm[c] = r2 / tot; }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _bn_geom(x):
    N, C = x._shape[:2]
    S = math.prod(x._shape[2:])
    sp = x._shape[2:]
    # the spatial dims must collapse to one stride for the (N, C, S) view
    sh, (st,) = L.collapse(sp, [x._stride[2:]]) if sp else ((1,), [(1,)])
    if len(sh) != 1:
        return None
    return N, C, S, st[0]


def _bn_launch(cd, name, t, at, x, bufs, eps=0.0, g_off=0):
    N, C, S, sS = _bn_geom(x)
    Lsz = 64 if cd.is_cpu else 256
    meta = _bn_args(at).pack(n=N, c=C, s=S, off_x=x._offset, sn=x._stride[0], sc=x._stride[1], ss=sS, off_g=g_off,
                             eps=eps)
    k = cd.kernel((name, t.name, Lsz), lambda: (_bn_src(t, at, Lsz), name))
    cd.launch(k, (C * Lsz,), (Lsz,), tuple(b._storage._data.cl for b in bufs), meta)


def k_batch_norm(x, w, b, eps):
    cd = tn.cl_dev(x)
    t = T(x._dtype)
    at = acc_type("sum", t)
    if _bn_geom(x) is None:
        x = clone(x)
    C = x._shape[1]
    mean = tn.new_tensor(cd, (C,), at.dtype, x._device)
    inv = tn.new_tensor(cd, (C,), at.dtype, x._device)
    _bn_launch(cd, "bn_stats", t, at, x, (mean, inv, x), eps)
    nsp = x.dim() - 2
    # out = (x - mean) * inv * w + b: one elementwise kernel with per-channel operands
    bshape = (1, C) + (1,) * nsp
    bst = (0, 1) + (0,) * nsp
    ops = [x, tn.view(mean, bshape, bst), tn.view(inv, bshape, bst)]
    a = at.ct
    expr = f"((({a})a - b) * c)"
    if w is not None:
        ops.append(tn.view(w, bshape, (0, w._stride[0]) + (0,) * nsp))
        expr = f"({expr} * ({a})d)"
    if b is not None:
        ops.append(tn.view(b, bshape, (0, b._stride[0]) + (0,) * nsp))
        expr = f"({expr} + ({a}){'e' if w is not None else 'd'})"
    out = ew.run(("bn_apply", len(ops)), expr, t, ops, x._shape, None, x._device, cd)
    mo = mean if mean._dtype is x._dtype else k_to_copy(mean, x._dtype, x._device)
    io = inv if inv._dtype is x._dtype else k_to_copy(inv, x._dtype, x._device)
    return out, mo, io


def k_batch_norm_backward(g, x, w, mean, invstd, need_w, need_b):
    cd = tn.cl_dev(x)
    t = T(x._dtype)
    at = acc_type("sum", t)
    if not x.is_contiguous():
        x = clone(x)
    if not g.is_contiguous() or g._dtype is not x._dtype:
        g = k_to_copy(g, x._dtype, x._device)
    if mean._dtype is not at.dtype:
        mean = k_to_copy(mean, at.dtype, x._device)
    if invstd._dtype is not at.dtype:
        invstd = k_to_copy(invstd, at.dtype, x._device)
    mean = mean if mean.is_contiguous() else clone(mean)
    invstd = invstd if invstd.is_contiguous() else clone(invstd)
    C = x._shape[1]
    sg, sgx, sgm, sgxm = (tn.new_tensor(cd, (C,), at.dtype, x._device) for _ in range(4))
    _bn_launch(cd, "bn_bsums", t, at, x, (sg, sgx, sgm, sgxm, x, g, mean, invstd), g_off=g._offset)
    nsp = x.dim() - 2
    bshape = (1, C) + (1,) * nsp
    bst = (0, 1) + (0,) * nsp
    # gx = inv * w * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * inv
    ops = [g, x, tn.view(mean, bshape, bst), tn.view(invstd, bshape, bst), tn.view(sgm, bshape, bst),
           tn.view(sgxm, bshape, bst)]
    a = at.ct
    wexpr = "1"
    if w is not None:
        ops.append(tn.view(w, bshape, (0, w._stride[0]) + (0,) * nsp))
        wexpr = f"({a})h"
    expr = f"(d * {wexpr} * (({a})a - e - (({a})b - c) * d * f))"
    gx = ew.run(("bn_bwd", w is not None), expr, t, ops, x._shape, None, x._device, cd)
    gw = sgx if sgx._dtype is x._dtype else k_to_copy(sgx, x._dtype, x._device)
    gb = sg if sg._dtype is x._dtype else k_to_copy(sg, x._dtype, x._device)
    return gx, gw, gb


KERNELS = {"softmax": k_softmax, "log_softmax": k_log_softmax, "batch_norm": k_batch_norm,
           "batch_norm_backward": k_batch_norm_backward}
