"""Tensors <-> cupy arrays, and bfloat16 (which cupy lacks).

A cuda storage's ``_data`` is a flat cupy array on the storage's device; ``nd(t)`` is the cupy
view of a tensor (shape, strides and offset over that array, cached on the tensor), ``wrap(a,
device)`` a tensor owning a kernel's result. cupy has no bfloat16: bfloat16 tensors are stored
as their 16-bit patterns in uint16 arrays (ember has no uint16 dtype, so a uint16 array always
means bfloat16 bits) and compute in float32 (:func:`to_f32`, :func:`from_f32`, round to nearest
even, as PyTorch's casts).
"""
from __future__ import annotations

import numpy as np

from ember.backend import dtypes as D
from ember.backend import UntypedStorage
from ember.backend import Tensor
from ember.backend import make_tensor as _make
from ember.backend import contiguous_strides

from . import _cupy

cp = _cupy.module()
ndarray = cp.ndarray
_U16 = np.dtype(np.uint16)
_U32 = np.dtype(np.uint32)
_F32 = np.dtype(np.float32)
BF16 = D.bfloat16

#: ember dtype -> the dtype of its cupy arrays
CP_DTYPE = {d: _U16 if d is BF16 else np.dtype(d.np) for d in D.ALL_DTYPES}  # (bf16.np not touched)
FROM_CP = {v: k for k, v in CP_DTYPE.items()}
_CSTRIDES: dict = {}


class _Peak:
    """Peak of the memory pool's used bytes per device, sampled at each result's creation."""
    pool = None
    peak: dict = {}


def nd(t: Tensor):
    """The cupy view of a cuda tensor (bfloat16: its uint16 bit patterns)."""
    a = t._native
    if a is None:
        base = t._storage._data
        isz = t._dtype.itemsize
        a = ndarray(t._shape, CP_DTYPE[t._dtype], base.data + t._offset * isz, tuple(s * isz for s in t._stride))
        t._native = a
    return a


def wrap(a, device, dtype=None) -> Tensor:
    """A tensor owning cupy array ``a`` (a kernel's result) on ``device``."""
    if a.__class__ is not ndarray:
        a = cp.asarray(a)
    dt = FROM_CP.get(a.dtype) if dtype is None else dtype
    if dt is None:
        dt = D.from_numpy_dtype(a.dtype)
        a = a.astype(CP_DTYPE[dt])
    shape = a.shape
    if not a.flags.c_contiguous:
        a = a.copy()  # (ascontiguousarray would make a 0-d array 1-d)
    st = _CSTRIDES.get(shape)
    if st is None:
        st = _CSTRIDES[shape] = contiguous_strides(shape)
    pool = _Peak.pool
    if pool is not None:
        used = pool.used_bytes()
        if used > _Peak.peak.get(device._index, 0):
            _Peak.peak[device._index] = used
    return _make(UntypedStorage(a.reshape(-1), a.nbytes, device), shape, st, 0, dt, device, a)


# -- bfloat16 ------------------------------------------------------------------------------------

def bits_to_f32(u):
    """float32 values of a uint16 array of bfloat16 bit patterns (exact)."""
    return cp.left_shift(u.astype(_U32), 16).view(_F32)


def f32_to_bits(f):
    """bfloat16 bit patterns (uint16) of float32 array ``f``: round to nearest even; NaN stays NaN."""
    f = f.astype(_F32, copy=False)
    if not f.flags.c_contiguous:
        f = f.copy()
    u = f.view(_U32)
    r = cp.right_shift(u + (cp.right_shift(u, 16) & 1) + 0x7FFF, 16).astype(_U16)
    return cp.where(cp.isnan(f), _U16.type(0x7FC0), r)


def to_f32(t: Tensor) -> Tensor:
    """A float32 tensor holding bfloat16 tensor ``t``'s values."""
    return wrap(bits_to_f32(nd(t)), t._device)


def bf16_scalar_bits(value) -> int:
    return int(np.asarray(value, dtype=BF16.np).view(np.uint16))


def _to_f32_args(args):
    out = []
    for a in args:
        if a.__class__ is Tensor or isinstance(a, Tensor):
            out.append(to_f32(a) if a._dtype is BF16 else a)
        elif isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) and x._dtype is BF16 for x in a):
            out.append(type(a)(to_f32(x) if isinstance(x, Tensor) and x._dtype is BF16 else x for x in a))
        else:
            out.append(a)
    return out


def _back_to_bf16(r):
    if isinstance(r, Tensor):
        return wrap(f32_to_bits(nd(r)), r._device, BF16) if r._dtype is D.float32 else r
    if isinstance(r, tuple):
        return tuple(_back_to_bf16(x) for x in r)
    if isinstance(r, list):
        return [_back_to_bf16(x) for x in r]
    return r


def _has_bf16(args) -> bool:
    for a in args:
        if isinstance(a, Tensor):
            if a._dtype is BF16:
                return True
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor) and x._dtype is BF16:
                    return True
    return False


def _first_tensor(args):
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor):
                    return x
    return None


def guard(k, *, bf16: str = "f32", multi_device: bool = True):
    """Wrap kernel ``k`` for the cuda table.

    ``bf16``: "f32" (bfloat16 tensor arguments are computed in float32 and float32 results go
    back to bfloat16; an ``out=`` target receives the result by ``copy_``), "raw" (the kernel only
    moves data: it runs on the bit patterns) or "self" (the kernel handles bfloat16 itself).
    With several GPUs, the kernel runs with its first tensor's device current (cupy allocates
    results on the current device and refuses arrays of another one).
    """
    convert = bf16 == "f32"
    device_ctx = cp.cuda.Device
    get_device = cp.cuda.runtime.getDevice

    def run(args, kwargs):
        if convert and _has_bf16(args):
            out = kwargs.pop("out", None)
            r = _back_to_bf16(k(*_to_f32_args(args), **kwargs))
            if out is None:
                return r
            out._device._kernels["copy_"](out, r)
            return out
        return k(*args, **kwargs)

    if not multi_device:
        if not convert:
            return k

        def g1(*args, **kwargs):
            return run(args, kwargs)
        g1.__wrapped__ = k
        return g1

    def g(*args, **kwargs):
        t = _first_tensor(args)
        if t is not None and t._device._index != get_device():
            with device_ctx(t._device._index):
                return run(args, kwargs)
        return run(args, kwargs)
    g.__wrapped__ = k
    return g
