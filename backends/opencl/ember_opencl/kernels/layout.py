"""Geometry shared by the kernel generators: broadcasting strides, collapsing dimensions, and
the OpenCL C that turns a work-item's position into one element offset per operand.

Generated kernels are specialised by rank only; shapes, strides and offsets travel in the
launch's by-value ``meta`` struct (``long v[n]``), so one compiled kernel serves every shape.
"""
from __future__ import annotations


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


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def offsets_code(R: int, names: list, shape_at: int, strides_at: list, idx: str, first: int = 0,
                 indent: str = "  ") -> str:
    """C statements adding to each ``names[k]`` (already holding its base offset) the offset of
    the element at linear position ``idx`` over dims ``first .. R-1`` (row-major, shape in
    meta slots ``shape_at + d``, operand k's strides at ``strides_at[k] + d``).

    The position is consumed from the innermost dim outwards; the outermost dim needs no
    division."""
    lines = [f"{indent}long r_ = {idx};"]
    for d in range(R - 1, first - 1, -1):
        if d == first:
            lines.append(f"{indent}{{ long c_ = r_;")
        else:
            lines.append(f"{indent}{{ long s_ = m.v[{shape_at + d}]; long c_ = r_ % s_; r_ /= s_;")
        for k, nm in enumerate(names):
            lines.append(f"{indent}  {nm} += c_ * m.v[{strides_at[k] + d}];")
        lines.append(f"{indent}}}")
    return "\n".join(lines)


def round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def pow2_at_least(n: int, lo: int, hi: int) -> int:
    p = lo
    while p < n and p < hi:
        p *= 2
    return p
