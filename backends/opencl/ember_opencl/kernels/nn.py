"""Fast paths for ``ember.ops.nn``: im2col/col2im and the convolution family on them (im2col +
the tiled GEMM), max pooling and its backward, softmax/log_softmax, batch norm (forward with
batch statistics, and its fused backward), linear, cat.

Each replaces a decomposition of the same op (same arguments, same results), so autograd and
double backward are unchanged: the backward formulas call these ops again.
"""
from __future__ import annotations

import functools
import math

from ember.backend import dtypes as D
from ember.backend import Tensor
from ember.backend.shapes import conv_out, pool_out

from . import elementwise as ew
from . import layout as L
from .args import Args
from .matmul import matmul
from .types import T, TYPES, preamble

F32 = TYPES["float32"]


def _acc(t):
    return TYPES["float64"] if t.ct == "double" else F32


def _launch1(cd, k, n, bufs, meta, l0=256):
    cd.launch(k, (L.round_up(n, l0),), (l0,), tuple(b._storage._data.cl if isinstance(b, Tensor) else b for b in bufs),
              meta)


# -- im2col / col2im ------------------------------------------------------------------------------

def window_fields(A: Args, nsp: int) -> Args:
    """Add the geometry of a sliding window over ``nsp`` spatial dims: the input's sizes
    ``in_sp``, the window's ``ksize``, ``dilation``, ``padding`` and ``stride``, the output's
    sizes ``out_sp``, and the input's strides ``st_sp``."""
    for name in ("in_sp", "ksize", "dilation", "padding", "stride", "out_sp", "st_sp"):
        A.array(name, nsp)
    return A


@functools.lru_cache(maxsize=None)
def _im2col_args(nsp: int) -> Args:
    """``rows`` = N * C * kvol work-items; ``c`` channels, ``kvol`` window positions; x's offset
    and batch/channel strides; the window geometry."""
    return window_fields(Args().long("rows", "c", "kvol", "off_x", "sn", "sc"), nsp)


def _im2col_src(t, nsp):
    # one work-item per (n, c, kernel offset): it fills that row of the column matrix, walking
    # the output positions in nested loops (coordinates are divided out once per work-item)
    lines = [preamble(t), _im2col_args(nsp).struct(),
             f"__kernel void im2col({t.ptr()} out, const {t.ptr()} x, const M m) {{",
             "  long g = get_global_id(0); if (g >= m.rows) return;",
             "  long K = m.kvol; long kidx = g % K; long r = g / K; long c = r % m.c; long n = r / m.c;",
             "  long base = m.off_x + n * m.sn + c * m.sc; long kr = kidx;"]
    positions = "1"
    for i in range(nsp):
        positions = f"{positions} * m.out_sp[{i}]"
    for i in range(nsp - 1, -1, -1):
        lines.append(f"  long q{i} = kr % m.ksize[{i}]; kr /= m.ksize[{i}];")
    lines.append(f"  long o = g * ({positions});")
    ind = "  "
    for i in range(nsp):
        lines.append(f"{ind}for (long w{i} = 0; w{i} < m.out_sp[{i}]; ++w{i}) {{")
        lines.append(f"{ind}  long p{i} = w{i} * m.stride[{i}] - m.padding[{i}] + q{i} * m.dilation[{i}];")
        ind += "  "
    inside = " & ".join(f"(p{i} >= 0) & (p{i} < m.in_sp[{i}])" for i in range(nsp))
    off = " + ".join(f"p{i} * m.st_sp[{i}]" for i in range(nsp))
    lines.append(f"{ind}" + t.store("out", "o", f"({inside}) ? {t.load('x', f'base + {off}')} : 0") + "; ++o;")
    for i in range(nsp):
        ind = ind[:-2]
        lines.append(f"{ind}}}")
    lines.append("}")
    return "\n".join(lines) + "\n", "im2col"


def im2col(x, kernel, dilation, padding, stride):
    cd = ew.cl_dev(x)
    t = T(x._dtype)
    N, C = x._shape[:2]
    sp = x._shape[2:]
    nsp = len(kernel)
    out_sp = tuple(conv_out(sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    K, Lc = math.prod(kernel), math.prod(out_sp)
    out = ew.new_tensor(cd, (N, C * K, Lc), x._dtype, x._device)
    if out.numel() == 0:
        return out
    rows = N * C * K
    meta = _im2col_args(nsp).pack(rows=rows, c=C, kvol=K, off_x=x._offset, sn=x._stride[0], sc=x._stride[1],
                                  in_sp=sp, ksize=kernel, dilation=dilation, padding=padding, stride=stride,
                                  out_sp=out_sp, st_sp=x._stride[2:])
    k = cd.kernel(("im2col2", t.name, nsp), lambda: _im2col_src(t, nsp))
    _launch1(cd, k, rows, (out, x), meta, 16)
    return out


@functools.lru_cache(maxsize=None)
def _col2im_args(nsp: int) -> Args:
    """``rows`` = N * C * ``outer`` output rows (``outer``: the output positions but the last
    dim's); ``c`` channels, ``kvol`` window positions; the columns' offset and strides (batch,
    channel x window, position); the output's sizes, the window, and ``l_sp``, the columns'
    positions per dim."""
    A = Args().long("rows", "c", "kvol", "outer", "off_c", "sn", "sck", "sl")
    for name in ("out_sp", "ksize", "dilation", "padding", "stride", "l_sp"):
        A.array(name, nsp)
    return A


def _col2im_src(t, at, nsp, unit):
    # a gather: one work-item per output row, each output element summing the columns that
    # cover it (deterministic, no atomics); ``unit``: every stride is 1 (no remainders)
    last = nsp - 1
    lines = [preamble(t, at), _col2im_args(nsp).struct(),
             f"__kernel void col2im({t.ptr()} out, const {t.ptr()} cols, const M m) {{",
             "  long g = get_global_id(0); if (g >= m.rows) return;",
             "  long r = g % m.outer; long nc = g / m.outer; long c = nc % m.c, n = nc / m.c;"]
    for i in range(nsp - 2, -1, -1):
        lines.append(f"  long pos{i} = r % m.out_sp[{i}]; r /= m.out_sp[{i}];")
    lines.append(f"  long W = m.out_sp[{last}];")
    lines.append("  long cb = m.off_c + n * m.sn + c * m.kvol * m.sck;")
    lines.append("  for (long w = 0; w < W; ++w) {")
    lines.append(f"    {at.ct} acc = 0; long kidx = 0;")
    pos = [f"pos{i}" for i in range(nsp - 1)] + ["w"]
    for i in range(nsp):
        lines.append(f"    for (long q{i} = 0; q{i} < m.ksize[{i}]; ++q{i}) {{")
        lines.append(f"      long t{i} = {pos[i]} + m.padding[{i}] - q{i} * m.dilation[{i}];")
        if unit:
            lines.append(f"      long o{i} = t{i}; int ok{i} = (t{i} >= 0) & (o{i} < m.l_sp[{i}]);")
        else:
            lines.append(f"      long o{i} = t{i} / m.stride[{i}]; int ok{i} = (t{i} >= 0) & (t{i} % m.stride[{i}] == 0)"
                         f" & (o{i} < m.l_sp[{i}]);")
    ok = " & ".join(f"ok{i}" for i in range(nsp))
    lidx = "o0"
    for i in range(1, nsp):
        lidx = f"({lidx}) * m.l_sp[{i}] + o{i}"
    lines.append(f"      if ({ok}) acc += ({at.ct})({t.load('cols', f'cb + kidx * m.sck + ({lidx}) * m.sl')});")
    lines.append("      ++kidx;")
    lines.append("    " + "}" * nsp)
    lines.append("    " + t.store("out", "g * W + w", f"({t.ct})acc") + ";")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", "col2im"


def col2im(cols, out_sp, kernel, dilation, padding, stride):
    cd = ew.cl_dev(cols)
    t = T(cols._dtype)
    nsp = len(kernel)
    N = cols._shape[0]
    K = math.prod(kernel)
    C = cols._shape[1] // K
    l_sp = tuple(conv_out(out_sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    out = ew.new_tensor(cd, (N, C) + tuple(out_sp), cols._dtype, cols._device)
    if out.numel() == 0:
        return out
    P = math.prod(out_sp[:-1])
    rows = N * C * P
    sn, sck, sl = cols._stride
    meta = _col2im_args(nsp).pack(rows=rows, c=C, kvol=K, outer=P, off_c=cols._offset, sn=sn, sck=sck, sl=sl,
                                  out_sp=out_sp, ksize=kernel, dilation=dilation, padding=padding, stride=stride,
                                  l_sp=l_sp)
    at = _acc(t) if t.is_float else TYPES["int64"]
    unit = all(s == 1 for s in stride)
    k = cd.kernel(("col2im", t.name, nsp, unit), lambda: _col2im_src(t, at, nsp, unit))
    _launch1(cd, k, rows, (out, cols), meta, 64)
    return out


# -- convolution family ------------------------------------------------------------------------

def _add_bias(out: Tensor, b, nsp: int) -> Tensor:
    if b is None:
        return out
    from .pointwise import KERNELS as PW
    bv = ew.view(b, (1, b._shape[0]) + (1,) * nsp, (0, b._stride[0]) + (0,) * nsp)
    return PW["add"](out, bv, out)


def k_convolution(x, w, b, stride, padding, dilation, groups):
    N = x._shape[0]
    Cout = w._shape[0]
    kernel = w._shape[2:]
    nsp = len(kernel)
    out_sp = tuple(conv_out(x._shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    cols = im2col(x, kernel, dilation, padding, stride)  # (N, Cin*K, L)
    G = groups
    CK, Lc = cols._shape[1] // G, cols._shape[2]
    colsg = ew.view(cols, (N, G, CK, Lc))
    from .memory import clone
    wc = w if w.is_contiguous() else clone(w)
    wg = ew.view(wc, (G, Cout // G, CK))
    out = matmul(wg, colsg)  # (N, G, Cout/G, L), contiguous
    out = ew.view(out, (N, Cout) + out_sp)
    return _add_bias(out, b, nsp)


def k_conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
    N, Cin = x._shape[:2]
    kernel = w._shape[2:]
    nsp = len(kernel)
    G = groups
    Cout = w._shape[1] * G
    in_sp = x._shape[2:]
    out_sp = tuple((in_sp[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
                   for i in range(nsp))
    from .memory import clone
    xc = x if x.is_contiguous() else clone(x)
    wc = w if w.is_contiguous() else clone(w)
    xg = ew.view(xc, (N, G, Cin // G, math.prod(in_sp)))
    CoK = wc.numel() // Cin
    wg = ew.view(wc, (G, CoK, Cin // G), (Cin // G * CoK, 1, CoK))  # w.reshape(G, Cin/G, -1).transpose(1, 2)
    cols = matmul(wg, xg)  # (N, G, Cout/G*K, HW)
    cols = ew.view(cols, (N, Cout * math.prod(kernel), math.prod(in_sp)))
    out = col2im(cols, out_sp, kernel, dilation, padding, stride)
    return _add_bias(out, b, nsp)


def k_conv_weight_grad(x, g, wshape, stride, padding, dilation, groups):
    from .memory import clone
    from .reduce import reduce
    N = x._shape[0]
    kernel = tuple(wshape[2:])
    G = groups
    Cout = wshape[0]
    cols = im2col(x, kernel, dilation, padding, stride)  # (N, Cin*K, L)
    CK, Lc = cols._shape[1] // G, cols._shape[2]
    colsT = ew.view(cols, (N, G, Lc, CK), (G * CK * Lc, CK * Lc, 1, Lc))
    gc = g if g.is_contiguous() else clone(g)
    gg = ew.view(gc, (N, G, Cout // G, Lc))
    per = matmul(gg, colsT)  # (N, G, Cout/G, CK)
    r = reduce("sum", per, (0,), False) if N > 1 else ew.view(per, per._shape[1:])
    return ew.view(r, tuple(wshape))


def k_im2col(x, kernel, dilation, padding, stride):
    return im2col(x, kernel, dilation, padding, stride)


def k_col2im(cols, out_sp, kernel, dilation, padding, stride):
    return col2im(cols, out_sp, kernel, dilation, padding, stride)


# -- max pooling ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _maxpool_args(nsp: int) -> Args:
    """``rows`` = N * C * the output positions but the last dim's; ``c`` channels; x's offset
    and batch/channel strides; the window geometry."""
    return window_fields(Args().long("rows", "c", "off_x", "sn", "sc"), nsp)


def _maxpool_src(t, nsp):
    # one work-item per output row (n, c, outer output position), looping over the last dim
    last = nsp - 1
    lines = [preamble(t), _maxpool_args(nsp).struct(),
             f"__kernel void maxpool({t.ptr()} out, __global long* idx, const {t.ptr()} x, const M m) {{",
             "  long g = get_global_id(0); if (g >= m.rows) return;",
             "  long r = g;"]
    for i in range(nsp - 2, -1, -1):
        lines.append(f"  long o{i} = r % m.out_sp[{i}]; r /= m.out_sp[{i}];")
    lines.append("  long c = r % m.c, n = r / m.c; long base = m.off_x + n * m.sn + c * m.sc;")
    lines.append(f"  long W = m.out_sp[{last}];")
    lines.append(f"  for (long o{last} = 0; o{last} < W; ++o{last}) {{")
    lines.append(f"  {t.ct} best = 0; long bi = -1;")
    # nested loops over the window, in row-major order (first maximum wins; NaN wins)
    for i in range(nsp):
        lines.append(f"  for (long q{i} = 0; q{i} < m.ksize[{i}]; ++q{i}) {{")
        lines.append(f"    long p{i} = o{i} * m.stride[{i}] - m.padding[{i}] + q{i} * m.dilation[{i}];")
        lines.append(f"    if (p{i} < 0 || p{i} >= m.in_sp[{i}]) continue;")
    off = " + ".join(f"p{i} * m.st_sp[{i}]" for i in range(nsp))
    flat = "p0"
    for i in range(1, nsp):
        flat = f"({flat}) * m.in_sp[{i}] + p{i}"
    lines.append(f"    {t.ct} v = {t.load('x', 'base + ' + off)};")
    cond = "(bi < 0 || v > best || (isnan(v) && !isnan(best)))" if t.is_float else "(bi < 0 || v > best)"
    lines.append(f"    if {cond} {{ best = v; bi = {flat}; }}")
    lines.append("  " + "}" * nsp)
    lines.append("  " + t.store("out", "g * W + o" + str(last), "best") + f"; idx[g * W + o{last}] = bi < 0 ? 0 : bi;")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", "maxpool"


def k_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    cd = ew.cl_dev(x)
    t = T(x._dtype)
    nsp = len(kernel)
    N, C = x._shape[:2]
    in_sp = x._shape[2:]
    out_sp = tuple(pool_out(in_sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nsp))
    shape = (N, C) + out_sp
    vals = ew.new_tensor(cd, shape, x._dtype, x._device)
    idx = ew.new_tensor(cd, shape, D.int64, x._device)
    if vals.numel() == 0:
        return vals, idx
    rows = N * C * math.prod(out_sp[:-1])
    meta = _maxpool_args(nsp).pack(rows=rows, c=C, off_x=x._offset, sn=x._stride[0], sc=x._stride[1], in_sp=in_sp,
                                   ksize=kernel, dilation=dilation, padding=padding, stride=stride, out_sp=out_sp,
                                   st_sp=x._stride[2:])
    k = cd.kernel(("maxpool2", t.name, nsp), lambda: _maxpool_src(t, nsp))
    _launch1(cd, k, rows, (vals, idx, x), meta, 16)
    return vals, idx


def k_max_pool_backward(g, idx, in_shape):
    from .index import scatter_add_into
    from .memory import clone, k_fill_
    cd = ew.cl_dev(g)
    N, C = in_shape[:2]
    z = ew.new_tensor(cd, (N, C, math.prod(in_shape[2:])), g._dtype, g._device)
    k_fill_(z, 0)
    gc = g if g.is_contiguous() else clone(g)
    ic = idx if idx.is_contiguous() else clone(idx)
    m = gc.numel() // (N * C) if N * C else 0
    # the indices are max_pool's own: in range by construction, no need to wait for the flag
    scatter_add_into(z, 2, ew.view(ic, (N, C, m)), ew.view(gc, (N, C, m)), "max_pool_backward", check=False)
    return ew.view(z, tuple(in_shape))


# -- softmax / log_softmax -----------------------------------------------------------------------

def _softmax_src(t, at, Rk, log):
    a = at.ct
    lines = [preamble(t, at), L.rows_args(Rk).struct(),
             f"__kernel void softmax({t.ptr()} out, const {t.ptr()} x, const M m) {{",
             "  long row = get_global_id(0); if (row >= m.rows) return;",
             L.row_start(Rk),
             "  long K = m.k, sx = m.sx, so = m.so;",
             f"  {a} mx = -INFINITY; int bad = 0;",
             f"  for (long k = 0; k < K; ++k) {{ {a} v = ({a})({t.load('x', 'off + k * sx')}); mx = max(mx, v); bad |= isnan(v); }}",
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
                     t.store("out", "oo + k * so", f"({t.ct})(exp(({a})({t.load('x', 'off + k * sx')}) - mx) * inv)") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n", "softmax"


def _softmax(x, d, log):
    cd = ew.cl_dev(x)
    t = T(x._dtype)
    at = _acc(t)
    out = ew.new_tensor(cd, x._shape, x._dtype, x._device)
    if out.numel() == 0:
        return out
    M, K, ksh, kx, ko = L.along(x, out, d)
    Rk = len(ksh)
    meta = L.rows_args(Rk).pack(rows=M, k=K, off_x=x._offset, sx=x._stride[d], so=out._stride[d], shape=ksh, st_x=kx,
                                st_o=ko)
    k = cd.kernel(("softmax", t.name, Rk, log), lambda: _softmax_src(t, at, Rk, log))
    _launch1(cd, k, M, (out, x), meta, 64)
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
                 f"const {t.ptr()} x, const {t.ptr()} gr, const __global {a}* mean, const __global {a}* inv, const M m) {{")
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
    from .memory import clone, k_to_copy
    cd = ew.cl_dev(x)
    t = T(x._dtype)
    at = _acc(t)
    if _bn_geom(x) is None:
        x = clone(x)
    C = x._shape[1]
    mean = ew.new_tensor(cd, (C,), at.dtype, x._device)
    inv = ew.new_tensor(cd, (C,), at.dtype, x._device)
    _bn_launch(cd, "bn_stats", t, at, x, (mean, inv, x), eps)
    nsp = x.dim() - 2
    # out = (x - mean) * inv * w + b: one elementwise kernel with per-channel operands
    bshape = (1, C) + (1,) * nsp
    bst = (0, 1) + (0,) * nsp
    ops = [x, ew.view(mean, bshape, bst), ew.view(inv, bshape, bst)]
    a = at.ct
    expr = f"((({a})a - b) * c)"
    if w is not None:
        ops.append(ew.view(w, bshape, (0, w._stride[0]) + (0,) * nsp))
        expr = f"({expr} * ({a})d)"
    if b is not None:
        ops.append(ew.view(b, bshape, (0, b._stride[0]) + (0,) * nsp))
        expr = f"({expr} + ({a}){'e' if w is not None else 'd'})"
    out = ew.run(("bn_apply", len(ops)), expr, t, ops, x._shape, None, x._device, cd)
    mo = mean if mean._dtype is x._dtype else k_to_copy(mean, x._dtype, x._device)
    io = inv if inv._dtype is x._dtype else k_to_copy(inv, x._dtype, x._device)
    return out, mo, io


def k_batch_norm_backward(g, x, w, mean, invstd, need_w, need_b):
    from .memory import clone, k_to_copy
    cd = ew.cl_dev(x)
    t = T(x._dtype)
    at = _acc(t)
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
    sg, sgx, sgm, sgxm = (ew.new_tensor(cd, (C,), at.dtype, x._device) for _ in range(4))
    _bn_launch(cd, "bn_bsums", t, at, x, (sg, sgx, sgm, sgxm, x, g, mean, invstd), g_off=g._offset)
    nsp = x.dim() - 2
    bshape = (1, C) + (1,) * nsp
    bst = (0, 1) + (0,) * nsp
    # gx = inv * w * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * inv
    ops = [g, x, ew.view(mean, bshape, bst), ew.view(invstd, bshape, bst), ew.view(sgm, bshape, bst),
           ew.view(sgxm, bshape, bst)]
    a = at.ct
    wexpr = "1"
    if w is not None:
        ops.append(ew.view(w, bshape, (0, w._stride[0]) + (0,) * nsp))
        wexpr = f"({a})h"
    expr = f"(d * {wexpr} * (({a})a - e - (({a})b - c) * d * f))"
    gx = ew.run(("bn_bwd", w is not None), expr, t, ops, x._shape, None, x._device, cd)
    gw = sgx if sgx._dtype is x._dtype else k_to_copy(sgx, x._dtype, x._device)
    gb = sg if sg._dtype is x._dtype else k_to_copy(sg, x._dtype, x._device)
    return gx, gw, gb


# -- linear, cat ---------------------------------------------------------------------------------

def k_linear(x, w, b):
    wt = ew.view(w, (w._shape[1], w._shape[0]), (w._stride[1], w._stride[0]), w._offset)
    r = matmul(x, wt)
    if b is None:
        return r
    from .pointwise import KERNELS as PW
    return PW["add"](r, b, r)


def k_cat(tensors, dim):
    from .memory import k_copy_
    t0 = tensors[0]
    shape = list(t0._shape)
    shape[dim] = sum(t._shape[dim] for t in tensors)
    cd = ew.cl_dev(t0)
    out = ew.new_tensor(cd, tuple(shape), t0._dtype, t0._device)
    off = 0
    st = out._stride
    for t in tensors:
        n = t._shape[dim]
        if n:
            k_copy_(ew.view(out, t._shape, st, off * st[dim]), t)
        off += n
    return out


KERNELS = {"im2col": k_im2col, "col2im": k_col2im, "convolution": k_convolution, "conv_transpose": k_conv_transpose,
           "conv_weight_grad": k_conv_weight_grad, "max_pool": k_max_pool, "max_pool_backward": k_max_pool_backward,
           "softmax": k_softmax, "log_softmax": k_log_softmax, "batch_norm": k_batch_norm,
           "batch_norm_backward": k_batch_norm_backward, "linear": k_linear, "cat": k_cat}
