"""The backend contract: what a compute backend implements, as one small base class.

A backend serves one device type. It has

* runtime verbs (methods below): ``empty``, ``from_numpy``, ``to_numpy``, ``synchronize``,
  ``data_ptr``, ``device_count``/``current_device``/``set_device``, ``availability`` and random
  generators (``create_generator``);
* a kernel table ``kernels``: op name -> function. The primitives every backend must provide are
  listed in :mod:`ember.ops.primitives` (``copy_`` and ``fill_`` among them); any other op of
  :data:`ember.ops.OPS` may be added as a fast path, otherwise its decomposition runs.

Kernels receive ember tensors (already validated by the op's front end: broadcastable shapes,
one device, dtypes promoted) and python values, and return new tensors built with
:func:`make_tensor`. A kernel that accepts ``out=`` (a tensor to write into, possibly aliasing an
input) lists its name in ``out_kernels``; otherwise in-place ops copy its result with ``copy_``.

Capabilities read by the conformance suite: ``dtypes`` (names of supported element types),
``tolerances`` (dtype name -> ``(rtol, atol)``) and ``known_failures`` (test-id substring ->
reason; such tests are expected to fail and reported).
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from . import _dtype as D
from ._storage import UntypedStorage

__all__ = ["Backend", "make_tensor", "contiguous_strides", "UntypedStorage", "IndexOutOfRangeError"]


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index outside its dimension, raised by kernels and front ends that read indices.
    PyTorch raises ``RuntimeError`` from gather/scatter/index_select and ``IndexError`` from
    ``x[i]``; this one class is both, so either ``except`` clause catches it."""


def contiguous_strides(shape: Iterable[int]) -> tuple:
    """Row-major strides (in elements) of ``shape``."""
    strides = []
    acc = 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= s if s > 1 else 1
    return tuple(reversed(strides))


def make_tensor(storage: UntypedStorage, shape: tuple, stride: tuple, offset: int, dtype, device, native=None):
    """Build a tensor over ``storage`` (the way backends return results).

    ``device`` must be the canonical device (``storage.device``); ``native`` is an optional
    backend object cached on the tensor (``cpu_numpy`` keeps the numpy view there).
    """
    from ._tensor import _make
    return _make(storage, shape, stride, offset, dtype, device, native)


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

    #: set from the registration when the backend loads
    name: str = ""
    device_type: str = ""
    #: names of the dtypes this backend supports
    dtypes: frozenset = frozenset(d.name for d in D.ALL_DTYPES)
    #: op name -> kernel; copied into ``self.kernels`` per instance
    KERNELS: dict = {}
    #: kernels that accept ``out=``
    out_kernels: frozenset = frozenset()
    #: dtype name -> (rtol, atol) used by the conformance suite against float64 numpy references
    tolerances: dict = {
        "float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2), "float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9),
    }
    #: test-id substring -> reason, for the conformance suite
    known_failures: dict = {}

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

    def memory_stats(self, device) -> dict:
        return {}

    def __repr__(self) -> str:
        return f"<ember backend {self.name!r} device_type={self.device_type!r}>"
