"""The PoCL target-CPU workaround: which CPU name is chosen, and when nothing is touched."""
import os

from ember_opencl import pocl_cpu


def test_choice_follows_the_host_flags():
    assert pocl_cpu.choose_cpu({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx2", "fma"}) == "skx"
    assert pocl_cpu.choose_cpu({"avx2", "fma", "bmi2", "movbe", "avx"}) == "haswell"
    assert pocl_cpu.choose_cpu({"avx", "sse4_2", "popcnt"}) == "sandybridge"
    assert pocl_cpu.choose_cpu(set()) == "x86-64"


class _Plat:
    def __init__(self, name):
        self.name = name


class _Dev:
    type = 2  # CL_DEVICE_TYPE_CPU
    version = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-generic"
    int_ptr = 0


def test_other_platforms_are_left_alone():
    assert pocl_cpu.fix_target_cpu(_Plat("NVIDIA CUDA"), _Dev()) == ""


def test_it_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("EMBER_OPENCL_POCL_CPU", "off")
    assert pocl_cpu.fix_target_cpu(_Plat("Portable Computing Language"), _Dev()) == ""


def test_a_struct_without_the_generic_name_is_not_written(monkeypatch):
    import ctypes
    blob = ctypes.create_string_buffer(b"\x00" * 4096)
    assert pocl_cpu._patch(ctypes.addressof(blob), b"skx", b"generic") == ""
    assert blob.raw == b"\x00" * 4097


def test_the_reported_cpu_name_and_when_it_is_replaced():
    class D:
        version = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3"
    assert pocl_cpu.reported_cpu(D()) == "znver3"
    D.version = "OpenCL 3.0 CUDA"
    assert pocl_cpu.reported_cpu(D()) == ""
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx2", "fma"}
    assert pocl_cpu.needs_fix("generic", {"avx2"})
    # LLVM 14 calls an AMD Zen 4 "znver3" (no AVX-512) while PoCL reports 16 float lanes: replaced
    assert pocl_cpu.needs_fix("znver3", avx512)
    assert not pocl_cpu.needs_fix("znver3", {"avx2", "fma"})      # a real Zen 3 keeps its name
    assert not pocl_cpu.needs_fix("skx", avx512)
    assert not pocl_cpu.needs_fix("icelake-server", avx512)


def test_the_name_pocl_stored_is_replaced_in_a_struct_laid_out_like_pocl_3(monkeypatch):
    import ctypes
    import struct
    triple = ctypes.create_string_buffer(b"x86_64-unknown-linux-gnu")
    cpu = ctypes.create_string_buffer(b"znver3")
    blob = ctypes.create_string_buffer(struct.pack("<QQQ", 0, ctypes.addressof(triple), ctypes.addressof(cpu))
                                       + b"\x00" * 4072)
    base = ctypes.addressof(blob)
    monkeypatch.setattr(pocl_cpu, "applied", {})
    assert pocl_cpu._patch(base, b"skx", b"generic") == ""      # the name there is not the one reported
    assert pocl_cpu._patch(base, b"skx", b"znver3") == "skx"
    new_ptr = struct.unpack("<Q", blob.raw[16:24])[0]
    assert new_ptr != ctypes.addressof(cpu) and ctypes.string_at(new_ptr) == b"skx"
    assert struct.unpack("<Q", blob.raw[8:16])[0] == ctypes.addressof(triple)   # the triple is untouched
    assert pocl_cpu.applied == {base: "skx"}


def test_the_device_in_use_compiles(dev, cd):
    # whatever the host CPU, opening the device built a probe program
    k = cd.build("__kernel void ok(__global float* p) { p[get_global_id(0)] = 1.5f; }", "ok")
    assert k.function_name == "ok"
    # 512-bit vector math (what the elementwise, reduction and matmul kernels use on AVX-512
    # hosts) builds all the way to a binary: it crashed LLVM 14 under PoCL's "znver3" on a Zen 4
    k = cd.build("__kernel void v(__global float* p) { float16 a = vload16(0, p), b = vload16(1, p);"
                 " vstore16(fma(a, b, max(a, tanh(b))), 0, p); }", "v")
    assert k.function_name == "v"
    if pocl_cpu.applied:
        assert set(pocl_cpu.applied.values()) <= {c for c, _ in pocl_cpu._CHOICES} | {
            os.environ.get("EMBER_OPENCL_POCL_CPU", "")}
