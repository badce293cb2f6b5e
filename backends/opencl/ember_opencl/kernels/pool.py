"""Max pooling as a fast path for ``ember.ops.nn``: one kernel giving the maxima and their flat
indices (the first maximum of a window, NaN winning), and the backward as a scatter-add of the
gradient at those indices. Output sizes come from :func:`ember.backend.shapes.pool_out`."""
from __future__ import annotations

import functools
import math

from ember.backend import dtypes as D
from ember.backend.shapes import pool_out

from . import tensors as tn
from .args import Args
from .conv import window_fields
from .index import scatter_add_into
from .layout import flat_index
from .memory import clone, k_fill_
from .types import T, preamble


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
    lines.append(f"  {t.ct} best = {'-INFINITY' if t.is_float else '0'}; long bi = -1;")
    # nested loops over the window's in-image positions, in row-major order, as PyTorch's: the
    # first one greater than the running max (from -inf), or any NaN (so the last NaN wins)
    for i in range(nsp):
        lines.append(f"  for (long q{i} = 0; q{i} < m.ksize[{i}]; ++q{i}) {{")
        lines.append(f"    long p{i} = o{i} * m.stride[{i}] - m.padding[{i}] + q{i} * m.dilation[{i}];")
        lines.append(f"    if (p{i} < 0 || p{i} >= m.in_sp[{i}]) continue;")
    off = " + ".join(f"p{i} * m.st_sp[{i}]" for i in range(nsp))
    flat = flat_index([f"p{i}" for i in range(nsp)], "m.in_sp")
    lines.append(f"    {t.ct} v = {t.load('x', 'base + ' + off)};")
    cond = "(v > best || isnan(v))" if t.is_float else "(bi < 0 || v > best)"
    lines.append(f"    if {cond} {{ best = v; bi = {flat}; }}")
    lines.append("  " + "}" * nsp)
    # no update: the window's first position at or past the image's start (PyTorch's index)
    for i in range(nsp):
        lines.append(f"  long c{i} = o{i} * m.stride[{i}] - m.padding[{i}];")
        lines.append(f"  if (c{i} < 0) c{i} += ((m.dilation[{i}] - 1 - c{i}) / m.dilation[{i}]) * m.dilation[{i}];")
    start = flat_index([f"c{i}" for i in range(nsp)], "m.in_sp")
    lines.append("  " + t.store("out", "g * W + o" + str(last), "best") + f"; idx[g * W + o{last}] = bi < 0 ? "
                 f"({start}) : bi;")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", "maxpool"


def k_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    cd = tn.cl_dev(x)
    t = T(x._dtype)
    nsp = len(kernel)
    N, C = x._shape[:2]
    in_sp = x._shape[2:]
    out_sp = tuple(pool_out(in_sp[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nsp))
    shape = (N, C) + out_sp
    vals = tn.new_tensor(cd, shape, x._dtype, x._device)
    idx = tn.new_tensor(cd, shape, D.int64, x._device)
    if vals.numel() == 0:
        return vals, idx
    rows = N * C * math.prod(out_sp[:-1])
    meta = _maxpool_args(nsp).pack(rows=rows, c=C, off_x=x._offset, sn=x._stride[0], sc=x._stride[1], in_sp=in_sp,
                                   ksize=kernel, dilation=dilation, padding=padding, stride=stride, out_sp=out_sp,
                                   st_sp=x._stride[2:])
    k = cd.kernel(("maxpool3", t.name, nsp), lambda: _maxpool_src(t, nsp))
    tn.launch_1d(cd, k, rows, (vals, idx, x), meta, 16)
    return vals, idx


def k_max_pool_backward(g, idx, in_shape):
    cd = tn.cl_dev(g)
    N, C = in_shape[:2]
    z = tn.new_tensor(cd, (N, C, math.prod(in_shape[2:])), g._dtype, g._device)
    k_fill_(z, 0)
    gc = g if g.is_contiguous() else clone(g)
    ic = idx if idx.is_contiguous() else clone(idx)
    m = gc.numel() // (N * C) if N * C else 0
    # the indices are max_pool's own: in range by construction, no need to wait for the flag
    scatter_add_into(z, 2, tn.view(ic, (N, C, m)), tn.view(gc, (N, C, m)), "max_pool_backward", check=False)
    return tn.view(z, tuple(in_shape))


KERNELS = {"max_pool": k_max_pool, "max_pool_backward": k_max_pool_backward}
