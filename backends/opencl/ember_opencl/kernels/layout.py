"""Geometry shared by the kernel generators: broadcasting strides, collapsing dimensions, and
the OpenCL C that turns a work-item's position into one element offset per operand.

Generated kernels are specialised by rank only; shapes, strides and offsets travel in the
launch's by-value argument struct (:mod:`ember_opencl.kernels.args`), so one compiled kernel
serves every shape.
"""
from __future__ import annotations

import functools
import math

from .args import Args


def bstrides(t, shape: tuple) -> tuple:
    """``t``'s strides for a broadcast to ``shape`` (0 where it is broadcast)."""
    ts, st = t._shape, t._stride
    if ts == shape:
        return st
    lead = len(shape) - len(ts)
    out = [0] * lead
    for i, s in enumerate(ts):
        out.append(0 if s == 1 and shape[lead + i] != 1 else st[i])
    return tuple(out)


def collapse(shape: tuple, strides: list) -> tuple:
    """Drop size-1 dims and merge neighbours that are contiguous for every operand.

    Returns ``(shape, [strides per operand])`` with at least one dim."""
    dims = [i for i, s in enumerate(shape) if s != 1]
    if not dims:
        return (1,), [(0,) for _ in strides]
    sh = [shape[dims[0]]]
    sts = [[st[dims[0]]] for st in strides]
    for d in dims[1:]:
        s = shape[d]
        if all(st[-1] == o[d] * s for st, o in zip(sts, strides)):
            sh[-1] *= s
            for st, o in zip(sts, strides):
                st[-1] = o[d]
        else:
            sh.append(s)
            for st, o in zip(sts, strides):
                st.append(o[d])
    return tuple(sh), [tuple(st) for st in sts]


def along(x, out, d: int) -> tuple:
    """The rows of ``x`` along dim ``d`` (for kernels that walk each row: scans, sort, softmax):
    ``(rows, K, shape, strides of x, strides of out)``, the last three over the other dims,
    collapsed (at least one dim)."""
    kept = [i for i in range(len(x._shape)) if i != d]
    kshape = tuple(x._shape[i] for i in kept)
    ksh, (kx, ko) = collapse(kshape, [tuple(x._stride[i] for i in kept), tuple(out._stride[i] for i in kept)])
    return math.prod(kshape), x._shape[d], ksh, kx, ko


@functools.lru_cache(maxsize=None)
def rows_args(Rk: int, *extra: str) -> Args:
    """The argument struct of a kernel walking rows along one dim (see :func:`along`): ``rows``,
    ``k`` (the row length), ``off_x`` (x's offset), ``sx`` and ``so`` (the dim's stride in x and
    in the output), the ``long`` fields named in ``extra``, then over the other dims
    ``shape[Rk]``, ``st_x[Rk]`` and ``st_o[Rk]``."""
    return (Args().long("rows", "k", "off_x", "sx", "so", *extra)
            .array("shape", Rk).array("st_x", Rk).array("st_o", Rk))


def row_start(Rk: int, row: str = "row", x: str = "m.off_x") -> str:
    """C declaring ``off`` and ``oo``: the offsets in x and in the output of row ``row`` (x's
    starting from ``x``), for a kernel on :func:`rows_args`."""
    return (f"  long off = {x}, oo = 0;\n" +
            offsets_code(Rk, ["off", "oo"], "m.shape", ["m.st_x", "m.st_o"], row))


def offsets_code(R: int, names: list, shape: str, strides: list, idx: str, first: int = 0,
                 indent: str = "  ") -> str:
    """C statements adding to each ``names[k]`` (already holding its base offset) the offset of
    the element at linear position ``idx`` over dims ``first .. R-1`` (row-major). ``shape``
    and ``strides[k]`` are C arrays indexed by dim (fields of the argument struct, e.g.
    ``"m.shape"``, ``"m.st[1]"``).

    The position is consumed from the innermost dim outwards; the outermost dim needs no
    division."""
    lines = [f"{indent}long r_ = {idx};"]
    for d in range(R - 1, first - 1, -1):
        if d == first:
            lines.append(f"{indent}{{ long c_ = r_;")
        else:
            lines.append(f"{indent}{{ long s_ = {shape}[{d}]; long c_ = r_ % s_; r_ /= s_;")
        for k, nm in enumerate(names):
            lines.append(f"{indent}  {nm} += c_ * {strides[k]}[{d}];")
        lines.append(f"{indent}}}")
    return "\n".join(lines)


def flat_index(names: list, extents: str) -> str:
    """The C expression of the row-major position of the per-dim indices ``names`` (C variables)
    in a grid whose sizes are the argument array ``extents`` (``"m.in_sp"``: ``m.in_sp[d]``)."""
    expr = names[0]
    for i in range(1, len(names)):
        expr = f"({expr}) * {extents}[{i}] + {names[i]}"
    return expr


def round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def pow2_at_least(n: int, lo: int, hi: int) -> int:
    p = lo
    while p < n and p < hi:
        p *= 2
    return p
