"""matmul: batched, broadcast, on strided operands.

Three kernels. ``naive``: one work-item per output element, any dtype and strides (16-bit
floats and integers, small products). For float32/float64, register-tiled GEMMs where each
work-item computes a TM x VW block:

* ``nn`` when B's rows are contiguous (unit stride along n): per k, one vector load of B's row
  and TM multiply-adds with A's values broadcast;
* ``nt`` when A and B are both contiguous along k (``x @ w.t()``, as in ``linear``): dot
  products of vector loads along k, TM x TN vector accumulators reduced at the end.

Other layouts copy B (or A) to a contiguous buffer first. Tiles that stick out of the matrix
take a guarded scalar path, so any M, N, K work.
"""
from __future__ import annotations

import functools
import math

from ember.backend import Tensor, broadcast_shapes, make_tensor
from ember.backend import dtypes as D

from . import cplx
from . import layout as L
from . import tensors as tn
from .args import Args
from .memory import clone, k_copy_, k_fill_
from .pointwise import KERNELS as PW
from .types import T, TYPES, preamble, vload, vstore


@functools.lru_cache(maxsize=None)
def _args(RB: int) -> Args:
    """C[b] (``mr`` x ``n``) = A[b] (``mr`` x ``k``) @ B[b] for each batch index b: the operands'
    offsets, their strides along rows and columns (``sa_m``, ``sa_k``, ``sb_k``, ``sb_n``), and
    the batch dims ``bshape[RB]`` with each operand's (broadcast) strides ``bst_a``, ``bst_b``."""
    return (Args().long("mr", "n", "k", "off_a", "off_b", "sa_m", "sa_k", "sb_k", "sb_n")
            .array("bshape", RB).array("bst_a", RB).array("bst_b", RB))


def _batch_code(RB):
    if RB == 0:
        return "  long ao = m.off_a, bo = m.off_b;"
    return ("  long ao = m.off_a, bo = m.off_b;\n" +
            L.offsets_code(RB, ["ao", "bo"], "m.bshape", ["m.bst_a", "m.bst_b"], "bt"))


def _head(t, RB: int, n: str, i: str, n_step: int, i_step: int, *more_types) -> list:
    """The lines every matmul kernel starts with: ``n``/``i`` (this work-item's first column and
    row, ``n_step``/``i_step`` apart), ``bt`` (its batch), ``Mr``, ``N``, ``K``; work-items past
    the matrix return; ``ao``/``bo`` are the batch's offsets in A and B."""
    def gid(axis, step):
        return f"get_global_id({axis})" + (f" * {step}" if step != 1 else "")
    return [preamble(t, *more_types), _args(RB).struct(),
            f"__kernel void mm({t.ptr()} c, const {t.ptr()} a, const {t.ptr()} b, const M m) {{",
            f"  long {n} = {gid(0, n_step)}, {i} = {gid(1, i_step)}, bt = get_global_id(2);",
            "  long Mr = m.mr, N = m.n, K = m.k;",
            f"  if ({n} >= N || {i} >= Mr) return;",
            _batch_code(RB)]


def _madd(at, x: str, y: str) -> str:
    """C statement adding ``x * y`` to ``acc`` in type ``at`` (complex: the complex product)."""
    if at.is_complex:
        return f"acc = acc + cx_mul_{cplx.suffix(at)}({x}, {y});"
    return f"acc += {x} * {y};"


def _naive_src(t, at, RB):
    lines = _head(t, RB, "n", "i", 1, 1, at) + [
        "  long sam = m.sa_m, sak = m.sa_k, sbk = m.sb_k, sbn = m.sb_n;",
        f"  {at.ct} acc = 0;",
        "  long pa = ao + i * sam, pb = bo + n * sbn;",
        "  for (long k = 0; k < K; ++k) { " + _madd(at, f"({at.ct})({t.load('a', 'pa')})",
                                                     f"({at.ct})({t.load('b', 'pb')})")
        + " pa += sak; pb += sbk; }",
        "  " + t.store("c", "(bt * Mr + i) * N + n", f"({t.ct})acc") + ";",
        "}"]
    return "\n".join(lines) + "\n", "mm"


def _nn_src(t, RB, TM, VW):
    ct = t.ct
    vt = f"{ct}{VW}"
    lines = _head(t, RB, "n0", "i0", VW, TM) + [
        "  long sam = m.sa_m, sak = m.sa_k, sbk = m.sb_k;",
        "  long co = (bt * Mr + i0) * N + n0;",
        f"  if (n0 + {VW} <= N) {{  /* rows past the end read the last row and are not stored */",
        "    " + " ".join(f"{vt} acc{r} = 0;" for r in range(TM)),
        "    const __global " + ct + "* pb = b + bo + n0;",
        "    " + " ".join(f"const __global {ct}* pa{r} = a + ao + min(i0 + {r}, Mr - 1) * sam;" for r in range(TM)),
        "    for (long k = 0; k < K; ++k) {",
        f"      {vt} bv = {vload(vt, VW, 'pb')}; pb += sbk;",
        "      " + " ".join(f"acc{r} = fma(({vt})(*pa{r}), bv, acc{r}); pa{r} += sak;" for r in range(TM)),
        "    }",
        "    " + " ".join(f"if (i0 + {r} < Mr) {vstore(vt, VW, f'acc{r}', f'c + co + {r} * N')};" for r in range(TM)),
        "    return;",
        "  }",
        f"  for (long r = 0; r < {TM} && i0 + r < Mr; ++r)",
        f"    for (long q = 0; q < {VW} && n0 + q < N; ++q) {{",
        f"      {ct} acc = 0;",
        "      for (long k = 0; k < K; ++k)"
        " acc = fma(a[ao + (i0 + r) * sam + k * sak], b[bo + k * sbk + n0 + q], acc);",
        "      c[co + r * N + q] = acc;",
        "    }",
        "}"]
    return "\n".join(lines) + "\n", "mm"


def _nt_src(t, RB, TM, TN, VW):
    ct = t.ct
    vt = f"{ct}{VW}"
    lines = _head(t, RB, "n0", "i0", TN, TM) + [
        "  long sam = m.sa_m, sbn = m.sb_n;",
        "  long co = (bt * Mr + i0) * N + n0;",
        "  /* rows and columns past the end read the last one and are not stored */",
        "  " + " ".join(f"const __global {ct}* pa{r} = a + ao + min(i0 + {r}, Mr - 1) * sam;" for r in range(TM)),
        "  " + " ".join(f"const __global {ct}* pb{q} = b + bo + min(n0 + {q}, N - 1) * sbn;" for q in range(TN)),
        "  " + " ".join(f"{vt} acc{r}_{q} = 0;" for r in range(TM) for q in range(TN)),
        f"  long K8 = K / {VW} * {VW}; long k = 0;",
        f"  for (; k < K8; k += {VW}) {{",
        "    " + " ".join(f"{vt} a{r} = {vload(vt, VW, f'pa{r} + k')};" for r in range(TM)),
        "    " + " ".join(f"{vt} b{q} = {vload(vt, VW, f'pb{q} + k')};" for q in range(TN)),
        "    " + " ".join(f"acc{r}_{q} = fma(a{r}, b{q}, acc{r}_{q});" for r in range(TM) for q in range(TN)),
        "  }",
        ]
    for r in range(TM):
        for q in range(TN):
            terms = " + ".join(f"acc{r}_{q}.s{j:x}" for j in range(VW))
            lines.append(f"  if (i0 + {r} < Mr && n0 + {q} < N) {{ {ct} s = {terms};")
            lines.append(f"    for (long kk = k; kk < K; ++kk) s = fma(pa{r}[kk], pb{q}[kk], s);")
            lines.append(f"    c[co + {r} * N + {q}] = s; }}")
    lines += ["}"]
    return "\n".join(lines) + "\n", "mm"


def _contig(x: Tensor) -> Tensor:
    return clone(x)


def _parts(x: Tensor) -> Tensor:
    """A complex tensor's parts as a real view of shape ``x.shape + (2,)`` (real, imaginary)."""
    return make_tensor(x._storage, x._shape + (2,), tuple(2 * s for s in x._stride) + (1,), 2 * x._offset,
                       D.to_real(x._dtype), x._device)


def _complex_gemm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` for complex matrices (batch dims broadcast) as one real GEMM on the tiled
    kernels: with ``a = ar + i ai``, ``[ar | ai]`` (M x 2K) times the 2K x 2N real matrix whose
    top rows are b's parts interleaved (``br, bi``) and whose bottom rows are ``i b``'s
    (``-bi, br``) gives ``ar b + ai (i b)`` with its parts interleaved: the complex product laid
    out as a complex tensor."""
    cd = tn.cl_dev(a)
    dev = a._device
    ab, bb = a._shape[:-2], b._shape[:-2]
    Mr, K, N = a._shape[-2], a._shape[-1], b._shape[-1]
    pa = _parts(a)
    la = len(ab)
    acat = tn.new_tensor(cd, ab + (Mr, 2, K), pa._dtype, dev)  # a's parts, one block each along k
    k_copy_(acat, tn.view(pa, ab + (Mr, 2, K), pa._stride[:la] + (pa._stride[la], 1, pa._stride[la + 1])))
    pb = _parts(b)
    bcat = tn.new_tensor(cd, bb + (2, K, N, 2), pb._dtype, dev)
    st = bcat._stride
    lb = len(bb)
    half = st[lb]
    k_copy_(tn.view(bcat, bb + (K, N, 2), st[:lb] + st[lb + 1:], 0), pb)
    pshape, pst = bb + (K, N), st[:lb] + st[lb + 1:lb + 3]
    re_b = tn.view(pb, bb + (K, N), pb._stride[:-1], pb._offset)
    im_b = tn.view(pb, bb + (K, N), pb._stride[:-1], pb._offset + 1)
    PW["neg"](im_b, out=tn.view(bcat, pshape, pst, half))
    k_copy_(tn.view(bcat, pshape, pst, half + 1), re_b)
    r = matmul(tn.view(acat, ab + (Mr, 2 * K)), tn.view(bcat, bb + (2 * K, 2 * N)))
    shape = r._shape[:-1] + (N,)
    return make_tensor(r._storage, shape, tn.cstrides(shape), 0, a._dtype, dev)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    cd = tn.cl_dev(a)
    dev = a._device
    va, vb = a.dim() == 1, b.dim() == 1
    if va:
        a = tn.view(a, (1,) + a._shape, (0,) + a._stride)
    if vb:
        b = tn.view(b, b._shape + (1,), b._stride + (1,))
    Mr, K = a._shape[-2], a._shape[-1]
    N = b._shape[-1]
    if a._dtype.is_complex and Mr * N * K >= 1024 and min(Mr, N, K) > 1:  # (so neither operand was 1-D)
        return _complex_gemm(a, b)
    batch = broadcast_shapes(a._shape[:-2], b._shape[:-2], "matmul")
    out_shape = batch + (Mr, N)
    out = tn.new_tensor(cd, out_shape, a._dtype, dev)
    final = out_shape
    if va and vb:
        final = batch
    elif va:
        final = batch + (N,)
    elif vb:
        final = batch + (Mr,)
    if out.numel() == 0:
        return tn.view(out, final) if final != out_shape else out
    if K == 0:
        k_fill_(out, 0)
        return tn.view(out, final) if final != out_shape else out
    t = T(a._dtype)
    fast = t.name in ("float32", "float64")
    kind = "naive"
    if fast and Mr * N * K >= 4096:
        a_k1 = a._stride[-1] == 1 or K == 1
        b_k1 = b._stride[-2] == 1 or K == 1
        b_n1 = b._stride[-1] == 1 or N == 1
        if b_n1 and not (a_k1 and b_k1 and N < 8):
            kind = "nn"
        elif a_k1 and b_k1:
            kind = "nt"
        else:
            b = _contig(b)
            kind = "nn"
    B = math.prod(batch)
    bsh, (abst, bbst) = L.collapse(batch, [L.bstrides(_batch_view(a), batch), L.bstrides(_batch_view(b), batch)]) \
        if batch else ((), ((), ()))
    if batch and bsh == (1,):
        bsh, abst, bbst = (), (), ()
    RB = len(bsh)
    meta = _args(RB).pack(mr=Mr, n=N, k=K, off_a=a._offset, off_b=b._offset, sa_m=a._stride[-2],
                          sa_k=a._stride[-1], sb_k=b._stride[-2], sb_n=b._stride[-1], bshape=bsh, bst_a=abst,
                          bst_b=bbst)
    bufs = (out._storage._data.cl, a._storage._data.cl, b._storage._data.cl)
    if kind == "naive":
        at = TYPES["float32"] if t.f16 or t.bf16 else (TYPES["int64"] if t.is_int or t.is_bool else t)
        k = cd.kernel(("mm", "naive", t.name, RB), lambda: _naive_src(t, at, RB))
        l0 = 16 if N >= 16 else 1
        l1 = 4 if Mr >= 4 else 1
        cd.launch(k, (L.round_up(N, l0), L.round_up(Mr, l1), B), (l0, l1, 1), bufs, meta)
    elif kind == "nn":
        # tile sizes tuned on PoCL/AVX-512 (1024^3: ~110 GFLOPS on 2 cores); 512-bit vectors
        TM, VW = (10, 16) if t.name == "float32" else (10, 8)
        k = cd.kernel(("mm", "nn", t.name, RB, TM, VW), lambda: _nn_src(t, RB, TM, VW))
        g0, g1 = (N + VW - 1) // VW, (Mr + TM - 1) // TM
        l0, l1 = min(8, g0), min(2, g1)
        cd.launch(k, (L.round_up(g0, l0), L.round_up(g1, l1), B), (l0, l1, 1), bufs, meta)
    else:
        TM, TN, VW = (4, 3, 16) if t.name == "float32" else (4, 3, 8)
        k = cd.kernel(("mm", "nt", t.name, RB, TM, TN, VW), lambda: _nt_src(t, RB, TM, TN, VW))
        g0, g1 = (N + TN - 1) // TN, (Mr + TM - 1) // TM
        l0, l1 = min(8, g0), min(2, g1)
        cd.launch(k, (L.round_up(g0, l0), L.round_up(g1, l1), B), (l0, l1, 1), bufs, meta)
    return tn.view(out, final) if final != out_shape else out


class _BV:
    """The batch dims of a matmul operand, as a shape/stride view for broadcasting."""
    __slots__ = ("_shape", "_stride")

    def __init__(self, t):
        self._shape = t._shape[:-2]
        self._stride = t._stride[:-2]


def _batch_view(t):
    return _BV(t)


def k_matmul(a, b):
    return matmul(a, b)


def k_linear(x, w, b):
    wt = tn.view(w, (w._shape[1], w._shape[0]), (w._stride[1], w._stride[0]), w._offset)
    r = matmul(x, wt)
    if b is None:
        return r
    return PW["add"](r, b, r)


KERNELS = {"matmul": k_matmul, "linear": k_linear}
