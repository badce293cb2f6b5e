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

from ember.backend import Tensor
from ember.backend import make_tensor as _make
from ember.backend import UntypedStorage
from ember.backend import contiguous_strides

from . import layout as L
from ..runtime import pack
from .types import T, preamble, read_slot, scalar_slot, vload, vstore

_CSTR: dict = {}


def cstrides(shape: tuple) -> tuple:
    st = _CSTR.get(shape)
    if st is None:
        st = _CSTR[shape] = contiguous_strides(shape)
    return st


def new_tensor(cd, shape: tuple, dtype, device) -> Tensor:
    """A new contiguous opencl tensor (uninitialised)."""
    n = 1
    for s in shape:
        n *= s
    nbytes = n * dtype.itemsize
    return _make(UntypedStorage(cd.alloc(nbytes), nbytes, device), shape, cstrides(shape), 0, dtype, device)


def _expanded(x: Tensor, shape: tuple) -> Tensor:
    return view(x, shape, L.bstrides(x, shape))


def view(t: Tensor, shape: tuple, stride: tuple | None = None, offset: int | None = None) -> Tensor:
    """A tensor over ``t``'s storage with other geometry (internal: no autograd, no base)."""
    return _make(t._storage, shape, cstrides(shape) if stride is None else stride,
                 t._offset if offset is None else offset, t._dtype, t._device)


def cl_dev(t: Tensor):
    return t._storage._data.dev


# operand names in expressions (fused kernels take up to seven)
NAMES = ("a", "b", "c", "d", "e", "f", "h")


def vwidth(t) -> int:
    """Elements per work-item of the vector layout."""
    return 8 if t.size == 8 else 16


def _vsource(expr: str, vexpr: str, ot, kinds: tuple, nv: int, helpers: str):
    """The ``flatv`` layout: every operand contiguous and of the output's (float) type; each
    work-item computes W consecutive elements with vector loads, math and a vector store (the
    builtins' vector forms are many times faster than scalar calls on CPU drivers), the last
    one finishing the tail element by element."""
    it = next(k[1] for k in kinds if k[0] == "t")  # operands' type (the output's, or bool for comparisons)
    W = vwidth(it)
    vt = f"{it.ct}{W}"
    ntens = sum(1 for k in kinds if k[0] == "t")
    params = [f"{ot.ptr()} o"] + [f"const {ct.ptr()} p{k}" for k, (kind, ct) in enumerate(kinds) if kind == "t"]
    params.append("const M m")
    scal_at = 2 + 1 + ntens + 1 + (1 + ntens)
    body = [f"  long base = get_global_id(0) * {W}; long n = m.v[0]; if (base >= n) return;",
            "  long io = m.v[2] + base;"]
    ti = 0
    for k, (kind, ct) in enumerate(kinds):
        if kind == "t":
            ti += 1
            body.append(f"  long i{k} = m.v[{2 + ti}] + base;")
    si = 0
    svals = {}
    for k, (kind, ct) in enumerate(kinds):
        if kind == "s":
            svals[k] = read_slot(scal_at + si, ct)
            si += 1
    body.append(f"  if (base + {W} <= n) {{")
    for k, (kind, ct) in enumerate(kinds):
        if kind == "t":
            body.append(f"    {vt} {NAMES[k]} = {vload(vt, W, f'p{k} + i{k}')};")
        else:
            body.append(f"    {vt} {NAMES[k]} = ({vt})({svals[k]});")
    if ot.is_bool:  # a comparison: lanes are -1/0, stored as 1/0
        body.append("    " + vstore(f"uchar{W}", W, f"convert_uchar{W}(-({vexpr.replace('{vt}', vt)}))", "o + io") + ";")
    else:
        body.append("    " + vstore(vt, W, f"({vt})({vexpr.replace('{vt}', vt)})", "o + io") + ";")
    body.append("    return;")
    body.append("  }")
    body.append("  for (long j = 0; base + j < n; ++j) {")
    for k, (kind, ct) in enumerate(kinds):
        if kind == "t":
            body.append(f"    {ct.ct} {NAMES[k]} = p{k}[i{k} + j];")
        else:
            body.append(f"    {ct.ct} {NAMES[k]} = {svals[k]};")
    body.append(f"    {ot.store('o', 'io + j', expr)};")
    body.append("  }")
    src = (preamble(ot, *[k[1] for k in kinds]) + helpers + f"typedef struct {{ long v[{nv}]; }} M;\n"
           f"__kernel void ew({', '.join(params)}) {{\n" + "\n".join(body) + "\n}\n")
    return src, "ew"


def _source(key, expr: str, ot, kinds: tuple, layout: str, R: int, needs_err: bool, nv: int, helpers: str):
    """OpenCL C for one elementwise kernel. ``kinds[k]`` is ``('t', CT)`` for a tensor operand
    or ``('s', CT)`` for a scalar (read from meta)."""
    names = NAMES
    ntens = sum(1 for k in kinds if k[0] == "t")
    params = [f"{ot.ptr()} o"]
    tidx = 0
    for k, (kind, ct) in enumerate(kinds):
        if kind == "t":
            params.append(f"const {ct.ptr()} p{k}")
            tidx += 1
    if needs_err:
        params.append("__global long* err")
    params.append("const M m")
    # meta layout: [n (or inner), outer, off_o, off_t..., shape[R], st_o[R], st_t[R]..., scalars...]
    off_at = 2
    shape_at = off_at + 1 + ntens
    st_at = [shape_at + R + i * R for i in range(1 + ntens)]
    scal_at = shape_at + R + (1 + ntens) * R
    body = []
    pos = ["io"] + [f"i{k}" for k, kd in enumerate(kinds) if kd[0] == "t"]
    body.append(f"  long io = m.v[{off_at}];")
    ti = 0
    for k, (kind, ct) in enumerate(kinds):
        if kind == "t":
            ti += 1
            body.append(f"  long i{k} = m.v[{off_at + ti}];")
    if layout == "flat":
        body.insert(0, "  long g_ = get_global_id(0); if (g_ >= m.v[0]) return;")
        for p in pos:
            body.append(f"  {p} += g_;")
    elif layout == "r1":
        body.insert(0, "  long g_ = get_global_id(0); if (g_ >= m.v[0]) return;")
        for j, p in enumerate(pos):
            body.append(f"  {p} += g_ * m.v[{st_at[j]}];")
    elif layout == "nd1":
        body.insert(0, "  long g_ = get_global_id(0); if (g_ >= m.v[0]) return;")
        body.append(L.offsets_code(R, pos, shape_at, st_at, "g_"))
    else:  # nd: axis 0 is the innermost dim, axis 1 the others
        body.insert(0, "  long g_ = get_global_id(0); if (g_ >= m.v[0]) return;")
        body.append(L.offsets_code(R - 1, pos, shape_at, st_at, "get_global_id(1)"))
        for j, p in enumerate(pos):
            body.append(f"  {p} += g_ * m.v[{st_at[j] + R - 1}];")
    si = 0
    for k, (kind, ct) in enumerate(kinds):
        if kind == "t":
            body.append(f"  {ct.ct} {names[k]} = {ct.load(f'p{k}', f'i{k}')};")
        else:
            body.append(f"  {ct.ct} {names[k]} = {read_slot(scal_at + si, ct)};")
            si += 1
    body.append(f"  {ot.store('o', 'io', expr)};")
    kname = "ew"
    src = (preamble(ot, *[k[1] for k in kinds]) + helpers +
           f"typedef struct {{ long v[{nv}]; }} M;\n"
           f"__kernel void {kname}({', '.join(params)}) {{\n" + "\n".join(body) + "\n}\n")
    return src, kname


def run(opkey, expr: str, ot, operands: list, shape: tuple, out: Tensor | None, device, cd,
        needs_err: bool = False, helpers: str = "", vexpr: str | None = None) -> Tensor:
    """Compute ``expr`` elementwise over ``operands`` (tensors, broadcast to ``shape``, or
    ``(value, CT)`` scalars) into ``out`` (any strides; a new contiguous tensor when None) of
    element type ``ot``. ``vexpr`` (a form of ``expr`` valid on vector types, ``{vt}`` standing
    for the vector type) enables the vector layout for contiguous float operands. Returns the
    output tensor."""
    if out is None:
        out = new_tensor(cd, shape, ot.dtype, device)
    n = L.numel(shape)
    if n == 0:
        return out
    kinds = []
    tens = []
    scal = []
    for x in operands:
        if x.__class__ is tuple:  # (python scalar, CT)
            kinds.append(("s", x[1]))
            scal.append(scalar_slot(x[0], x[1]))
        else:
            kinds.append(("t", T(x._dtype)))
            tens.append(x)
    kinds = tuple(kinds)
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
        meta = [n, 0, out._offset] + [x._offset for x in tens] + [n] + [1] * (1 + len(tens)) + scal
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
        meta = [inner if lay == "nd" else n, n // inner, out._offset] + [x._offset for x in tens] + list(csh)
        for st in csts:
            meta.extend(st)
        meta.extend(scal)
    nv = len(meta)
    if nv * 8 > cd.max_param:  # too many dims for one argument struct: compact the operands first
        if not tens or all(x.is_contiguous() and x._shape == shape for x in tens):
            raise RuntimeError(f"opencl:{cd.index}: a {len(shape)}-d elementwise kernel needs {nv * 8} bytes of "
                               f"arguments; the device allows {cd.max_param} (CL_DEVICE_MAX_PARAMETER_SIZE)")
        from .memory import clone
        dense = [x if x.__class__ is tuple else clone(_expanded(x, shape)) for x in operands]
        return run(opkey, expr, ot, dense, shape, out, device, cd, needs_err, helpers, vexpr)
    key = (opkey, ot.name, kinds, lay, R, needs_err)
    if lay == "flatv":
        k = cd.kernel(key, lambda: _vsource(expr, vexpr, ot, kinds, nv, helpers))
        W = vwidth(T(tens[0]._dtype))
        items = (n + W - 1) // W
        l0 = L.pow2_at_least(items, 16, 256)
        cd.launch(k, (L.round_up(items, l0),), (l0,), tuple([out._storage._data.cl] +
                                                              [x._storage._data.cl for x in tens]), pack(meta))
        return out
    k = cd.kernel(key, lambda: _source(key, expr, ot, kinds, lay, R, needs_err, nv, helpers))
    bufs = [out._storage._data.cl] + [x._storage._data.cl for x in tens]
    if needs_err:
        bufs.append(cd.error_buffer())
    if lay == "nd":
        inner = meta[0]
        l0 = L.pow2_at_least(inner, 16, 256)
        gsize = (L.round_up(inner, l0), meta[1])
        lsize = (l0, 1)
    else:
        l0 = 1024 if cd.is_cpu else 256
        if n < l0:
            l0 = L.pow2_at_least(n, 64, l0)
        gsize = (L.round_up(n, l0),)
        lsize = (l0,)
    cd.launch(k, gsize, lsize, tuple(bufs), pack(meta))
    return out


