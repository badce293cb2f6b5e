"""The convolution family as fast paths for ``ember.ops.nn``: im2col/col2im (``F.unfold`` and
``F.fold``), and convolution, transposed convolution and the weight gradient as im2col/col2im
around the tiled GEMM of :mod:`ember_opencl.kernels.matmul`.

Each replaces a decomposition of the same op (same arguments, same results), so autograd and
double backward are unchanged: the backward formulas call these ops again. Output sizes come from
:mod:`ember.backend.shapes`, as in the core's decompositions.
"""
from __future__ import annotations

import functools
import math

from ember.backend import Tensor
from ember.backend.shapes import conv_out, conv_transpose_out

from . import tensors as tn
from .args import Args
from .layout import flat_index
from .matmul import matmul
from .memory import clone
from .pointwise import KERNELS as PW
from .reduce import acc_type, reduce
from .types import T, preamble


def window_fields(A: Args, nsp: int) -> Args:
    """Add the geometry of a sliding window over ``nsp`` spatial dims: the input's sizes
    ``in_sp``, the window's ``ksize``, ``dilation``, ``padding`` and ``stride``, the output's
    sizes ``out_sp``, and the input's strides ``st_sp``."""
    for name in ("in_sp", "ksize", "dilation", "padding", "stride", "out_sp", "st_sp"):
        A.array(name, nsp)
    return A


# -- im2col / col2im ------------------------------------------------------------------------------

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
    cd = tn.cl_dev(x)
    t = T(x._dtype)
    N, C = x._shape[:2]
    sp = x._shape[2:]
    nsp = len(kernel)
    out_sp = tuple(conv_out(sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    K, Lc = math.prod(kernel), math.prod(out_sp)
    out = tn.new_tensor(cd, (N, C * K, Lc), x._dtype, x._device)
    if out.numel() == 0:
        return out
    rows = N * C * K
    meta = _im2col_args(nsp).pack(rows=rows, c=C, kvol=K, off_x=x._offset, sn=x._stride[0], sc=x._stride[1],
                                  in_sp=sp, ksize=kernel, dilation=dilation, padding=padding, stride=stride,
                                  out_sp=out_sp, st_sp=x._stride[2:])
    k = cd.kernel(("im2col2", t.name, nsp), lambda: _im2col_src(t, nsp))
    tn.launch_1d(cd, k, rows, (out, x), meta, 16)
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
            lines.append(f"      long o{i} = t{i} / m.stride[{i}]; "
                         f"int ok{i} = (t{i} >= 0) & (t{i} % m.stride[{i}] == 0)"
                         f" & (o{i} < m.l_sp[{i}]);")
    ok = " & ".join(f"ok{i}" for i in range(nsp))
    lidx = flat_index([f"o{i}" for i in range(nsp)], "m.l_sp")
    lines.append(f"      if ({ok}) acc += ({at.ct})({t.load('cols', f'cb + kidx * m.sck + ({lidx}) * m.sl')});")
    lines.append("      ++kidx;")
    lines.append("    " + "}" * nsp)
    lines.append("    " + t.store("out", "g * W + w", f"({t.ct})acc") + ";")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", "col2im"


def col2im(cols, out_sp, kernel, dilation, padding, stride):
    cd = tn.cl_dev(cols)
    t = T(cols._dtype)
    nsp = len(kernel)
    N = cols._shape[0]
    K = math.prod(kernel)
    C = cols._shape[1] // K
    l_sp = tuple(conv_out(out_sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
    out = tn.new_tensor(cd, (N, C) + tuple(out_sp), cols._dtype, cols._device)
    if out.numel() == 0:
        return out
    P = math.prod(out_sp[:-1])
    rows = N * C * P
    sn, sck, sl = cols._stride
    meta = _col2im_args(nsp).pack(rows=rows, c=C, kvol=K, outer=P, off_c=cols._offset, sn=sn, sck=sck, sl=sl,
                                  out_sp=out_sp, ksize=kernel, dilation=dilation, padding=padding, stride=stride,
                                  l_sp=l_sp)
    at = acc_type("sum", t)
    unit = all(s == 1 for s in stride)
    k = cd.kernel(("col2im", t.name, nsp, unit), lambda: _col2im_src(t, at, nsp, unit))
    tn.launch_1d(cd, k, rows, (out, cols), meta, 64)
    return out


# -- convolution family ------------------------------------------------------------------------

def _add_bias(out: Tensor, b, nsp: int) -> Tensor:
    if b is None:
        return out
    bv = tn.view(b, (1, b._shape[0]) + (1,) * nsp, (0, b._stride[0]) + (0,) * nsp)
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
    colsg = tn.view(cols, (N, G, CK, Lc))
    wc = w if w.is_contiguous() else clone(w)
    wg = tn.view(wc, (G, Cout // G, CK))
    out = matmul(wg, colsg)  # (N, G, Cout/G, L), contiguous
    out = tn.view(out, (N, Cout) + out_sp)
    return _add_bias(out, b, nsp)


def k_conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
    N, Cin = x._shape[:2]
    kernel = w._shape[2:]
    nsp = len(kernel)
    G = groups
    Cout = w._shape[1] * G
    in_sp = x._shape[2:]
    out_sp = tuple(conv_transpose_out(in_sp[i], kernel[i], stride[i], padding[i], output_padding[i], dilation[i])
                   for i in range(nsp))
    xc = x if x.is_contiguous() else clone(x)
    wc = w if w.is_contiguous() else clone(w)
    xg = tn.view(xc, (N, G, Cin // G, math.prod(in_sp)))
    CoK = wc.numel() // Cin
    wg = tn.view(wc, (G, CoK, Cin // G), (Cin // G * CoK, 1, CoK))  # w.reshape(G, Cin/G, -1).transpose(1, 2)
    cols = matmul(wg, xg)  # (N, G, Cout/G*K, HW)
    cols = tn.view(cols, (N, Cout * math.prod(kernel), math.prod(in_sp)))
    out = col2im(cols, out_sp, kernel, dilation, padding, stride)
    return _add_bias(out, b, nsp)


def k_conv_weight_grad(x, g, wshape, stride, padding, dilation, groups):
    N = x._shape[0]
    kernel = tuple(wshape[2:])
    G = groups
    Cout = wshape[0]
    cols = im2col(x, kernel, dilation, padding, stride)  # (N, Cin*K, L)
    CK, Lc = cols._shape[1] // G, cols._shape[2]
    colsT = tn.view(cols, (N, G, Lc, CK), (G * CK * Lc, CK * Lc, 1, Lc))
    gc = g if g.is_contiguous() else clone(g)
    gg = tn.view(gc, (N, G, Cout // G, Lc))
    per = matmul(gg, colsT)  # (N, G, Cout/G, CK)
    r = reduce("sum", per, (0,), False) if N != 1 else tn.view(per, per._shape[1:])  # (N = 0: zeros)
    return tn.view(r, tuple(wshape))


def k_im2col(x, kernel, dilation, padding, stride):
    return im2col(x, kernel, dilation, padding, stride)


def k_col2im(cols, out_sp, kernel, dilation, padding, stride):
    return col2im(cols, out_sp, kernel, dilation, padding, stride)


KERNELS = {"im2col": k_im2col, "col2im": k_col2im, "convolution": k_convolution, "conv_transpose": k_conv_transpose,
           "conv_weight_grad": k_conv_weight_grad}
