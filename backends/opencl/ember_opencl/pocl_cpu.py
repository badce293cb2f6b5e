"""A workaround for PoCL builds whose LLVM does not know the host CPU.

PoCL asks LLVM for the host CPU's name (``llvm::sys::getHostCPUName``) and passes it to clang as
``-target-cpu``. An LLVM older than the CPU (the PyPI wheels of PoCL 3.0 carry LLVM 14; an AMD
Zen 5 is newer) answers ``generic``, which clang refuses: every ``clBuildProgram`` then fails
with ``unknown target CPU 'generic'`` and the device is unusable. PoCL 3.0 has no setting for
it (later versions read ``POCL_LLVM_CPU_NAME``).

When a PoCL CPU device reports the CPU name ``generic``, this module replaces the device's
``llvm_cpu`` string (a field of PoCL's device struct, next to the target triple) by the name of
an older CPU that LLVM knows and whose instruction set the host has, chosen from the host's CPU
flags (``skx`` with AVX-512, ``haswell`` with AVX2 and FMA...). The struct is read and written
through ``/proc/self/mem``, so a wrong guess can't crash the process: nothing is written unless
the triple and the ``generic`` string are found where PoCL 3.0 keeps them.

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
        if not dev.version.rstrip().endswith("-generic"):  # "... HSTR: pthread-x86_64-unknown-linux-gnu-generic"
            return ""
    except Exception:
        return ""
    name = want or choose_cpu(host_flags())
    try:
        return _patch(dev.int_ptr, name.encode())
    except Exception:
        return ""


def _patch(base: int, name: bytes) -> str:
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
            cpu = rd(words[i + 1], 8)
            if cpu != b"generic\0":
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
