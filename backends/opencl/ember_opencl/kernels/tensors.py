"""opencl tensors as the kernels make them: a new contiguous tensor over a pooled buffer, a view
of a tensor's storage with other geometry, the runtime device a tensor lives on, and a 1-D
launch over tensors."""
from __future__ import annotations

import math

from ember.backend import Tensor, UntypedStorage, contiguous_strides, make_tensor

from .layout import bstrides

_CSTR: dict = {}


def cstrides(shape: tuple) -> tuple:
    """Row-major strides of ``shape`` (cached: shapes repeat)."""
    st = _CSTR.get(shape)
    if st is None:
        st = _CSTR[shape] = contiguous_strides(shape)
    return st


def new_tensor(cd, shape: tuple, dtype, device) -> Tensor:
    """A new contiguous opencl tensor (uninitialised)."""
    nbytes = math.prod(shape) * dtype.itemsize
    return make_tensor(UntypedStorage(cd.alloc(nbytes), nbytes, device), shape, cstrides(shape), 0, dtype, device)


def expanded(x: Tensor, shape: tuple) -> Tensor:
    """``x`` broadcast to ``shape`` (a view with stride 0 along the broadcast dims)."""
    return view(x, shape, bstrides(x, shape))


def view(t: Tensor, shape: tuple, stride: tuple | None = None, offset: int | None = None) -> Tensor:
    """A tensor over ``t``'s storage with other geometry (internal: no autograd, no base)."""
    return make_tensor(t._storage, shape, cstrides(shape) if stride is None else stride,
                       t._offset if offset is None else offset, t._dtype, t._device)


def cl_dev(t: Tensor):
    """The runtime device (:class:`~ember_opencl.runtime.CLDevice`) holding ``t``."""
    return t._storage._data.dev


def launch_1d(cd, k, n: int, operands, meta: bytes, l0: int = 256) -> None:
    """Queue kernel ``k`` over ``n`` work-items in groups of ``l0`` (``n`` rounded up), with the
    buffers of the tensors ``operands`` (or raw buffers) and the packed argument struct ``meta``."""
    cd.launch(k, ((n + l0 - 1) // l0 * l0,), (l0,),
              tuple(b._storage._data.cl if isinstance(b, Tensor) else b for b in operands), meta)
