"""The cuda_cupy backend: device ``cuda:N`` is cupy's device N.

Importing this module never imports cupy by itself: the class loads (so ``ember info`` can say why
the device is unavailable) and cupy comes in when the availability probe runs. A storage's
``_data`` is a flat cupy array on its device (:mod:`.arrays`); the kernel table is cpu_numpy's,
built with cupy (:mod:`.kernels`).
"""
from __future__ import annotations

import weakref

import numpy as np

from ember.backend import dtypes as D
from ember.backend import Backend

from . import _cupy


class CupyBackend(Backend):
    """Device type ``cuda``: NVIDIA GPUs through cupy."""

    #: written for ember's plugin API 1 (a literal: ember refuses the backend when its own differs)
    plugin_api_version = 1
    dtypes = frozenset(d.name for d in D.ALL_DTYPES)
    tolerances = {"float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2), "float32": (1e-4, 1e-5),
                  "float64": (1e-7, 1e-9), "complex64": (1e-4, 1e-5), "complex128": (1e-7, 1e-9)}
    supports_pinning = True

    def __init__(self) -> None:
        super().__init__()
        from .api import CudaAPI
        self.cuda_api = CudaAPI(self)
        self._pinned = weakref.WeakValueDictionary()  # data pointer -> pinned host array
        ok, _ = _cupy.availability()
        if ok:
            from . import arrays, kernels
            self.kernels.update(kernels.build_table(multi_device=self.device_count() > 1))
            self.out_kernels = set(kernels.OUT_KERNELS)
            arrays._Peak.pool = _cupy.module().get_default_memory_pool()

    # -- compilation --------------------------------------------------------------------------
    def fuse_elementwise(self, chain):
        """One cupy ElementwiseKernel per elementwise chain (:mod:`.fusion`)."""
        if not _cupy.availability()[0]:
            return None
        from . import arrays, fusion
        return fusion.fuse_elementwise(chain, arrays.cp, arrays.nd, arrays.wrap)

    # -- devices ------------------------------------------------------------------------------
    def availability(self) -> tuple:
        return _cupy.availability()

    def device_count(self) -> int:
        return _cupy.device_count()

    def current_device(self) -> int:
        if not _cupy.availability()[0]:
            return 0
        return _cupy.module().cuda.runtime.getDevice()

    def set_device(self, index: int) -> None:
        n = self.device_count()
        if not 0 <= index < n:
            raise RuntimeError(f"cuda: invalid device index {index} ({n} CUDA device(s); "
                               f"{self.availability()[1] or 'cupy sees them'})")
        _cupy.module().cuda.runtime.setDevice(index)

    def device_name(self, index: int) -> str:
        name = _cupy.module().cuda.runtime.getDeviceProperties(index)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    # -- runtime verbs --------------------------------------------------------------------------
    def empty(self, shape, dtype, device):
        from .arrays import CP_DTYPE, cp, wrap
        with cp.cuda.Device(device._index):
            return wrap(cp.empty(tuple(shape), CP_DTYPE[dtype]), device, dtype)

    def from_numpy(self, array, device, non_blocking: bool = False):
        """A copy of ``array`` on ``device``. From pinned host memory the copy is queued on the
        current stream; with ``non_blocking`` it is not waited for (the source must stay untouched
        until it is done, as in PyTorch), else the stream is synchronized before returning."""
        from .arrays import BF16, cp, wrap
        dt = D.from_numpy_dtype(array.dtype)
        host = array.view(np.uint16) if dt is BF16 else array
        with cp.cuda.Device(device._index):
            if self.is_pinned_array(array) and host.flags.c_contiguous:
                a = cp.empty(host.shape, host.dtype)
                stream = cp.cuda.get_current_stream()
                a.set(host, stream=stream)
                if not non_blocking:
                    stream.synchronize()
            else:
                a = cp.asarray(host if host.flags.c_contiguous else host.copy())
            return wrap(a, device, dt)

    def to_numpy(self, tensor) -> np.ndarray:
        from .arrays import BF16, cp, nd
        from . import checks
        checks.raise_pending(tensor._device._index)
        with cp.cuda.Device(tensor._device._index):
            a = nd(tensor).get()
        return a.view(BF16.np) if tensor._dtype is BF16 else a

    def synchronize(self, device=None) -> None:
        if not _cupy.availability()[0]:
            return
        cp = _cupy.module()
        from . import checks
        indices = range(self.device_count()) if device is None else [device._index]
        for i in indices:
            with cp.cuda.Device(i):
                cp.cuda.Device(i).synchronize()
            checks.raise_pending(i)

    def data_ptr(self, storage) -> int:
        return storage._data.data.ptr if storage._nbytes else 0

    def create_generator(self, device):
        from .random import CurandGenerator
        return CurandGenerator(device._index)

    def memory_stats(self, device) -> dict:
        return self.cuda_api.memory_stats(device._index)

    def empty_cache(self, device=None) -> None:
        self.cuda_api.empty_cache()

    def reset_peak_memory_stats(self, device) -> None:
        self.cuda_api.reset_peak_memory_stats(device._index)

    def memory_info(self, device) -> tuple:
        return self.cuda_api.mem_get_info(device._index)

    # -- pinned host memory ---------------------------------------------------------------------
    def pin_memory(self, tensor):
        """A cpu tensor with ``tensor``'s values in page-locked host memory (cupy's pinned
        pool), from which copies to the GPU run asynchronously."""
        import cupyx
        host = tensor.detach()._host() if tensor._device._type == "cpu" else tensor.cpu()._host()
        buf = cupyx.empty_pinned(host.shape, host.dtype)
        buf[...] = host
        self._pinned[buf.ctypes.data] = buf
        import ember
        return ember.from_numpy(buf)

    def is_pinned_array(self, array) -> bool:
        if not isinstance(array, np.ndarray) or not array.size:
            return False
        base = array
        while isinstance(base.base, np.ndarray):
            base = base.base
        return self._pinned.get(base.ctypes.data) is base

    def is_pinned(self, tensor) -> bool:
        if tensor._device._type != "cpu":
            return False
        return self.is_pinned_array(tensor._storage._data)
