"""The fused ``rms_norm`` kernel for the opencl backend, in OpenCL C, through the backend's public
kernel API :mod:`ember_opencl.extend`.

One work-group per row (the ``N = prod(normalized_shape)`` trailing elements): each work-item sums
the squares of a strided share of the row, the group adds the partial sums in local memory, and
the same work-items write ``x * r * weight``. Sums are taken in float (double for float64); 16-bit
floats are loaded into float and rounded once on the store.
"""
from __future__ import annotations

import ember
from ember_opencl import extend as cl

# meta slots: rows, N, x offset, weight offset, eps
_NV = 5


def _source(t, wt, acc, lsize: int) -> str:
    a = acc.ct
    wparam = f", const {wt.ptr()} w" if wt is not None else ""
    scale = f" * ({a})({wt.load('w', 'm.v[3] + j')})" if wt is not None else ""
    return cl.preamble(t, acc, *((wt,) if wt is not None else ())) + cl.meta_struct(_NV) + f"""
__kernel void rms_norm({t.ptr()} out, const {t.ptr()} x{wparam}, const M m) {{
  __local {a} part[{lsize}];
  const long row = get_group_id(0);
  const int lid = get_local_id(0);
  const long n = m.v[1];
  const long xb = m.v[2] + row * n, ob = row * n;
  {a} s = 0;
  for (long j = lid; j < n; j += {lsize}) {{ {a} v = ({a})({t.load('x', 'xb + j')}); s += v * v; }}
  part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int h = {lsize // 2}; h > 0; h >>= 1) {{
    if (lid < h) part[lid] += part[lid + h];
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  const {a} r = ({a})1 / sqrt(part[0] / ({a})n + {cl.read_slot(4, acc)});
  for (long j = lid; j < n; j += {lsize}) {{
    {a} v = ({a})({t.load('x', 'xb + j')}) * r{scale};
    {t.store('out', 'ob + j', f'({t.ct})v')};
  }}
}}
"""


def _local_size(n: int, dev) -> int:
    cap = min(256, dev.max_wg)
    size = 1
    while size < n and size < cap:
        size *= 2
    return size


def rms_norm_kernel(x, weight, k: int, eps: float):
    """Same arguments and values as :func:`ember_rmsnorm.op.decomposition`."""
    x = x.contiguous()
    if weight is not None:
        weight = weight.contiguous()
    dev = cl.device_of(x)
    t = cl.ctype(x.dtype)
    wt = cl.ctype(weight.dtype) if weight is not None else None
    acc = cl.ctype(ember.float64 if x.dtype is ember.float64 else ember.float32)
    out = cl.empty(x.shape, x.dtype, x.device)
    n = 1
    for s in x.shape[x.dim() - k:]:
        n *= s
    rows = x.numel() // n if n else 0
    if rows == 0:
        return out
    lsize = _local_size(n, dev)
    key = ("ember_rmsnorm.rms_norm", t.name, wt.name if wt is not None else None, lsize)
    kern = dev.kernel(key, lambda: (_source(t, wt, acc, lsize), "rms_norm"))
    operands = [out, x] + ([weight] if weight is not None else [])
    meta = [rows, n, x.storage_offset(), weight.storage_offset() if weight is not None else 0,
            cl.scalar_slot(eps, acc)]
    cl.launch(dev, kern, (rows * lsize,), (lsize,), operands, meta)
    return out
