"""Memory kernels: strided copy with cast and broadcast (``copy_``), fill, and the fast paths
``_to_copy`` and ``clone`` built on them. A source on another opencl device is brought over
first (through the host: each device has its own context)."""
from __future__ import annotations

import numpy as np

from ember.backend import Tensor, UntypedStorage, make_tensor

from ..runtime import open_device
from . import elementwise as ew
from . import tensors as tn
from .types import T, cast


def to_host(x: Tensor) -> np.ndarray:
    """The values of ``x`` as a new numpy array (waits for the device's queue)."""
    if not x.is_contiguous():
        x = clone(x)
    out = np.empty(x._shape, dtype=x._dtype.np)
    if out.size:
        buf = x._storage._data
        buf.dev.copyout(out, buf, x._offset * x._dtype.itemsize)
    return out


def _transfer(src: Tensor, device, cd) -> Tensor:
    """``src`` (on another opencl device) as a contiguous tensor on ``device``."""
    host = to_host(src)
    buf = cd.from_host(host)
    return make_tensor(UntypedStorage(buf, host.nbytes, device), src._shape, tn.cstrides(src._shape), 0, src._dtype,
                       device)


def _same_block(dst: Tensor, src: Tensor) -> bool:
    return (dst._dtype is src._dtype and dst._shape == src._shape and dst.is_contiguous() and src.is_contiguous())


def k_copy_(dst: Tensor, src: Tensor) -> Tensor:
    cd = tn.cl_dev(dst)
    if src._device is not dst._device:
        if src._device._type != dst._device._type:
            raise RuntimeError(f"copy_: the opencl kernel can't read a tensor on {src._device}")
        src = _transfer(src, dst._device, cd)
    n = dst.numel()
    if n == 0:
        return dst
    if _same_block(dst, src):
        if src._storage is dst._storage and src._offset == dst._offset:
            return dst
        isz = dst._dtype.itemsize
        cd.copy(dst._storage._data, src._storage._data, n * isz, dst._offset * isz, src._offset * isz)
        return dst
    if src._storage is dst._storage:  # overlapping views: go through a temporary
        src = clone(src)
    st, dt = T(src._dtype), T(dst._dtype)
    ew.run(("copy", st.name), cast("a", st, dt), dt, [src], dst._shape, dst, dst._device, cd)
    return dst


def k_fill_(dst: Tensor, value) -> Tensor:
    cd = tn.cl_dev(dst)
    t = T(dst._dtype)
    ew.run("fill", "a", t, [(value, t)], dst._shape, dst, dst._device, cd)
    return dst


def clone(x: Tensor) -> Tensor:
    cd = tn.cl_dev(x)
    if x.is_contiguous():
        out = tn.new_tensor(cd, x._shape, x._dtype, x._device)
        n = x.numel()
        if n:
            isz = x._dtype.itemsize
            cd.copy(out._storage._data, x._storage._data, n * isz, 0, x._offset * isz)
        return out
    t = T(x._dtype)
    return ew.run(("copy", t.name), "a", t, [x], x._shape, None, x._device, cd)


def k_to_copy(x: Tensor, dtype, device) -> Tensor:
    if device is not x._device:
        cd = open_device(device.index)
        x = _transfer(x, device, cd)
        if dtype is x._dtype:
            return x
    if dtype is x._dtype:
        return clone(x)
    cd = tn.cl_dev(x)
    st, dt = T(x._dtype), T(dtype)
    return ew.run(("copy", st.name), cast("a", st, dt), dt, [x], x._shape, None, device, cd)


def k_cat(tensors, dim):
    t0 = tensors[0]
    shape = list(t0._shape)
    shape[dim] = sum(t._shape[dim] for t in tensors)
    cd = tn.cl_dev(t0)
    out = tn.new_tensor(cd, tuple(shape), t0._dtype, t0._device)
    off = 0
    st = out._stride
    for t in tensors:
        n = t._shape[dim]
        if n:
            k_copy_(tn.view(out, t._shape, st, off * st[dim]), t)
        off += n
    return out


KERNELS = {"copy_": k_copy_, "fill_": k_fill_, "clone": clone, "_to_copy": k_to_copy, "cat": k_cat}
