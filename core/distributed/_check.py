"""Cross-rank agreement checks: before a collective moves data, every rank shares a few integers
describing its call (which collective, its sequence number in the group, op, root, the shapes
and dtypes of its tensors, and whether its own arguments were valid). Every rank then reaches
the same verdict, so a mismatch raises on all of them instead of corrupting memory or hanging.
"""
from __future__ import annotations

import zlib

from . import _meta

KINDS = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
         "reduce_scatter_tensor", "gather", "scatter", "barrier", "all_gather_object", "broadcast_object_list",
         "gather_object", "scatter_object_list", "new_group")
KIND_CODES = {k: i + 1 for i, k in enumerate(KINDS)}
OP_CODES = {None: 0, "sum": 1, "avg": 2, "product": 3, "min": 4, "max": 5, "band": 6, "bor": 7, "bxor": 8}

# [kind, seq, local error, op, root, list length, *sig a, *sig b, hash c]
_HEAD = 6
_A = slice(_HEAD, _HEAD + _meta.SIG_LEN)
_B = slice(_HEAD + _meta.SIG_LEN, _HEAD + 2 * _meta.SIG_LEN)
_C = _HEAD + 2 * _meta.SIG_LEN


def sigs_hash(sigs) -> int:
    """One integer for a list of signatures."""
    flat = ",".join(str(v) for s in sigs for v in s)
    return zlib.crc32(flat.encode()) & 0x7FFFFFFF


def _rank_list(pg, rows, idx, fmt) -> str:
    return ", ".join(f"rank {pg.ranks[r]}: {fmt(row[idx])}" for r, row in enumerate(rows))


class Call:
    """One rank's description of a collective call; ``local_error`` is the exception its own
    arguments deserve (raised after the exchange, so that the other ranks raise too)."""

    def __init__(self, kind: str, op=None, root: int = 0, length: int = 0, a=None, b=None, c: int = 0,
                 local_error: Exception | None = None) -> None:
        self.kind, self.op, self.root, self.length = kind, op, root, length
        self.a = a if a is not None else _meta.NONE_SIG
        self.b = b if b is not None else _meta.NONE_SIG
        self.c, self.local_error = c, local_error

    def vector(self, seq: int) -> list:
        return ([KIND_CODES[self.kind], seq, 1 if self.local_error else 0, OP_CODES[getattr(self.op, "value", self.op)],
                 self.root, self.length] + list(self.a) + list(self.b) + [self.c])


def exchange(pg, call: Call, timeout: float | None = None) -> list:
    """Share ``call`` with every rank of ``pg`` and raise on all of them if the calls disagree
    on what every collective needs (the kind, sequence number, op, root, list length); returns
    every rank's row for the op-specific checks."""
    seq = getattr(pg, "_ember_seq", 0) + 1
    pg._ember_seq = seq
    rows = pg.allgather_ints(call.vector(seq)) if timeout is None else pg.allgather_ints(call.vector(seq), timeout)
    if call.local_error is not None:
        raise call.local_error
    bad = [pg.ranks[r] for r, row in enumerate(rows) if row[2]]
    if bad:
        raise RuntimeError(f"{call.kind}: rank{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} of the group "
                           "passed invalid arguments (see the error there); nothing was transferred")
    if len({(row[0], row[1]) for row in rows}) > 1:
        calls = ", ".join(f"rank {pg.ranks[r]}: {KINDS[row[0] - 1]} (call #{row[1]} in this group)"
                          for r, row in enumerate(rows))
        raise RuntimeError(f"{call.kind}: the ranks of the group are not making the same collective call ({calls}); "
                           "every rank must call the same collectives in the same order")
    for idx, what in ((3, "op"), (4, "root"), (5, "number of tensors in the list")):
        if len({row[idx] for row in rows}) > 1:
            names = {v: k for k, v in OP_CODES.items()}
            fmt = (lambda v: str(names.get(v, v)).upper()) if idx == 3 else str
            if idx == 4:
                fmt = lambda v: f"rank {pg.ranks[v] if 0 <= v < len(pg.ranks) else v}"  # noqa: E731
            raise RuntimeError(f"{call.kind}: the ranks disagree on the {what} ({_rank_list(pg, rows, idx, fmt)}); "
                               "nothing was transferred")
    return rows


def same(pg, call: Call, rows, part: str, what: str) -> None:
    """Every rank must have passed the same signature in ``part`` ('a' or 'b')."""
    sl = _A if part == "a" else _B
    if len({tuple(row[sl]) for row in rows}) > 1:
        listing = ", ".join(f"rank {pg.ranks[r]}: {_meta.describe(row[sl])}" for r, row in enumerate(rows))
        raise RuntimeError(f"{call.kind}: the ranks passed different {what} ({listing}); every rank must pass the "
                           "same shape and dtype (nothing was transferred)")


def same_dtype(pg, call: Call, rows, part: str, what: str) -> None:
    sl = _A if part == "a" else _B
    if len({row[sl][0] for row in rows if row[sl][0]}) > 1:
        listing = ", ".join(f"rank {pg.ranks[r]}: {_meta.describe(row[sl])}" for r, row in enumerate(rows))
        raise RuntimeError(f"{call.kind}: the ranks passed {what} of different dtypes ({listing}); nothing was "
                           "transferred")


def per_rank(pg, call: Call, rows, part: str, holders, what: str) -> None:
    """Ranks in ``holders`` hold one tensor per rank (``c`` = hash of their signatures), which
    must match each rank's tensor ``part``."""
    sl = _A if part == "a" else _B
    sigs = [list(row[sl]) for row in rows]
    want = sigs_hash(sigs)
    wrong = [r for r in holders if rows[r][_C] != want]
    if wrong:
        listing = ", ".join(f"rank {pg.ranks[r]}: {_meta.describe(s)}" for r, s in enumerate(sigs))
        raise RuntimeError(
            f"{call.kind}: the {what} on rank{'s' if len(wrong) > 1 else ''} "
            f"{', '.join(str(pg.ranks[r]) for r in wrong)} "
            f"do not match the tensors the ranks contribute ({listing}); tensor i of the list must have rank i's "
            "shape and dtype (nothing was transferred)")


def agree_objects(pg, kind: str, obj) -> None:
    """Every rank must pass an equal ``obj`` (small, picklable): new_group's ranks."""
    seq = getattr(pg, "_ember_seq", 0) + 1
    pg._ember_seq = seq
    objs = pg.allgather_object((kind, seq, obj))
    if any(o != objs[0] for o in objs):
        listing = ", ".join(f"rank {pg.ranks[r]}: {o[0]} {o[2]!r}" for r, o in enumerate(objs))
        raise RuntimeError(f"{kind}: the ranks disagree ({listing}); every rank must make the same call")
