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
    assert pocl_cpu._patch(ctypes.addressof(blob), b"skx") == ""
    assert blob.raw == b"\x00" * 4097


def test_the_device_in_use_compiles(dev, cd):
    # whatever the host CPU, opening the device built a probe program
    k = cd.build("__kernel void ok(__global float* p) { p[get_global_id(0)] = 1.5f; }", "ok")
    assert k.function_name == "ok"
    if pocl_cpu.applied:
        assert set(pocl_cpu.applied.values()) <= {c for c, _ in pocl_cpu._CHOICES} | {
            os.environ.get("EMBER_OPENCL_POCL_CPU", "")}
