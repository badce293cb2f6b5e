"""The opencl backend: a small device class per OpenCL device (:mod:`ember_opencl.runtime`) and a
table from op name to a kernel launcher (:mod:`ember_opencl.kernels`).

A storage's ``_data`` is a :class:`~ember_opencl.runtime.Buf` (a pooled ``cl.Buffer`` and its
device); kernels read tensors through their buffer, element offset and strides, so views never
copy.
"""
from __future__ import annotations

import numpy as np

from ember.backend import dtypes as D
from ember.backend import Backend, UntypedStorage, make_tensor

from . import fusion, runtime
from .kernels import KERNELS, OUT_KERNELS
from .kernels.tensors import cstrides, new_tensor
from .kernels.memory import to_host
from .kernels.random import PhiloxGenerator

# always available: 16-bit floats are stored as 16-bit words and computed in float; complex64 is
# a pair of floats computed as float2 (complex128, double2, comes with float64)
_BASE = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                   "complex64"})
_FP64 = frozenset({"float64", "complex128"})


class OpenCLBackend(Backend):
    """Device ``opencl:N``: the N-th OpenCL device over all platforms."""

    #: written for ember's plugin API 1 (a literal: ember refuses the backend when its own differs)
    plugin_api_version = 1
    KERNELS = KERNELS
    out_kernels = OUT_KERNELS

    def __init__(self) -> None:
        super().__init__()
        ok, _ = runtime.availability()
        fp64 = False
        if ok:
            fp64 = any("cl_khr_fp64" in d.extensions.split() or getattr(d, "double_fp_config", 0)
                       for _, d in runtime.devices())
        self.dtypes = _BASE | _FP64 if fp64 else _BASE

    # -- devices --------------------------------------------------------------------------------
    def availability(self) -> tuple:
        ok, reason = runtime.availability()
        if not ok:
            return ok, reason
        try:
            runtime.open_device(0)
        except RuntimeError as e:
            return False, f"opencl:0 can't compile kernels: {str(e).splitlines()[0]}"
        return True, ""

    def device_count(self) -> int:
        ok, _ = runtime.availability()
        return len(runtime.devices()) if ok else 0

    def set_device(self, index: int) -> None:
        n = self.device_count()
        if not 0 <= index < n:
            raise RuntimeError(f"opencl: invalid device index {index} ({n} OpenCL device(s) found)")
        self._current = index

    def current_device(self) -> int:
        return getattr(self, "_current", 0)

    def device_name(self, index: int) -> str:
        p, d = runtime.devices()[index]
        return f"{d.name.strip()} ({p.name.strip()})"

    def cl(self, device) -> runtime.CLDevice:
        """The runtime device of an ember opencl device (``opencl`` alone: the current one)."""
        i = device.index
        return runtime.open_device(self.current_device() if i is None else i)

    def _check_device_dtype(self, dtype, cd, op: str) -> None:
        if dtype.name in _FP64 and not cd.fp64:
            raise TypeError(f"{op}: dtype {dtype.name} is not supported by opencl:{cd.index} ({cd.name}): the "
                            "device has no cl_khr_fp64")

    # -- runtime verbs --------------------------------------------------------------------------
    def empty(self, shape, dtype, device):
        cd = self.cl(device)
        if dtype.name in _FP64 and not cd.fp64:
            self._check_device_dtype(dtype, cd, "empty")
        return new_tensor(cd, tuple(shape), dtype, device)

    def from_numpy(self, array, device, non_blocking: bool = False):
        cd = self.cl(device)
        dt = D.from_numpy_dtype(array.dtype)
        if dt.name in _FP64 and not cd.fp64:
            self._check_device_dtype(dt, cd, "from_numpy")
        host = array if array.flags.c_contiguous else np.array(array, order="C")
        shape = tuple(host.shape)
        return make_tensor(UntypedStorage(cd.from_host(host), host.nbytes, device), shape, cstrides(shape), 0, dt,
                           device)

    def to_numpy(self, tensor) -> np.ndarray:
        return to_host(tensor)

    def fuse_elementwise(self, chain):
        """One generated OpenCL C kernel per elementwise chain (:mod:`.fusion`)."""
        return fusion.fuse_elementwise(chain)

    def synchronize(self, device=None) -> None:
        for cd in runtime.opened() if device is None else [self.cl(device)]:
            cd.synchronize()

    def data_ptr(self, storage) -> int:
        return storage._data.cl.int_ptr

    def create_generator(self, device):
        return PhiloxGenerator(device)

    # -- optional capabilities (ember.backend.Backend declares them) --------------------------------
    def memory_stats(self, device) -> dict:
        """PyTorch-style counters of the device's pooled allocator."""
        return self.cl(device).memory_stats()

    def reset_peak_memory_stats(self, device) -> None:
        """The peak of allocated bytes restarts from the bytes in use now."""
        pool = self.cl(device).pool
        pool.peak = pool.in_use

    def empty_cache(self, device=None) -> None:
        """Give the pooled free buffers back to the driver."""
        for cd in runtime.opened() if device is None else [self.cl(device)]:
            cd.pool.clear()


__all__ = ["OpenCLBackend"]
