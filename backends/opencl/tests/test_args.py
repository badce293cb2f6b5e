"""The named argument struct of generated kernels (ember_opencl.kernels.args.Args): the C it
declares, the bytes it packs, the names it refuses, and a kernel reading every kind of field back
on the device (the host's layout and the compiler's agree)."""
import struct

import numpy as np
import pytest

import ember
from ember_opencl.kernels.args import Args, pack_slots
from ember_opencl.kernels.types import TYPES


def test_declares_named_members_in_order_and_packs_by_name():
    a = Args().long("n", "off").array("shape", 2).array("st", 2, rows=3).scalar("alpha", "float").ulong("seed")
    assert a.struct() == ("typedef struct { long n; long off; long shape[2]; long st[3][2]; float alpha; "
                          "uint alpha_pad_; ulong seed; } M;\n")
    assert a.slots == 12 and a.nbytes == 96
    got = a.pack(seed=2 ** 64 - 1, alpha=0.5, st=range(6), shape=(7, 8), off=-3, n=5)
    assert got == (struct.pack("<10q", 5, -3, 7, 8, 0, 1, 2, 3, 4, 5) + struct.pack("<f4x", 0.5)
                   + struct.pack("<Q", 2 ** 64 - 1))


def test_the_positional_form_packs_the_same_longs():
    a = Args().long("n").array("shape", 3)
    assert a.pack(n=4, shape=(1, 2, 3)) == pack_slots([4, 1, 2, 3])


def test_scalars_of_each_compute_type_convert_as_the_kernels_read_them():
    a = (Args().scalar("f", TYPES["float16"]).scalar("d", TYPES["float64"]).scalar("i", TYPES["int8"])
         .scalar("big", TYPES["int64"]).scalar("b", TYPES["bool"]))
    assert "float f;" in a.struct() and "double d;" in a.struct() and "long i;" in a.struct()
    raw = a.pack(f=1 / 3, d=1 / 3, i=-5, big=2 ** 63, b=0.5)
    f, d, i, big, b = struct.unpack("<f4xdqqq", raw)
    assert f == np.float32(1 / 3) and d == 1 / 3 and i == -5 and big == -2 ** 63 and b == 1


def test_zero_length_arrays_are_left_out_of_the_struct():
    a = Args().long("n").array("bshape", 0).array("bst", 0)
    assert a.struct() == "typedef struct { long n; } M;\n"
    assert a.pack(n=1, bshape=(), bst=()) == pack_slots([1])


@pytest.mark.parametrize("name", ["kernel", "global", "float4", "int", "m", "v", "_x", "for", "a b", "x_pad_"])
def test_names_that_are_not_plain_c_identifiers_are_refused(name):
    with pytest.raises(ValueError, match="not a plain C identifier"):
        Args().long(name)


def test_a_field_is_declared_once_and_before_packing():
    a = Args().long("n")
    with pytest.raises(ValueError, match="declared twice"):
        a.long("n")
    a.pack(n=1)
    with pytest.raises(RuntimeError, match="before the first pack"):
        a.long("k")
    with pytest.raises(TypeError):
        a.pack(1)  # by name only


def test_a_kernel_reads_every_kind_of_field_back(cd):
    from ember_opencl import extend as cl
    if not cd.fp64:
        pytest.skip("the OpenCL device has no float64")
    a = (Args().long("n").scalar("f", "float").array("shape", 3).scalar("d", "double").ulong("u")
         .array("st", 2, rows=2).scalar("i", TYPES["int16"]))
    src = (cl.preamble(TYPES["float64"]) + a.struct() +
           "__kernel void rd(__global double* o, const M m) {\n"
           "  o[0] = m.n; o[1] = m.f; o[2] = m.shape[0]; o[3] = m.shape[2]; o[4] = m.d;\n"
           "  o[5] = (double)(m.u >> 40); o[6] = m.st[1][0]; o[7] = (short)m.i;\n}\n")
    k = cd.kernel(("test_args", "rd"), lambda: (src, "rd"))
    out = cl.empty((8,), ember.float64, "opencl:0")
    cl.launch(cd, k, (1,), (1,), [out],
              a.pack(n=-7, f=2.5, shape=(10, 11, 12), d=1e300, u=2 ** 63 + 2 ** 41, st=(1, 2, 3, 4), i=-2))
    assert out.tolist() == [-7.0, 2.5, 10.0, 12.0, 1e300, float(2 ** 23 + 2), 3.0, -2.0]
