"""A workaround for PoCL builds whose LLVM does not know the host CPU.

PoCL asks LLVM for the host CPU's name (``llvm::sys::getHostCPUName``) and passes it to clang as
``-target-cpu``. An LLVM older than the CPU (the PyPI wheels of PoCL 3.0 carry LLVM 14; an AMD
Zen 5 is newer) answers ``generic``, which clang refuses: every ``clBuildProgram`` then fails
with ``unknown target CPU 'generic'`` and the device is unusable. PoCL 3.0 has no setting for
it (later versions read ``POCL_LLVM_CPU_NAME``).

The same LLVM names some CPUs it half knows after an older one without AVX-512 (an AMD Zen 4 is
``znver3``) while PoCL still reads the host's features and reports 16 float lanes: clang then
gets an AVX-512 feature set with a CPU model that lacks it, and LLVM 14 fails on 512-bit vector
code (``Cannot emit physreg copy instruction``, ``Cannot select: fma``, or a segmentation fault
when the binary is generated). On a host with AVX-512 a device whose CPU name has none is
treated like ``generic``.

When a PoCL CPU device needs it, this module replaces the device's
``llvm_cpu`` string (a field of PoCL's device struct, next to the target triple) by the name of
an older CPU that LLVM knows and whose instruction set the host has, chosen from the host's CPU
flags (``skx`` with AVX-512, ``haswell`` with AVX2 and FMA...). The struct is read and written
through ``/proc/self/mem``, so a wrong guess can't crash the process: nothing is written unless
the triple and the name the device reports are found where PoCL 3.0 keeps them.

``EMBER_OPENCL_POCL_CPU=<llvm cpu name>`` picks the name; ``EMBER_OPENCL_POCL_CPU=off`` turns
the workaround off. Only Linux x86-64 is concerned.
"""
from __future__ import annotations

import ctypes
import os
import platform as _platform
import struct

applied: dict = {}  # device handle -> the cpu name written

# (llvm cpu name, the /proc/cpuinfo flags it needs), best first; names LLVM >= 9 knows
_CHOICES = (
    ("skx", {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd", "avx2", "fma"}),
    ("haswell", {"avx2", "fma", "bmi2", "movbe"}),
    ("sandybridge", {"avx", "sse4_2", "popcnt"}),
    ("nehalem", {"sse4_2", "popcnt"}),
    ("x86-64", set()),
)


def host_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# LLVM cpu names without AVX-512 (what LLVM 14 may answer for a newer CPU that has it)
_NO_AVX512 = frozenset({
    "generic", "x86-64", "x86-64-v2", "x86-64-v3", "nehalem", "westmere", "sandybridge", "ivybridge", "haswell",
    "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "gracemont", "tremont", "goldmont",
    "goldmont-plus", "btver2", "bdver4", "znver1", "znver2", "znver3"})


def reported_cpu(dev) -> str:
    """The CPU name at the end of a PoCL CPU device's version string
    (``... HSTR: pthread-x86_64-unknown-linux-gnu-znver3`` -> ``'znver3'``), or ''."""
    v = dev.version.rstrip()
    if "HSTR:" not in v:
        return ""
    hstr = v.rsplit("HSTR:", 1)[1].strip()
    if "-unknown-linux-gnu-" not in hstr:
        return ""
    return hstr.rsplit("-unknown-linux-gnu-", 1)[1]


def needs_fix(cpu: str, flags: set) -> bool:
    """Whether a device reporting LLVM cpu ``cpu`` on a host with ``flags`` needs another name."""
    return cpu == "generic" or ("avx512f" in flags and cpu in _NO_AVX512)


def choose_cpu(flags: set) -> str:
    for name, need in _CHOICES:
        if need <= flags:
            return name
    return "x86-64"


def _reader(fd):
    def rd(addr: int, n: int):
        if not 4096 <= addr < (1 << 63):
            return None
        try:
            return os.pread(fd, n, addr)
        except OSError:
            return None
    return rd


def fix_target_cpu(plat, dev) -> str:
    """Apply the workaround to one device when it needs it; returns the cpu name written, or ''."""
    want = os.environ.get("EMBER_OPENCL_POCL_CPU", "").strip()
    if want.lower() in ("off", "0", "no", "false"):
        return ""
    try:
        if "Portable Computing Language" not in plat.name and "pocl" not in plat.name.lower():
            return ""
        import pyopencl as cl
        if not dev.type & cl.device_type.CPU:
            return ""
        if _platform.system() != "Linux" or _platform.machine() not in ("x86_64", "AMD64"):
            return ""
        cpu = reported_cpu(dev)  # "... HSTR: pthread-x86_64-unknown-linux-gnu-generic"
        flags = host_flags()
        if not cpu or not (want or needs_fix(cpu, flags)):
            return ""
    except Exception:
        return ""
    name = want or choose_cpu(flags)
    if name == cpu:
        return ""
    try:
        return _patch(dev.int_ptr, name.encode(), cpu.encode())
    except Exception:
        return ""


def _patch(base: int, name: bytes, current: bytes) -> str:
    """Point the cpu-name field next to the triple from ``current`` to a new ``name``."""
    fd = os.open("/proc/self/mem", os.O_RDWR)
    try:
        rd = _reader(fd)
        blob = rd(base, 4096)
        if not blob:
            return ""
        words = struct.unpack(f"<{len(blob) // 8}Q", blob[: len(blob) // 8 * 8])
        for i in range(len(words) - 1):
            s = rd(words[i], 32)
            if not s or not s.startswith(b"x86_64-"):
                continue
            cpu = rd(words[i + 1], len(current) + 1)
            if cpu != current + b"\0":
                continue
            libc = ctypes.CDLL(None)
            libc.malloc.restype = ctypes.c_void_p
            libc.malloc.argtypes = [ctypes.c_size_t]
            p = libc.malloc(len(name) + 1)  # PoCL frees the string with free() on shutdown
            if not p:
                return ""
            ctypes.memmove(p, name + b"\0", len(name) + 1)
            os.pwrite(fd, struct.pack("<Q", p), base + (i + 1) * 8)
            applied[base] = name.decode()
            return name.decode()
        return ""
    finally:
        os.close(fd)
