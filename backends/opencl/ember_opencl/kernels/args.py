"""The argument block of a generated kernel: sizes, offsets, strides and scalars passed by value
as the kernel's last argument, a struct ``M`` that the kernel reads as ``m.<field>``.

An :class:`Args` declares the fields by name, in order, with their types and lengths. It emits
the C ``typedef`` (:meth:`Args.struct`) and packs the host's values by name
(``args.pack(n=..., shape=...)``), so the kernel and its launcher cannot disagree on a position.
Every field occupies whole 8-byte slots (a ``float`` is followed by 4 bytes of padding), so the
layout is the same on every device and packs with one ``struct`` format; the compiled code reads a
named member exactly as it read the matching slot of a ``long v[]`` array.

Kernels are specialised by rank, not by shape: an array field's length is part of the layout
(and so of the kernel's cache key), its values are not. Build an :class:`Args` once per layout
(cache it alongside the kernel) and call its ``pack`` per launch.

The positional form, ``long v[n]`` read as ``m.v[j]`` (:func:`meta_struct`, :func:`pack_slots`,
:func:`scalar_slot`, :func:`read_slot`), remains for kernels written against it
(``ember_opencl.extend``).
"""
from __future__ import annotations

import keyword
import math
import struct

__all__ = ["Args", "meta_struct", "pack_slots", "scalar_slot", "read_slot"]

# words a field may not be called: C's and OpenCL C's keywords and qualifiers, its scalar type
# names (a vector type name such as float4 is refused by pattern)
_RESERVED = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long register
restrict return short signed sizeof static struct switch typedef union unsigned void volatile while bool half uchar
ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t kernel global local constant private read_only write_only
read_write image1d_t image2d_t image3d_t sampler_t event_t m M v""".split())


def _c_name_ok(name: str) -> bool:
    if not name.isidentifier() or not name.isascii() or keyword.iskeyword(name) or name.startswith("_"):
        return False
    if name in _RESERVED or name.endswith("_pad_") or name.startswith("__"):
        return False
    base = name.rstrip("0123456789")
    return not (base != name and base in _RESERVED)


# C type of a scalar field -> (C declaration of its 8-byte slot, struct format, host conversion)
_SCALARS = {
    "long": ("long {0};", "q", None),
    "ulong": ("ulong {0};", "Q", None),
    "double": ("double {0};", "d", None),
    "float": ("float {0}; uint {0}_pad_;", "f4x", None),
    # complex scalars: the real and imaginary parts as two members (a double2 member would want
    # 16-byte alignment, which the 8-byte slots do not give); the kernel reads CT.field(...)
    "float2": ("float {0}_re; float {0}_im;", "ff", None),
    "double2": ("double {0}_re; double {0}_im;", "dd", None),
}
_SLOTS = {"double2": 2}


def _to_parts(v) -> tuple:
    """A python number as the (real, imaginary) pair of a complex field."""
    v = complex(v)
    return v.real, v.imag


def _to_long(v) -> int:
    """A python integer as a signed 64-bit slot (values of 2**63 and up wrap, as a uint64 does)."""
    v = int(v)
    return v - (1 << 64) if v >= (1 << 63) else v


def _to_bool(v) -> int:
    return 1 if v else 0


class Args:
    """The named layout of one kernel's argument struct ``M``.

    ``Args().long("n", "off").array("shape", R).scalar("alpha", ct)`` declares, in order, two
    ``long`` fields, an array of ``R`` longs and a scalar of compute type ``ct`` (a
    :class:`~ember_opencl.kernels.types.CT`, or ``"float"``/``"double"``/``"long"``/``"ulong"``).
    A float field is a ``float`` member, a double a ``double``; an integer or bool scalar is a
    ``long`` (assign it to a variable of its type in C). A zero-length array is left out of the
    struct (the host still passes an empty sequence for it).
    """

    __slots__ = ("fields", "slots", "nbytes", "_pack")

    def __init__(self):
        #: ``(name, kind, dims, host conversion)``: kind a key of the scalar table, dims () for a scalar
        self.fields: list = []
        #: the size in 8-byte slots, and in bytes
        self.slots = self.nbytes = 0
        self._pack = None

    # -- declaring ---------------------------------------------------------------------------
    def _add(self, name: str, kind: str, dims: tuple, conv=None) -> "Args":
        if not _c_name_ok(name):
            raise ValueError(f"kernel argument field {name!r}: not a plain C identifier (or a reserved word)")
        if any(f[0] == name for f in self.fields):
            raise ValueError(f"kernel argument field {name!r} is declared twice")
        if self._pack is not None:
            raise RuntimeError("Args: fields are declared before the first pack")
        self.fields.append((name, kind, dims, conv))
        self.slots += math.prod(dims) * _SLOTS.get(kind, 1)
        self.nbytes = 8 * self.slots
        return self

    def long(self, *names: str) -> "Args":
        """One ``long`` field per name (sizes, offsets, strides, counts)."""
        for n in names:
            self._add(n, "long", ())
        return self

    def ulong(self, *names: str) -> "Args":
        """One ``ulong`` field per name (values up to 2**64 - 1: seeds, counters)."""
        for n in names:
            self._add(n, "ulong", ())
        return self

    def array(self, name: str, length: int, rows: int | None = None) -> "Args":
        """An array of ``length`` longs (``m.name[d]``), or with ``rows`` a ``rows x length``
        array (``m.name[j][d]``), packed from one flat row-major sequence."""
        dims = (int(length),) if rows is None else (int(rows), int(length))
        return self._add(name, "long", dims)

    def scalar(self, name: str, t) -> "Args":
        """A python number converted to compute type ``t`` (a CT or a C type name)."""
        ct = t if isinstance(t, str) else t.ct
        if ct in _SCALARS:
            conv = None
            if ct in ("float2", "double2"):
                conv = _to_parts
            elif not isinstance(t, str) and t.is_bool:
                conv = _to_bool
            elif ct in ("long", "ulong") and not isinstance(t, str):
                conv = _to_long
            return self._add(name, ct, (), conv)
        return self._add(name, "long", (), _to_bool if t.is_bool else _to_long)  # char, short, int, uchar

    # -- using -------------------------------------------------------------------------------
    def struct(self, name: str = "M") -> str:
        """The C declaration ``typedef struct { ... } M;``."""
        members = []
        for fname, kind, dims, _ in self.fields:
            if dims:
                if 0 in dims:
                    continue
                members.append(f"{kind} {fname}{''.join(f'[{d}]' for d in dims)};")
            else:
                members.append(_SCALARS[kind][0].format(fname))
        if not members:  # OpenCL C has no empty structs
            members.append("long unused_;")
        return f"typedef struct {{ {' '.join(members)} }} {name};\n"

    @property
    def pack(self):
        """``pack(**fields) -> bytes``: the struct's bytes from every field's value, by name
        (arrays as sequences; a 2-D array as one flat row-major sequence)."""
        p = self._pack
        if p is None:
            p = self._pack = self._compile()
        return p

    def _compile(self):
        fmt, params, parts, env = ["<"], [], [], {}
        for fname, kind, dims, conv in self.fields:
            params.append(fname)
            if dims:
                fmt.append(f"{math.prod(dims)}q")
                parts.append(f"*{fname}")
            else:
                fmt.append(_SCALARS[kind][1])
                if conv is not None:
                    env[f"c_{fname}"] = conv
                    parts.append(f"{'*' if conv is _to_parts else ''}c_{fname}({fname})")
                else:
                    parts.append(fname)
        if not self.fields:
            fmt.append("q")
            parts.append("0")
        env["pack_"] = struct.Struct("".join(fmt)).pack
        src = (f"def pack({'*, ' if params else ''}{', '.join(params)}):\n"
               f"    return pack_({', '.join(parts)})\n")
        exec(src, env)  # the fields' names are checked identifiers
        return env["pack"]

    def __repr__(self):
        return "Args(" + ", ".join(f + "".join(f"[{d}]" for d in dims) for f, _, dims, _ in self.fields) + ")"


# -- the positional form -----------------------------------------------------------------------------

def meta_struct(nvalues: int) -> str:
    """The C declaration of a positional argument struct ``M`` of ``nvalues`` longs (``m.v[j]``)."""
    return f"typedef struct {{ long v[{nvalues}]; }} M;\n"


def pack_slots(values) -> bytes:
    """The bytes of a positional ``M`` holding ``values`` (ints, one slot each)."""
    return struct.pack(f"<{len(values)}q", *values)


def scalar_slot(value, t) -> int:
    """A python scalar as one positional slot, read back in the kernel by :func:`read_slot`."""
    if t.is_float:
        if t.ct == "double":
            return struct.unpack("<q", struct.pack("<d", float(value)))[0]
        return struct.unpack("<i", struct.pack("<f", float(value)))[0]
    if t.is_bool:
        return 1 if value else 0
    return _to_long(value)


def read_slot(j: int, t) -> str:
    """The kernel expression reading positional slot ``j`` as ``t``'s compute type."""
    if t.is_float:
        return f"as_double(m.v[{j}])" if t.ct == "double" else f"as_float((int)m.v[{j}])"
    return f"(({t.ct})m.v[{j}])"
