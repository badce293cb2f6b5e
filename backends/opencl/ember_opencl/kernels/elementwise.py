"""Elementwise kernels: unary, binary and ternary ops, casts (strided copy), and fill, on strided
operands with broadcasting and python scalars.

An op is a C expression over the operands' compute values ``a``, ``b``, ``c`` (see ``OPS`` in
:mod:`ember_opencl.kernels.ops`). One kernel is generated per (expression, dtypes, operand kinds,
rank, layout) and compiled once. Layouts:

* ``flat``: every tensor operand is contiguous over the output's elements (one index, loads the
  compiler can vectorise);
* ``r1``: one dim after collapsing, any strides (broadcast scalars-as-tensors, slices);
* ``nd``: a 2-D launch, the innermost dim on axis 0 and the other dims on axis 1, so only the
  outer position is divided down into coordinates;
* ``nd1``: the same geometry on a 1-D launch, for tensors whose innermost dim is short.
"""
from __future__ import annotations

import functools
import math

from ember.backend import Tensor

from . import layout as L
from .args import Args
from .tensors import expanded, new_tensor
from .types import T, preamble, vload, vstore

# operand names in expressions (fused kernels take up to seven)
NAMES = ("a", "b", "c", "d", "e", "f", "h")


def vwidth(t) -> int:
    """Elements per work-item of the vector layout."""
    return 8 if t.size == 8 else 16


@functools.lru_cache(maxsize=None)
def args_for(kinds: tuple, R: int) -> Args:
    """The argument struct of an elementwise kernel over operands ``kinds`` and rank ``R``:
    ``n`` (elements, or the innermost size of the ``nd`` layout), ``off_o`` and ``off[j]``
    (element offsets of the output and of the j-th tensor operand), ``shape[R]``,
    ``st[1 + tensors][R]`` (strides: the output's, then each tensor operand's) and one field per
    scalar operand, named as in the expression (``a``, ``b``...)."""
    ntens = sum(1 for k in kinds if k[0] == "t")
    A = Args().long("n", "off_o").array("off", ntens).array("shape", R).array("st", R, rows=1 + ntens)
    for k, (kind, ct) in enumerate(kinds):
        if kind == "s":
            A.scalar(NAMES[k], ct)
    return A


def _operands(kinds: tuple):
    """``[(k, name, CT, j)]`` per operand: its position in the expression, name, type, and its
    index among the tensor operands (None for a scalar)."""
    out, j = [], 0
    for k, (kind, ct) in enumerate(kinds):
        out.append((k, NAMES[k], ct, j if kind == "t" else None))
        j += kind == "t"
    return out


def _vsource(expr: str, vexpr: str, ot, kinds: tuple, helpers: str):
    """The ``flatv`` layout: every operand contiguous and of the output's (float) type; each
    work-item computes W consecutive elements with vector loads, math and a vector store (the
    builtins' vector forms are many times faster than scalar calls on CPU drivers), the last
    one finishing the tail element by element."""
    it = next(k[1] for k in kinds if k[0] == "t")  # operands' type (the output's, or bool for comparisons)
    W = vwidth(it)
    vt = f"{it.ct}{W}"
    ops = _operands(kinds)
    params = [f"{ot.ptr()} o"] + [f"const {ct.ptr()} p{k}" for k, _, ct, j in ops if j is not None]
    params.append("const M m")
    body = [f"  long base = get_global_id(0) * {W}; long n = m.n; if (base >= n) return;",
            "  long io = m.off_o + base;"]
    for k, _, ct, j in ops:
        if j is not None:
            body.append(f"  long i{k} = m.off[{j}] + base;")
    body.append(f"  if (base + {W} <= n) {{")
    for k, nm, ct, j in ops:
        if j is not None:
            body.append(f"    {vt} {nm} = {vload(vt, W, f'p{k} + i{k}')};")
        else:
            body.append(f"    {vt} {nm} = ({vt})(m.{nm});")
    if ot.is_bool:  # a comparison: lanes are -1/0, stored as 1/0
        body.append("    " + vstore(f"uchar{W}", W, f"convert_uchar{W}(-({vexpr.replace('{vt}', vt)}))", "o + io")
                    + ";")
    else:
        body.append("    " + vstore(vt, W, f"({vt})({vexpr.replace('{vt}', vt)})", "o + io") + ";")
    body.append("    return;")
    body.append("  }")
    body.append("  for (long j = 0; base + j < n; ++j) {")
    for k, nm, ct, j in ops:
        body.append(f"    {ct.ct} {nm} = " + (f"p{k}[i{k} + j];" if j is not None else f"m.{nm};"))
    body.append(f"    {ot.store('o', 'io + j', expr)};")
    body.append("  }")
    src = (preamble(ot, *[k[1] for k in kinds]) + helpers + args_for(kinds, 1).struct() +
           f"__kernel void ew({', '.join(params)}) {{\n" + "\n".join(body) + "\n}\n")
    return src, "ew"


def _source(expr: str, ot, kinds: tuple, layout: str, R: int, needs_err: bool, helpers: str):
    """OpenCL C for one elementwise kernel. ``kinds[k]`` is ``('t', CT)`` for a tensor operand
    or ``('s', CT)`` for a scalar (a field of the argument struct, see :func:`args_for`)."""
    ops = _operands(kinds)
    params = [f"{ot.ptr()} o"] + [f"const {ct.ptr()} p{k}" for k, _, ct, j in ops if j is not None]
    if needs_err:
        params.append("__global long* err")
    params.append("const M m")
    pos = ["io"] + [f"i{k}" for k, _, _, j in ops if j is not None]
    strides = [f"m.st[{j}]" for j in range(len(pos))]
    body = ["  long g_ = get_global_id(0); if (g_ >= m.n) return;", "  long io = m.off_o;"]
    for k, _, _, j in ops:
        if j is not None:
            body.append(f"  long i{k} = m.off[{j}];")
    if layout == "flat":
        for p in pos:
            body.append(f"  {p} += g_;")
    elif layout == "r1":
        for p, st in zip(pos, strides):
            body.append(f"  {p} += g_ * {st}[0];")
    elif layout == "nd1":
        body.append(L.offsets_code(R, pos, "m.shape", strides, "g_"))
    else:  # nd: axis 0 is the innermost dim, axis 1 the others
        body.append(L.offsets_code(R - 1, pos, "m.shape", strides, "get_global_id(1)"))
        for p, st in zip(pos, strides):
            body.append(f"  {p} += g_ * {st}[{R - 1}];")
    for k, nm, ct, j in ops:
        body.append(f"  {ct.ct} {nm} = " + (f"{ct.load(f'p{k}', f'i{k}')};" if j is not None else
                                            f"{ct.field(f'm.{nm}')};"))
    body.append(f"  {ot.store('o', 'io', expr)};")
    src = (preamble(ot, *[k[1] for k in kinds]) + helpers + args_for(kinds, R).struct() +
           f"__kernel void ew({', '.join(params)}) {{\n" + "\n".join(body) + "\n}\n")
    return src, "ew"


def _dense(x: Tensor, shape: tuple, device, cd) -> Tensor:
    """``x`` broadcast to ``shape``, as a new contiguous tensor."""
    t = T(x._dtype)
    return run(("copy", t.name), "a", t, [expanded(x, shape)], shape, None, device, cd)


def run(opkey, expr: str, ot, operands: list, shape: tuple, out: Tensor | None, device, cd,
        needs_err: bool = False, helpers: str = "", vexpr: str | None = None) -> Tensor:
    """Compute ``expr`` elementwise over ``operands`` (tensors, broadcast to ``shape``, or
    ``(value, CT)`` scalars) into ``out`` (any strides; a new contiguous tensor when None) of
    element type ``ot``. ``vexpr`` (a form of ``expr`` valid on vector types, ``{vt}`` standing
    for the vector type) enables the vector layout for contiguous float operands. Returns the
    output tensor."""
    if out is None:
        out = new_tensor(cd, shape, ot.dtype, device)
    n = math.prod(shape)
    if n == 0:
        return out
    kinds = []
    tens = []
    scal = {}
    for x in operands:
        if x.__class__ is tuple:  # (python scalar, CT)
            scal[NAMES[len(kinds)]] = x[0]
            kinds.append(("s", x[1]))
        else:
            kinds.append(("t", T(x._dtype)))
            tens.append(x)
    kinds = tuple(kinds)
    offs = [x._offset for x in tens]
    # layout
    cont = out.is_contiguous()
    flat = cont
    if flat:
        for x in tens:
            if x._shape != shape or not x.is_contiguous():
                flat = False
                break
    if flat:
        R = 1
        lay = "flat"
        if vexpr is not None and not needs_err and tens:
            it = T(tens[0]._dtype)
            if it.is_float and not it.f16 and not it.bf16 and all(k[1] is it for k in kinds) \
                    and (ot is it or ot.is_bool):
                lay = "flatv"
        A = args_for(kinds, 1)
        meta = A.pack(n=n, off_o=out._offset, off=offs, shape=(n,), st=(1,) * (1 + len(tens)), **scal)
    else:
        sts = [out._stride] + [L.bstrides(x, shape) for x in tens]
        csh, csts = L.collapse(shape, sts)
        R = len(csh)
        inner = csh[-1]
        if R == 1:
            lay = "r1"
        elif inner >= 16:
            lay = "nd"
        else:
            lay = "nd1"
        A = args_for(kinds, R)
        if A.nbytes > cd.max_param:  # too many dims for one argument struct: compact the operands first
            if not tens or all(x.is_contiguous() and x._shape == shape for x in tens):
                raise RuntimeError(f"opencl:{cd.index}: a {len(shape)}-d elementwise kernel needs {A.nbytes} bytes "
                                   f"of arguments; the device allows {cd.max_param} (CL_DEVICE_MAX_PARAMETER_SIZE)")
            dense = [x if x.__class__ is tuple else _dense(x, shape, device, cd) for x in operands]
            return run(opkey, expr, ot, dense, shape, out, device, cd, needs_err, helpers, vexpr)
        meta = A.pack(n=inner if lay == "nd" else n, off_o=out._offset, off=offs, shape=csh,
                      st=[s for st in csts for s in st], **scal)
    key = (opkey, ot.name, kinds, lay, R, needs_err)
    if lay == "flatv":
        k = cd.kernel(key, lambda: _vsource(expr, vexpr, ot, kinds, helpers))
        W = vwidth(T(tens[0]._dtype))
        items = (n + W - 1) // W
        l0 = L.pow2_at_least(items, 16, 256)
        cd.launch(k, (L.round_up(items, l0),), (l0,), tuple([out._storage._data.cl] +
                                                              [x._storage._data.cl for x in tens]), meta)
        return out
    k = cd.kernel(key, lambda: _source(expr, ot, kinds, lay, R, needs_err, helpers))
    bufs = [out._storage._data.cl] + [x._storage._data.cl for x in tens]
    if needs_err:
        bufs.append(cd.error_buffer())
    if lay == "nd":
        l0 = L.pow2_at_least(inner, 16, 256)
        gsize = (L.round_up(inner, l0), n // inner)
        lsize = (l0, 1)
    else:
        l0 = 1024 if cd.is_cpu else 256
        if n < l0:
            l0 = L.pow2_at_least(n, 64, l0)
        gsize = (L.round_up(n, l0),)
        lsize = (l0,)
    cd.launch(k, gsize, lsize, tuple(bufs), meta)
    return out
