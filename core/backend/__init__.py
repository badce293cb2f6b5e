"""The public backend API: what a compute backend implements, and everything it may import from
ember. Backends and plugins import from here (and :mod:`ember.backend.shapes`) only; a test
fails when one reaches a private ember name.

A backend serves one device type. It subclasses :class:`Backend` and has

* runtime verbs (methods below): ``empty``, ``from_numpy``, ``to_numpy``, ``synchronize``,
  ``data_ptr``, ``device_count``/``current_device``/``set_device``, ``availability`` and random
  generators (``create_generator``, usually a :class:`BackendGenerator` subclass);
* optional capabilities, declared below with their defaults (pinned host memory, thread pools,
  DLPack, a ``torch.cuda``-style API, caches): override what the device has;
* a kernel table ``KERNELS``: op name -> function. The primitives every backend must provide
  are :data:`PRIMITIVES` (see :mod:`ember.ops.primitives` for their exact signatures); any other
  op of ``ember.ops.OPS`` may be added as a fast path, otherwise its decomposition runs.

Kernels receive ember tensors (already validated by the op's front end: broadcastable shapes,
one device, dtypes promoted) and python values, and return new tensors built with
:func:`make_tensor`. A kernel that accepts ``out=`` (a tensor to write into, possibly aliasing an
input) lists its name in ``out_kernels``; otherwise in-place ops copy its result with ``copy_``.

Capabilities read by the conformance suite: ``dtypes`` (names of supported element types),
``tolerances`` (dtype name -> ``(rtol, atol)``) and ``known_failures`` (test-id substring ->
reason; such tests are expected to fail and reported).

docs/backends.md is the guide; docs/design.md places this contract in the whole design.
"""
from __future__ import annotations

import os
from typing import Callable

import numpy as np

from .. import _dtype as D
from .. import _plugins
from .._storage import UntypedStorage
from .._tensor import Tensor, _make, _make_owning
from .._version import PLUGIN_API_VERSION
from ..ops.primitives import GROUPS as PRIMITIVE_GROUPS
from ..ops.primitives import PRIMITIVES
from . import dtypes, fusion, shapes  # noqa: F401  (ember.backend.dtypes, .fusion, .shapes)
from .shared_memory import SharedSegment
from .shapes import broadcast_shapes, contiguous_strides

__all__ = ["Backend", "BackendGenerator", "KernelTable", "make_tensor", "make_owning_tensor", "contiguous_strides",
           "broadcast_shapes", "UntypedStorage", "Tensor", "IndexOutOfRangeError", "PRIMITIVES", "PRIMITIVE_GROUPS",
           "ALL_DTYPES", "dtype_from_numpy", "describe", "index_error", "DEFAULT_SEED", "backend_for", "mark_written",
           "SharedSegment", "PLUGIN_API_VERSION"]

#: every ember dtype, in promotion order within each kind (``dtype.np`` is its numpy dtype on the
#: host; bfloat16's comes from ``ml_dtypes``)
ALL_DTYPES = D.ALL_DTYPES


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index outside its dimension, raised by kernels and front ends that read indices.
    PyTorch raises ``RuntimeError`` from gather/scatter/index_select and ``IndexError`` from
    ``x[i]``; this one class is both, so either ``except`` clause catches it."""


def dtype_from_numpy(npdtype):
    """The ember dtype of a numpy dtype (TypeError for one ember has no dtype for)."""
    return D.from_numpy_dtype(npdtype)


def describe(t) -> str:
    """``float32[2, 3] on cpu`` for error messages (anything else: its type and repr)."""
    if isinstance(t, Tensor):
        return f"{t._dtype.name}[{', '.join(str(s) for s in t._shape)}] on {t._device}"
    return f"{type(t).__name__} {t!r}"


def index_error(op: str, bad: int, dim: int, size: int) -> IndexOutOfRangeError:
    """The error a kernel raises for index ``bad`` outside ``[0, size)`` of dimension ``dim``."""
    return IndexOutOfRangeError(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")


#: ``make_tensor(storage, shape, stride, offset, dtype, device, native=None)``: a tensor over
#: ``storage`` (how kernels return results; see its docstring)
make_tensor = _make

#: ``make_owning_tensor(data, nbytes, shape, stride, dtype, device, native=None)``: a tensor at
#: offset 0 over a new ``UntypedStorage(data, nbytes, device)``, in one call (the common case of
#: a kernel's result)
make_owning_tensor = _make_owning


def mark_written(*tensors) -> None:
    """Advance the version counters of tensors a kernel (or a process group) wrote into that were
    not its result, such as the parameters and states a fused optimizer update changes in place,
    so that autograd refuses to use stale saved values. The core marks the first argument of the
    in-place primitives (``copy_``, ``fill_``, the random fills) itself."""
    for t in tensors:
        t._version[0] += 1


def backend_for(device_type: str) -> "Backend":
    """The loaded backend instance serving ``device_type`` (loading it on first use); RuntimeError
    naming the installed backends when none does."""
    return _plugins.backend_for(device_type)


DEFAULT_SEED = 67280421310721


class BackendGenerator:
    """Base of a backend's random generator (what ``Backend.create_generator`` returns and
    ``ember.Generator`` wraps): the seeding protocol is here, the stream is the subclass's.

    A subclass implements ``reset(seed)`` (restart its stream from ``seed``, a 64-bit unsigned
    int), ``get_state()`` (a uint8 numpy array) and ``set_state(array)``, which must restore the
    seed too (``initial_seed()`` reads ``self._seed``)."""

    def __init__(self, seed: int = DEFAULT_SEED):
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self._seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.reset(self._seed)

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Reseed from the OS's entropy; returns the new seed (63 bits, as PyTorch)."""
        s = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self.manual_seed(s)
        return s

    def reset(self, seed: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_state(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def set_state(self, state) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class KernelTable(dict):
    """A backend's op -> kernel dict; a missing primitive raises a NotImplementedError naming
    the backend and the contract instead of a bare KeyError (``get`` still returns None)."""

    backend = None

    def __missing__(self, name):
        be = self.backend
        who = f"backend '{be.name}' (device type '{be.device_type}')" if be is not None else "this backend"
        raise NotImplementedError(
            f"{name}: {who} has no kernel for this primitive; every backend must implement the ops listed in "
            "ember.ops.primitives (see docs/backends.md)")


class Backend:
    """Base class of every backend. Subclasses fill ``KERNELS`` and override the runtime verbs."""

    #: the plugin API version this backend was written for (``PLUGIN_API_VERSION`` of the ember it
    #: targets): ember refuses to load a backend that declares another (None: undeclared, accepted)
    plugin_api_version: int | None = None
    #: set from the registration when the backend loads
    name: str = ""
    device_type: str = ""
    #: names of the dtypes this backend supports (the real ones unless a backend opts in to
    #: complex64/complex128 by listing them)
    dtypes: frozenset = frozenset(d.name for d in D.REAL_DTYPES)
    #: op name -> kernel; copied into ``self.kernels`` per instance
    KERNELS: dict = {}
    #: kernels that accept ``out=``
    out_kernels: frozenset = frozenset()
    #: dtype name -> (rtol, atol) used by the conformance suite against float64 numpy references
    tolerances: dict = {
        "float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2), "float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9),
        "complex64": (1e-4, 1e-5), "complex128": (1e-7, 1e-9),
    }
    #: test-id substring -> reason, for the conformance suite
    known_failures: dict = {}
    #: True: index and integer-division errors are detected by the kernels on the device and raised
    #: at the next host observation (synchronize, to_numpy...), so the core skips its own host-side
    #: index checks (which wait for the device); see docs/backends.md, "Errors a kernel raises"
    deferred_errors: bool = False

    def __init__(self) -> None:
        self.kernels: dict = KernelTable(self.KERNELS)
        self.kernels.backend = self
        self.out_kernels = set(self.out_kernels)

    # -- registry ---------------------------------------------------------------------------
    def register_kernel(self, op_name: str, fn: Callable, *, supports_out: bool = False) -> None:
        """Install ``fn`` as this backend's kernel for ``op_name`` (used by plugins too)."""
        if not callable(fn):
            raise TypeError(f"kernel for {op_name!r} on backend {self.name!r} must be callable, got {fn!r}")
        self.kernels[op_name] = fn
        if supports_out:
            self.out_kernels.add(op_name)
        else:
            self.out_kernels.discard(op_name)

    # -- devices ----------------------------------------------------------------------------
    def availability(self) -> tuple:
        """``(True, "")`` or ``(False, reason)``; must not fail."""
        return True, ""

    def is_available(self) -> bool:
        return self.availability()[0]

    def device_count(self) -> int:
        return 1 if self.availability()[0] else 0

    def current_device(self) -> int:
        return 0

    def set_device(self, index: int) -> None:
        if index != 0:
            raise RuntimeError(f"{self.device_type}: invalid device index {index}")

    def device_name(self, index: int) -> str:
        return f"{self.device_type}:{index}"

    def supports_dtype(self, dtype) -> bool:
        return dtype.name in self.dtypes

    def check_dtype(self, dtype, op: str = "tensor creation") -> None:
        if dtype.name not in self.dtypes:
            raise TypeError(
                f"{op}: dtype {dtype} is not supported by backend '{self.name}' on device type "
                f"'{self.device_type}' (supported: {', '.join(sorted(self.dtypes))})")

    # -- runtime verbs ------------------------------------------------------------------------
    def empty(self, shape: tuple, dtype, device):
        """A new contiguous tensor of ``shape`` with uninitialised contents."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray, device, non_blocking: bool = False):
        """A tensor on ``device`` holding a copy of ``array`` (``cpu`` may share memory). The core
        passes ``non_blocking=True`` only for ``to(..., non_blocking=True)``: the copy may then
        still be in flight when this returns (device order keeps later ops correct); without it
        the copy must be complete, so the caller may reuse ``array`` at once."""
        raise NotImplementedError

    def to_numpy(self, tensor) -> np.ndarray:
        """The values of ``tensor`` as a numpy array of the same shape and dtype."""
        raise NotImplementedError

    def synchronize(self, device=None) -> None:
        """Wait until all queued work on ``device`` has finished."""

    def data_ptr(self, storage) -> int:
        return 0

    def create_generator(self, device):
        """A new random generator object for ``device`` with ``manual_seed(seed)``,
        ``initial_seed()``, ``seed()``, ``get_state()`` (a uint8 numpy array) and ``set_state``."""
        raise NotImplementedError

    # -- optional capabilities (defaults: the device has none of them) -----------------------
    #: ``torch.cuda``-style API object (streams, events, memory figures) that ``ember.cuda`` uses
    cuda_api = None
    #: True when ``pin_memory``/``is_pinned`` are implemented (page-locked host memory)
    supports_pinning: bool = False

    def pin_memory(self, tensor):
        """A copy of cpu ``tensor`` in page-locked host memory (``supports_pinning``)."""
        raise NotImplementedError(f"backend '{self.name}' does not pin host memory")

    def is_pinned(self, tensor) -> bool:
        return False

    #: True when ``share_memory_``/``shared_segment``/``storage_from_segment`` are implemented
    #: (storages in shared memory, ``ember.multiprocessing``)
    supports_sharing: bool = False

    def share_memory_(self, storage) -> None:
        """Move ``storage``'s buffer into a :class:`SharedSegment` in place (rebinding
        ``storage._data``, so that every view of it stays valid); nothing when it is shared."""
        raise RuntimeError(f"share_memory_ is not supported on device {self.device_type} (backend '{self.name}' "
                           "has no shared memory)")

    def is_shared(self, storage) -> bool:
        return False

    def shared_segment(self, storage):
        """The :class:`SharedSegment` holding a shared ``storage`` (``share_memory_`` first)."""
        raise RuntimeError(f"storages of device {self.device_type} cannot be shared between processes")

    def storage_from_segment(self, segment, nbytes: int, device):
        """A new shared storage of ``nbytes`` bytes over ``segment`` (one another process made)."""
        raise RuntimeError(f"storages of device {self.device_type} cannot be shared between processes")

    def set_num_threads(self, n: int) -> None:
        """Limit the threads one kernel may use (``ember.set_num_threads``); default: no pool."""

    def get_num_threads(self) -> int | None:
        """The threads one kernel uses, or None when the backend has no pool."""
        return None

    def to_dlpack(self, tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule for a tensor of this backend, or None: cpu tensors then go through
        numpy, other devices refuse."""
        return None

    def dlpack_device(self, tensor):
        """``(DLPack device type code, index)`` for a tensor of this backend, or None."""
        return None

    def from_dlpack(self, ext_tensor, code: int, index: int):
        """A tensor of this backend viewing a DLPack producer's device memory, or None."""
        return None

    def memory_stats(self, device) -> dict:
        return {}

    def empty_cache(self, device=None) -> None:
        """Release cached memory (``ember.cuda.empty_cache``); default: nothing cached."""

    def reset_peak_memory_stats(self, device) -> None:
        """Restart the ``*.peak`` counters of ``memory_stats`` from the current values
        (``ember.accelerator.reset_peak_memory_stats``); default: no counters kept."""

    def memory_info(self, device) -> tuple:
        """``(free, total)`` bytes of the device (``ember.accelerator.get_memory_info``)."""
        raise NotImplementedError(f"backend '{self.name}' (device type '{self.device_type}') does not report its "
                                  "free and total memory")

    # -- compilation ------------------------------------------------------------------------------
    def fuse_elementwise(self, chain) -> Callable | None:
        """A callable computing the :class:`ember.backend.fusion.ElementwiseChain` ``chain`` in one
        kernel (``fused(*inputs) -> Tensor``), or None to let ``ember.compile`` replay its calls
        one by one (the default). Asked once per chain, when a program is built; see
        :mod:`ember.backend.fusion` and docs/backends.md for the rules."""
        return None

    def __repr__(self) -> str:
        return f"<ember backend {self.name!r} device_type={self.device_type!r}>"
