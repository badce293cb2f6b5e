"""Reductions over any set of dims (sum, prod, amax, amin, argmax, argmin) and the fast paths
built on them (mean), as one generated kernel per (op, dtypes, kept rank, reduced rank, mode).

The input is viewed as M outputs (the kept dims, collapsed) times K reduced elements (the reduced
dims, collapsed). ``serial`` gives each output one work-item; ``tree`` gives each output G
work-groups of L work-items: each work-item folds a contiguous run of the output's elements,
the work-group combines its L values as a tree in local memory, and when G > 1 a second launch
folds the G partial results. Work-items walk their elements with incremental coordinates (no
division per element); a 1-D reduced space is unrolled over four accumulators.
"""
from __future__ import annotations

import functools
import math

from ember.backend import dtypes as D
from ember.backend import Tensor

from . import cplx
from . import layout as L
from . import tensors as tn
from .args import Args
from .memory import k_fill_
from .types import TYPES, T, max_value, min_value, preamble, vload

I64 = TYPES["int64"]


def acc_type(op: str, t):
    if op in ("sum", "prod", "mean"):
        if t.is_complex:
            return t
        if t.is_float:
            return TYPES["float64"] if t.ct == "double" else TYPES["float32"]
        return I64
    return t


def _ops(op: str, a, it):
    """(identity, fold statement over acc/v, tree-combine statement of s[i] and s[j]) in C."""
    c = a.ct
    if op in ("sum", "mean"):
        return f"(({c})0)", "acc = acc + v;", "x = x + y;"
    if op == "prod" and a.is_complex:
        mul = f"cx_mul_{cplx.suffix(a)}"
        return f"(({c})(1, 0))", f"acc = {mul}(acc, v);", f"x = {mul}(x, y);"
    if op == "prod":
        return f"(({c})1)", "acc = acc * v;", "x = x * y;"
    # floats: max()/min() (plain compare-and-select, no NaN rules) with NaN tracked on the side
    if op == "amax":
        if a.is_float:
            return min_value(a), "acc = max(acc, v); bad |= isnan(v);", "x = (y > x || isnan(y)) ? y : x;"
        return min_value(a), "acc = v > acc ? v : acc;", "x = y > x ? y : x;"
    if op == "amin":
        if a.is_float:
            return max_value(a), "acc = min(acc, v); bad |= isnan(v);", "x = (y < x || isnan(y)) ? y : x;"
        return max_value(a), "acc = v < acc ? v : acc;", "x = y < x ? y : x;"
    raise KeyError(op)


def _arg_better(op: str, a, lv, li, rv, ri) -> str:
    """C condition: the pair (rv, ri) beats (lv, li) (NaN counts as the extreme; ties go to the
    smaller index)."""
    cmp = ">" if op == "argmax" else "<"
    if a.is_float:
        return (f"((isnan({rv}) && (!isnan({lv}) || {ri} < {li})) || (!isnan({lv}) && !isnan({rv}) && "
                f"({rv} {cmp} {lv} || ({rv} == {lv} && {ri} < {li}))))")
    return f"({rv} {cmp} {lv} || ({rv} == {lv} && {ri} < {li}))"


@functools.lru_cache(maxsize=None)
def _args(Rk: int, Rr: int) -> Args:
    """``rows`` outputs of ``k`` reduced elements each, x's offset ``off_x``, ``groups`` work-groups
    per output; over the kept dims ``kshape``, ``kst_x`` (x's strides) and ``kst_o`` (the
    output's); over the reduced dims ``rshape`` and ``rst_x``; ``count``, the divisor of mean."""
    return (Args().long("rows", "k", "off_x", "groups").array("kshape", Rk).array("kst_x", Rk).array("kst_o", Rk)
            .array("rshape", Rr).array("rst_x", Rr).long("count"))


def _walk(Rr: int, k0: str, k1: str, body: str, unroll: bool, indent="  ") -> str:
    """C looping k over [k0, k1) of the reduced space (``m.rshape``, strides ``m.rst_x``) with
    ``off`` at element k (incremental coordinates), running ``body`` (which reads ``off`` and
    ``k``)."""
    ind = indent
    out = []
    if Rr == 1:
        out.append(f"{ind}long st0_ = m.rst_x[0];")
        out.append(f"{ind}off += {k0} * st0_;")
        if unroll:
            out.append(f"{ind}long k = {k0};")
            out.append(f"{ind}for (; k + 4 <= {k1}; k += 4) {{")
            for j in range(4):
                out.append(f"{ind}  {{ long o_ = off + {j} * st0_; "
                           + body.replace("off", "o_").replace("acc", f"acc{j}") + " }")
            out.append(f"{ind}  off += 4 * st0_;")
            out.append(f"{ind}}}")
            out.append(f"{ind}for (; k < {k1}; ++k) {{ {body} off += st0_; }}")
        else:
            out.append(f"{ind}for (long k = {k0}; k < {k1}; ++k) {{ {body} off += st0_; }}")
        return "\n".join(out)
    # coordinates of k0
    out.append(f"{ind}long c_[{Rr}]; {{ long r_ = {k0};")
    for d in range(Rr - 1, 0, -1):
        out.append(f"{ind}  c_[{d}] = r_ % m.rshape[{d}]; r_ /= m.rshape[{d}];")
    out.append(f"{ind}  c_[0] = r_; }}")
    for d in range(Rr):
        out.append(f"{ind}off += c_[{d}] * m.rst_x[{d}];")
    out.append(f"{ind}for (long k = {k0}; k < {k1}; ++k) {{")
    out.append(f"{ind}  {body}")
    # advance innermost, carrying outwards
    carry = []
    for d in range(Rr - 1, -1, -1):
        carry.append(f"off += m.rst_x[{d}]; if (++c_[{d}] < m.rshape[{d}]) continue; "
                     f"c_[{d}] = 0; off -= m.rshape[{d}] * m.rst_x[{d}];")
    out.append(f"{ind}  " + " ".join(carry))
    out.append(f"{ind}}}")
    return "\n".join(out)


def _vw(t) -> int:
    return 8 if t.size == 8 else 16


def _vector_fold(op: str, it, at, ident: str) -> str:
    """C folding x[off + k0 .. ) in vectors while a whole vector fits, advancing k0."""
    w = _vw(at)
    vt = f"{at.ct}{w}"
    if op in ("sum", "mean"):
        f = "va = va + v; vb = vb + u;"
        m = "va = va + vb;"
    elif op == "prod":
        f = "va = va * v; vb = vb * u;"
        m = "va = va * vb;"
    elif op == "amax":  # NaNs are or-ed into a lane mask (a horizontal any() per step is slow)
        f = "va = max(va, v); vb = max(vb, u);" + (" vn |= isnan(v) | isnan(u);" if at.is_float else "")
        m = "va = max(va, vb);"
    else:
        f = "va = min(va, v); vb = min(vb, u);" + (" vn |= isnan(v) | isnan(u);" if at.is_float else "")
        m = "va = min(va, vb);"
    conv = f"convert_{vt}" if it.ct != at.ct else ""
    lanes = [f"va.s{j:x}" for j in range(w)]
    out = [f"  if (k1 - k0 >= {2 * w}) {{",
           f"    {vt} va = ({vt})({ident}), vb = va; {'long' if w == 8 else 'int'}{w} vn = 0;",
           f"    const __global {it.st}* px = x + off;",
           f"    for (; k0 + {2 * w} <= k1; k0 += {2 * w}) {{",
           f"      {vt} v = {conv}({vload(f'{it.ct}{w}', w, 'px + k0')}), "
           f"u = {conv}({vload(f'{it.ct}{w}', w, f'px + k0 + {w}')});",
           f"      {f}",
           "    }",
           f"    {m}" + (" bad |= any(vn);" if "vn |=" in f else "")]
    comb = {"sum": "+", "mean": "+", "prod": "*"}.get(op)
    if comb:
        out.append(f"    acc = {f' {comb} '.join(lanes)};")
    else:
        fn = "max" if op == "amax" else "min"
        for ln in lanes:
            out.append(f"    acc = {fn}(acc, {ln});")
    out.append("  }")
    return "\n".join(out)


def _source(op, it, ot, at, Rk, Rr, mode, Lsz, G, partial_in, final_out, contig=False):
    """One reduction kernel (arguments: :func:`_args`)."""
    is_arg = op in ("argmax", "argmin")
    lines = [preamble(it, ot, at), _args(Rk, Rr).struct()]
    params = [f"{ot.ptr() if final_out else at.ptr()} out", f"const {it.ptr()} x"]
    if is_arg:
        params.insert(1, "__global long* outi")
        if partial_in:
            params.append("const __global long* xi")
    params.append("const M m")
    lines.append(f"__kernel void red({', '.join(params)}) {{")
    if mode == "serial":
        lines.append("  long row = get_global_id(0); if (row >= m.rows) return;")
        lines.append("  long mo = row;")
    else:
        lines.append("  long lid = get_local_id(0); long row = get_global_id(1);")
        lines.append("  long mo = row / m.groups; long g = row % m.groups;")
    # base offsets of this output
    lines.append("  long off = m.off_x; long oo = 0;")
    lines.append(L.offsets_code(Rk, ["off", "oo"], "m.kshape", ["m.kst_x", "m.kst_o"], "mo"))
    if mode == "serial":
        lines.append("  long k0 = 0, k1 = m.k;")
    else:
        lines.append("  long ch = (m.k + m.groups - 1) / m.groups;")
        lines.append("  long lo = g * ch; long hi = min(m.k, lo + ch);")
        lines.append(f"  long sub = (hi - lo + {Lsz - 1}) / {Lsz};")
        lines.append("  long k0 = min(hi, lo + lid * sub), k1 = min(hi, k0 + sub);")
    ld = it.load("x", "off")
    if is_arg:
        lines.append(f"  {at.ct} av = {min_value(at) if op == 'argmax' else max_value(at)}; long ai = -1;")
        if partial_in:
            body = (f"{{ {at.ct} v = {ld}; long vi = xi[off]; "
                    f"if (ai < 0 || {_arg_better(op, at, 'av', 'ai', 'v', 'vi')}) {{ av = v; ai = vi; }} }}")
        else:
            cmp = ">" if op == "argmax" else "<"
            cond = f"(v {cmp} av || (isnan(v) && !isnan(av)))" if at.is_float else f"(v {cmp} av)"
            body = f"{{ {at.ct} v = {ld}; if (ai < 0 || {cond}) {{ av = v; ai = k; }} }}"
        lines.append(_walk(Rr, "k0", "k1", body, False))
    else:
        ident, fold, comb = _ops(op, at, it)
        unroll = Rr == 1
        body = f"{{ {at.ct} v = ({at.ct})({ld}); {fold} }}"
        if unroll:
            lines.append("  " + " ".join(f"{at.ct} acc{j} = {ident};" for j in range(4)))
        lines.append(f"  {at.ct} acc = {ident}; int bad = 0;")
        if contig:  # unit stride: vector loads, two vector accumulators, then the scalar tail
            lines.append(_vector_fold(op, it, at, ident))
        lines.append(_walk(Rr, "k0", "k1", body, unroll))
        if unroll:
            for j in range(4):
                lines.append(f"  {{ {at.ct} x = acc, y = acc{j}; {comb} acc = x; }}")
        if "bad |=" in fold:
            lines.append("  if (bad) acc = NAN;")
    if mode == "tree":
        if is_arg:
            lines.append(f"  __local {at.ct} sv[{Lsz}]; __local long si[{Lsz}];")
            lines.append("  sv[lid] = av; si[lid] = ai; barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"  for (int w = {Lsz // 2}; w > 0; w >>= 1) {{")
            lines.append("    if (lid < w) { "
                         + f"{at.ct} lv = sv[lid], rv = sv[lid + w]; long li = si[lid], ri = si[lid + w];"
                         + f" if (ri >= 0 && (li < 0 || {_arg_better(op, at, 'lv', 'li', 'rv', 'ri')})) "
                         "{ sv[lid] = rv; si[lid] = ri; } }")
            lines.append("    barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append("  }")
            lines.append("  if (lid != 0) return;")
            lines.append("  av = sv[0]; ai = si[0];")
        else:
            lines.append(f"  __local {at.ct} s[{Lsz}];")
            lines.append("  s[lid] = acc; barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append(f"  for (int w = {Lsz // 2}; w > 0; w >>= 1) {{")
            lines.append(f"    if (lid < w) {{ {at.ct} x = s[lid], y = s[lid + w]; {comb} s[lid] = x; }}")
            lines.append("    barrier(CLK_LOCAL_MEM_FENCE);")
            lines.append("  }")
            lines.append("  if (lid != 0) return;")
            lines.append("  acc = s[0];")
        dst = "oo" if G == 1 else "row"
    else:
        dst = "oo"
    if is_arg:
        if final_out:
            lines.append(f"  outi[{dst}] = ai < 0 ? 0 : ai;")
        else:
            lines.append(f"  out[{dst}] = av; outi[{dst}] = ai;")
    else:
        val = f"acc / ({at.ct})m.count" if op == "mean" else "acc"
        if final_out:
            lines.append("  " + ot.store("out", dst, f"({ot.ct})({val})") + ";")
        elif at.is_complex:
            lines.append("  " + at.store("out", dst, "acc") + ";")
        else:
            lines.append(f"  out[{dst}] = acc;")
    lines.append("}")
    return "\n".join(lines) + "\n", "red"


def _geometry(x: Tensor, dims: tuple):
    shape, st = x._shape, x._stride
    kept = [d for d in range(len(shape)) if d not in dims]
    kshape = tuple(shape[d] for d in kept)
    ocst = tn.cstrides(kshape)
    ksh, (kx, ko) = L.collapse(kshape, [tuple(st[d] for d in kept), ocst])
    rshape = tuple(shape[d] for d in dims)
    rsh, (rx,) = L.collapse(rshape, [tuple(st[d] for d in dims)])
    return kshape, ksh, kx, ko, rsh, rx


def reduce(op: str, x: Tensor, dims: tuple, keepdim: bool, out_dtype=None, *, mean_div=None) -> Tensor:
    """Reduce ``x`` over sorted ``dims`` with ``op``; returns a new contiguous tensor."""
    cd = tn.cl_dev(x)
    it = T(x._dtype)
    is_arg = op in ("argmax", "argmin")
    ot = I64 if is_arg else T(out_dtype or x._dtype)
    at = it if is_arg else acc_type(op, it)
    kshape, ksh, kx, ko, rsh, rx = _geometry(x, dims)
    M = math.prod(kshape)
    K = math.prod(rsh)
    oshape = tuple(1 if d in dims else s for d, s in enumerate(x._shape)) if keepdim else kshape
    out = tn.new_tensor(cd, oshape, ot.dtype, x._device)
    outi = None
    if M == 0:
        return out
    if K == 0:
        if is_arg:
            raise (RuntimeError if len(dims) == len(x._shape) else IndexError)(
                f"{op}: expected reduction dim to be specified for input.numel() == 0 / "
                f"cannot reduce over a zero-size dimension (input shape {list(x._shape)})")
        ident = {"sum": 0, "mean": float("nan"), "prod": 1}.get(op)
        if ident is None:
            raise RuntimeError(f"{op}(): Expected reduction dim to have non-zero size (input shape {list(x._shape)})")
        return k_fill_(out, ident)
    Rk, Rr = len(ksh), len(rsh)
    many = M >= 64 * max(4, cd.compute_units)
    if K <= 64 or many:
        mode, Lsz, G = "serial", 1, 1
    else:
        mode = "tree"
        Lsz = 16 if cd.is_cpu else 256
        G = max(1, min((K + 4095) // 4096, (8 * max(2, cd.compute_units) + M - 1) // M))
    if is_arg:
        outi = out
        vals = None
    meta = _args(Rk, Rr).pack(rows=M, k=K, off_x=x._offset, groups=G, kshape=ksh, kst_x=kx, kst_o=ko, rshape=rsh,
                              rst_x=rx, count=K)
    final = G == 1
    contig = (Rr == 1 and rx[0] == 1 and not is_arg and not it.f16 and not it.bf16 and not it.is_bool
              and not it.is_complex
              and (mode == "tree" or K >= 64))
    key = ("red", op, it.name, ot.name, Rk, Rr, mode, Lsz, G > 1, contig)
    k = cd.kernel(key, lambda: _source(op, it, ot, at, Rk, Rr, mode, Lsz, G, False, final, contig))
    if final:
        target = out
    else:
        target = tn.new_tensor(cd, (M * G,), at.dtype, x._device)
        if is_arg:
            vals = target
            outi = tn.new_tensor(cd, (M * G,), D.int64, x._device)
    bufs = [target._storage._data.cl]
    if is_arg:
        bufs.append(outi._storage._data.cl if not final else out._storage._data.cl)
        if final:
            bufs = [out._storage._data.cl, out._storage._data.cl]
    bufs.append(x._storage._data.cl)
    if mode == "serial":
        l0 = 64
        cd.launch(k, (L.round_up(M, l0),), (l0,), tuple(bufs), meta)
    else:
        cd.launch(k, (Lsz, M * G), (Lsz, 1), tuple(bufs), meta)
    if final:
        return out
    # second pass: fold the G partials of each output (contiguous rows of G)
    meta2 = _args(1, 1).pack(rows=M, k=G, off_x=0, groups=1, kshape=(M,), kst_x=(G,), kst_o=(1,), rshape=(G,),
                             rst_x=(1,), count=K)
    key2 = ("red2", op, at.name, ot.name)
    k2 = cd.kernel(key2, lambda: _source(op, at, ot, at, 1, 1, "serial", 1, 1, is_arg, True))
    if is_arg:
        bufs2 = (out._storage._data.cl, out._storage._data.cl, vals._storage._data.cl, outi._storage._data.cl)
    else:
        bufs2 = (out._storage._data.cl, target._storage._data.cl)
    cd.launch(k2, (L.round_up(M, 64),), (64,), bufs2, meta2)
    return out


def _red(op):
    def k(x, dims, keepdim):
        return reduce(op, x, tuple(dims), keepdim)
    k.__name__ = f"k_{op}"
    return k


def _arg(op):
    def k(x, dim, keepdim):
        if dim is None:
            return reduce(op, x, tuple(range(len(x._shape))), False)
        return reduce(op, x, (dim,), keepdim)
    k.__name__ = f"k_{op}"
    return k


def k_mean(x, dims, keepdim):
    return reduce("mean", x, tuple(dims), keepdim)


KERNELS = {"mean": k_mean, "sum": _red("sum"), "prod": _red("prod"), "amax": _red("amax"), "amin": _red("amin"),
           "argmax": _arg("argmax"), "argmin": _arg("argmin")}
