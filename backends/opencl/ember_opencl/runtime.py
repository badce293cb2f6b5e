"""The OpenCL runtime: device discovery, one ``check`` for every driver call, and a small device
class with the allocator verbs (alloc/free/copyin/copyout/copy), a pooled allocator, one
in-order queue, the program cache and kernel launches.

``opencl:N`` is the N-th device over all platforms, in the order the ICD loader reports them.
pyopencl is imported here, on first use of an opencl device, never by ``import ember``.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time

import numpy as np

try:
    import pyopencl as cl
    from pyopencl import _cl
    _IMPORT_ERROR = None
except Exception as e:  # pragma: no cover - exercised in environments without pyopencl
    cl = _cl = None
    _IMPORT_ERROR = f"{type(e).__name__}: {e}"

from . import pocl_cpu
from .compile_notice import CompileNotice

__all__ = ["OpenCLError", "check", "CLDevice", "Buf", "devices", "availability"]


class OpenCLError(RuntimeError):
    """A failed OpenCL call: ``code`` is the status number, ``name`` its CL_* name."""

    def __init__(self, what: str, code: int, name: str, detail: str = ""):
        self.code, self.name, self.what = code, name, what
        super().__init__(f"OpenCL error {name} ({code}) in {what}" + (f": {detail}" if detail else ""))


_NAMES: dict = {}


def error_name(code: int) -> str:
    """``-5`` -> ``'CL_OUT_OF_RESOURCES'``."""
    if not _NAMES and cl is not None:
        for k in dir(cl.status_code):
            v = getattr(cl.status_code, k)
            if isinstance(v, int) and not k.startswith("_"):
                _NAMES.setdefault(v, "CL_" + k)
    return _NAMES.get(code, "CL_UNKNOWN_ERROR")


def to_error(e: Exception, what: str) -> RuntimeError:
    """The RuntimeError for a pyopencl exception (``cl.Error`` carries the status code)."""
    code = None
    try:
        code = e.code
    except Exception:
        pass
    if code is None and e.args and hasattr(e.args[0], "code"):
        code = e.args[0].code
    if code is None:
        return OpenCLError(what, -9999, "CL_UNKNOWN_ERROR", str(e))
    detail = ""
    try:
        detail = e.what or ""
    except Exception:
        detail = str(e)
    return OpenCLError(what, int(code), error_name(int(code)), str(detail).strip())


def check(fn, *args, what: str = "", **kwargs):
    """Call one driver function; any driver error becomes an :class:`OpenCLError` (a
    RuntimeError) naming the OpenCL status, e.g. ``CL_MEM_OBJECT_ALLOCATION_FAILURE``."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        if cl is not None and isinstance(e, cl.Error):
            raise to_error(e, what or getattr(fn, "__name__", "OpenCL call")) from None
        raise


# -- discovery -------------------------------------------------------------------------------------

_lock = threading.RLock()
_found: list | None = None  # [(platform, device)]
_reason = ""


def _discover() -> None:
    global _found, _reason
    if _found is not None:
        return
    with _lock:
        if _found is not None:
            return
        found, reason = [], ""
        if cl is None:
            reason = (f"pyopencl is not importable ({_IMPORT_ERROR}); install it with "
                      "pip install ember-opencl[pocl]")
        else:
            try:
                plats = cl.get_platforms()
            except Exception as e:
                plats = []
                reason = ("no OpenCL platform found (" + str(e).strip().splitlines()[0] + "); install a GPU driver's "
                          "OpenCL ICD, or a CPU platform with pip install pocl-binary-distribution")
            for p in plats:
                try:
                    devs = p.get_devices()
                except Exception:
                    devs = []
                for d in devs:
                    found.append((p, d))
            if plats and not found:
                reason = f"OpenCL platform(s) {', '.join(p.name for p in plats)} report no devices"
        if found:
            for p, d in found:
                pocl_cpu.fix_target_cpu(p, d)
        _found, _reason = found, reason


def devices() -> list:
    """Every OpenCL device, over all platforms: ``[(platform, device)]``."""
    _discover()
    return _found


def availability() -> tuple:
    """``(True, '')`` or ``(False, reason)``; never raises."""
    try:
        _discover()
    except Exception as e:  # pragma: no cover - a broken driver must not break ember plugins
        return False, f"OpenCL discovery failed: {e}"
    if not _found:
        return False, _reason
    return True, ""


# -- buffers and the pooled allocator --------------------------------------------------------------

class Buf:
    """One device buffer of ``nbytes`` (the ``_data`` of an opencl storage). When it is garbage
    collected its ``cl.Buffer`` goes back to its device's pool: commands already queued that use
    it run before any later user of the recycled buffer, because each device has one in-order
    queue."""

    __slots__ = ("cl", "nbytes", "size", "dev", "__weakref__")

    def __init__(self, clbuf, nbytes: int, size: int, dev: "CLDevice"):
        self.cl = clbuf
        self.nbytes = nbytes
        self.size = size
        self.dev = dev

    def __del__(self):
        try:
            self.dev.free(self.cl, self.size)
        except Exception:  # interpreter shutdown
            pass


def _bucket(n: int) -> int:
    """Round an allocation up so that buffers are reused across nearby sizes (at most 1/8 waste)."""
    if n <= 256:
        return 256
    g = 1 << max(8, n.bit_length() - 4)
    return (n + g - 1) // g * g


class Pool:
    """Free device buffers by rounded size, up to ``limit`` bytes kept."""

    def __init__(self, limit: int):
        self.free: dict = {}
        self.cached = 0
        self.limit = limit
        self.in_use = 0
        self.peak = 0

    def take(self, size: int):
        lst = self.free.get(size)
        if lst:
            self.cached -= size
            return lst.pop()
        return None

    def give(self, size: int, buf) -> bool:
        if self.cached + size > self.limit:
            return False
        self.free.setdefault(size, []).append(buf)
        self.cached += size
        return True

    def clear(self) -> None:
        for lst in self.free.values():
            for b in lst:
                try:
                    b.release()
                except Exception:
                    pass
        self.free.clear()
        self.cached = 0


# -- the device ------------------------------------------------------------------------------------

BUILD_OPTIONS = "-cl-mad-enable"


#: how programs were obtained in this process (for tests and for ``ember_opencl.runtime.stats``)
stats = {"source_builds": 0, "binary_loads": 0, "kernels": 0}


#: says so on stderr when compiling kernels takes a while (``EMBER_OPENCL_QUIET=1`` silences it)
notice = CompileNotice()


def cache_dir() -> str | None:
    """Where compiled programs are kept: ``EMBER_OPENCL_CACHE`` (``0``, ``off`` or empty
    disables the cache), else ``$XDG_CACHE_HOME/ember/opencl``, else ``~/.cache/ember/opencl``.
    Read on each call, so a change of the environment takes effect at once."""
    d = os.environ.get("EMBER_OPENCL_CACHE")
    if d is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "ember", "opencl")
    return None if d in ("", "0", "off") else d


class CLDevice:
    """One OpenCL device: a context and an in-order queue, the allocator verbs, programs.

    ``alloc``/``free`` go through a pool; ``copyin``/``copyout`` move bytes between host numpy
    arrays and buffers; ``copy`` is a device-side byte copy. Kernels are compiled once per
    source (kept in memory, and on disk as program binaries under :func:`cache_dir`).
    """

    def __init__(self, index: int, platform, device):
        self.index = index
        self.platform = platform
        self.device = device
        self.name = device.name.strip()
        self.ctx = check(cl.Context, [device], what="clCreateContext")
        self.queue = check(cl.CommandQueue, self.ctx, device, what="clCreateCommandQueue")
        ext = device.extensions.split()
        self.extensions = set(ext)
        self.fp64 = "cl_khr_fp64" in self.extensions or bool(getattr(device, "double_fp_config", 0))
        self.fp16 = "cl_khr_fp16" in self.extensions
        self.int64_atomics = "cl_khr_int64_base_atomics" in self.extensions
        self.is_cpu = bool(device.type & cl.device_type.CPU)
        self.max_wg = int(device.max_work_group_size)
        self.compute_units = int(device.max_compute_units)
        self.local_mem = int(device.local_mem_size)
        self.max_alloc = int(device.max_mem_alloc_size)
        self.global_mem = int(device.global_mem_size)
        self.pool = Pool(int(os.environ.get("EMBER_OPENCL_POOL_BYTES", min(self.global_mem // 4, 2 << 30))))
        self.mf = cl.mem_flags
        self._kernels: dict = {}
        self._klock = threading.Lock()
        self._llock = threading.Lock()
        self.max_param = int(device.max_parameter_size)
        self.options = BUILD_OPTIONS + (" -DEMBER_CPU" if self.is_cpu else "")
        self._ident = "|".join([platform.name, platform.version, self.name, device.version, device.driver_version,
                                self.options, _cpu_tag(platform, device)])
        self._err = None  # the error-flag buffer of bounds-checking kernels
        self._enqueue = _cl.enqueue_nd_range_kernel
        self._probe()

    def __repr__(self):
        return f"<CLDevice opencl:{self.index} {self.name!r} on {self.platform.name!r}>"

    def _probe(self) -> None:
        """Build one tiny program now, so that a broken compiler is reported when the device is
        opened, with the driver's log, not in the middle of the first op."""
        self.build("__kernel void ember_probe(__global int* p) { p[get_global_id(0)] = 1; }", "ember_probe")

    # -- allocator verbs ---------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Buf:
        """A device buffer of at least ``nbytes`` (from the pool when one fits)."""
        size = _bucket(nbytes)
        b = self.pool.take(size)
        if b is None:
            if size > self.max_alloc:
                raise RuntimeError(
                    f"opencl:{self.index}: can't allocate {nbytes} bytes: the device's largest allocation is "
                    f"{self.max_alloc} bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
            b = self._new_buffer(size)
        self.pool.in_use += size
        if self.pool.in_use > self.pool.peak:
            self.pool.peak = self.pool.in_use
        return Buf(b, nbytes, size, self)

    def _new_buffer(self, size: int, hostbuf=None):
        flags = self.mf.READ_WRITE if hostbuf is None else self.mf.READ_WRITE | self.mf.COPY_HOST_PTR
        try:
            b = cl.Buffer(self.ctx, flags, size, hostbuf) if hostbuf is not None else cl.Buffer(self.ctx, flags, size)
        except cl.Error as e:
            if self.pool.cached:  # give the cached buffers back to the driver and try once more
                self.pool.clear()
                return self._new_buffer(size, hostbuf)
            raise to_error(e, f"clCreateBuffer({size} bytes) on opencl:{self.index}") from None
        return b

    def free(self, clbuf, size: int) -> None:
        self.pool.in_use -= size
        if size != _bucket(size) or not self.pool.give(size, clbuf):
            clbuf.release()

    def from_host(self, host: np.ndarray) -> Buf:
        """A new buffer holding a copy of the C-contiguous array ``host``; the copy is made when
        the buffer is created (no queue round trip)."""
        nbytes = host.nbytes
        if nbytes == 0:
            return self.alloc(0)
        size = nbytes  # exact: no host-side padding copy; a size off the pool's grid is not pooled
        b = self._new_buffer(size, host)
        self.pool.in_use += size
        if self.pool.in_use > self.pool.peak:
            self.pool.peak = self.pool.in_use
        return Buf(b, nbytes, size, self)

    def copyin(self, buf: Buf, host: np.ndarray, offset: int = 0) -> None:
        """Host -> device: ``host`` (C-contiguous) into ``buf`` at byte ``offset`` (blocking)."""
        if host.nbytes:
            check(cl.enqueue_copy, self.queue, buf.cl, host, dst_offset=offset, is_blocking=True,
                  what=f"clEnqueueWriteBuffer on opencl:{self.index}")

    def copyout(self, host: np.ndarray, buf: Buf, offset: int = 0) -> None:
        """Device -> host: ``host.nbytes`` bytes of ``buf`` from byte ``offset`` (blocking)."""
        if host.nbytes:
            check(cl.enqueue_copy, self.queue, host, buf.cl, src_offset=offset, is_blocking=True,
                  what=f"clEnqueueReadBuffer on opencl:{self.index}")

    def copy(self, dst: Buf, src: Buf, nbytes: int, dst_offset: int = 0, src_offset: int = 0) -> None:
        """Device-side byte copy between two buffers of this device (queued)."""
        if nbytes:
            check(cl.enqueue_copy, self.queue, dst.cl, src.cl, byte_count=nbytes, src_offset=src_offset,
                  dst_offset=dst_offset, what=f"clEnqueueCopyBuffer on opencl:{self.index}")

    def synchronize(self) -> None:
        check(self.queue.finish, what=f"clFinish on opencl:{self.index}")

    # -- error flag for bounds-checking kernels ------------------------------------------------
    def error_buffer(self):
        """A 16-byte buffer kernels set to (1, bad value) when they meet an invalid index."""
        if self._err is None:
            self._err = self._new_buffer(16, np.zeros(2, np.int64))
        return self._err

    def read_error(self):
        """``None``, or the bad value a kernel reported (and the flag is cleared)."""
        if self._err is None:  # no kernel has been given the flag (an empty launch runs none)
            return None
        h = np.empty(2, np.int64)
        check(cl.enqueue_copy, self.queue, h, self._err, is_blocking=True, what="clEnqueueReadBuffer(error flag)")
        if h[0] == 0:
            return None
        check(cl.enqueue_copy, self.queue, self._err, np.zeros(2, np.int64), is_blocking=True,
              what="clEnqueueWriteBuffer(error flag)")
        return int(h[1])

    # -- programs ------------------------------------------------------------------------------
    def kernel(self, key, make):
        """The compiled kernel for ``key``; ``make()`` returns ``(source, kernel_name)`` the
        first time. Compiled once per device and process; binaries are kept on disk."""
        k = self._kernels.get(key)
        if k is None:
            with self._klock:
                k = self._kernels.get(key)
                if k is None:
                    src, name = make()
                    k = self.build(src, name)
                    self._kernels[key] = k
                    stats["kernels"] += 1
        return k

    def build(self, src: str, name: str):
        prg = self._program(src)
        return check(cl.Kernel, prg, name, what=f"clCreateKernel({name})")

    def _program(self, src: str):
        d = cache_dir()
        path = None
        if d is not None:
            h = hashlib.sha256((self._ident + "\n" + src).encode()).hexdigest()[:40]
            path = os.path.join(d, h + ".bin")
            try:
                with open(path, "rb") as f:
                    binary = f.read()
                prg = _cl._Program(self.ctx, [self.device], [binary])
                prg.build(self.options.encode(), [self.device])
                stats["binary_loads"] += 1
                return prg
            except (OSError, cl.Error):
                pass  # not cached yet, or written by another driver version: rebuild from source
        prg = _cl._Program(self.ctx, src)
        stats["source_builds"] += 1
        start = time.monotonic()
        try:
            prg.build(self.options.encode(), [self.device])
        except cl.Error as e:
            log = ""
            try:
                log = prg.get_build_info(self.device, cl.program_build_info.LOG)
            except Exception:
                pass
            err = to_error(e, f"clBuildProgram on opencl:{self.index} ({self.name})")
            raise OpenCLError(err.what, err.code, err.name,
                              f"the driver's build log:\n{log.strip()}\n--- source ---\n{src}") from None
        notice.built(time.monotonic() - start, f"opencl:{self.index} ({self.name})", d)
        if path is not None:
            _save_binary(path, prg, self.device)
        return prg

    def launch(self, k, gsize: tuple, lsize, bufs: tuple, meta: bytes | None = None) -> None:
        """Queue kernel ``k`` over ``gsize`` with buffer arguments ``bufs`` (cl.Buffer objects)
        and, as the last argument, the packed by-value argument struct ``meta`` (bytes, see
        :mod:`ember_opencl.kernels.args`)."""
        # arguments live on the kernel object: setting them and queueing must not interleave
        # with another thread launching the same kernel
        with self._llock:
            if meta is None:
                _set_args(k, bufs)
            else:
                _set_args(k, bufs, meta)
            try:
                self._enqueue(self.queue, k, gsize, lsize, None, None, False, False)
            except cl.Error as e:
                raise to_error(e, f"clEnqueueNDRangeKernel({k.function_name}, global={gsize}, local={lsize}) "
                                  f"on opencl:{self.index}") from None

    def memory_stats(self) -> dict:
        p = self.pool
        return {"allocated_bytes.all.current": p.in_use, "allocated_bytes.all.peak": p.peak,
                "reserved_bytes.all.current": p.in_use + p.cached, "cached_bytes": p.cached}


def _save_binary(path: str, prg, device) -> None:
    try:
        binary = prg.get_info(cl.program_info.BINARIES)[0]
        if not binary:
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(binary)
        os.replace(tmp, path)  # atomic: concurrent processes never read half a file
    except Exception:
        pass  # the cache is an optimisation; a read-only home must not break ember


def _cpu_tag(platform, device) -> str:
    return pocl_cpu.applied.get(device.int_ptr, "")


# pyopencl's fast argument setters (what its own generated invokers use); set_arg otherwise
def _set_args_fast(k, bufs, meta=None):
    n = len(bufs)
    if n:
        multi = []
        for i, b in enumerate(bufs):
            multi.append(i)
            multi.append(b)
        k._set_arg_multi(tuple(multi))
    if meta is not None:
        k._set_arg_buf_multi((n, meta))


def _set_args_slow(k, bufs, meta=None):
    for i, b in enumerate(bufs):
        k.set_arg(i, b)
    if meta is not None:
        k.set_arg(len(bufs), np.frombuffer(meta, np.uint8))


_set_args = _set_args_fast if (cl is not None and hasattr(_cl.Kernel, "_set_arg_multi")
                               and hasattr(_cl.Kernel, "_set_arg_buf_multi")) else _set_args_slow

_opened: dict = {}


def opened() -> list:
    """The devices opened so far in this process."""
    return list(_opened.values())


def open_device(index: int) -> CLDevice:
    """The :class:`CLDevice` for ``opencl:index`` (opened once)."""
    d = _opened.get(index)
    if d is None:
        with _lock:
            d = _opened.get(index)
            if d is None:
                found = devices()
                if not 0 <= index < len(found):
                    raise RuntimeError(f"opencl:{index}: invalid device index; {len(found)} OpenCL device(s) found")
                p, dev = found[index]
                d = CLDevice(index, p, dev)
                _opened[index] = d
    return d


