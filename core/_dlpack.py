"""DLPack exchange: ``Tensor.__dlpack__``, ``Tensor.__dlpack_device__``, ``ember.from_dlpack`` and
``ember.to_dlpack``.

cpu tensors go through numpy's DLPack implementation, zero-copy both ways: ``np.from_dlpack(t)``
and ``ember.from_dlpack(array)`` share memory with their source. Other devices are served by
their backend, which may implement three optional hooks (cupy plugs in this way):

* ``to_dlpack(tensor, stream=None, max_version=None, dl_device=None, copy=None)`` -> a capsule
* ``dlpack_device(tensor)`` -> ``(device_type_code, device_id)``
* ``from_dlpack(obj, device_type_code, device_id)`` -> an ember tensor (or None to decline)

Unsafe imports are refused rather than silently aliased: a read-only source (an ember tensor
is always writable, so sharing would let ember write into memory its owner declared
immutable) and negative strides (ember views have non-negative strides); ``copy=True`` makes a
private copy instead. Unversioned (pre-1.0) DLPack capsules carry no read-only flag; as every
framework does, they are taken to be writable.
"""
from __future__ import annotations

import ctypes

import numpy as np
from .ops._args import desc
from ._tensor import Tensor
from . import _devices
from . import _plugins
from .ops.creation import from_numpy

# DLPack device type codes (dlpack.h, DLDeviceType)
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL, KDL_VULKAN, KDL_METAL, KDL_VPI, KDL_ROCM = 1, 2, 3, 4, 7, 8, 9, 10
# which ember device type serves a DLPack device type (its backend's ``from_dlpack`` hook imports it)
DEVICE_TYPES = {KDL_CPU: "cpu", KDL_CUDA: "cuda", KDL_CUDA_HOST: "cpu", KDL_OPENCL: "opencl", KDL_ROCM: "cuda"}
_NAMES = {KDL_CPU: "CPU", KDL_CUDA: "CUDA", KDL_CUDA_HOST: "CUDA host", KDL_OPENCL: "OpenCL", KDL_VULKAN: "Vulkan",
          KDL_METAL: "Metal", KDL_VPI: "VPI", KDL_ROCM: "ROCm"}


def _desc(t) -> str:
    return desc(t)


def to_dlpack(tensor, stream=None, *, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule for ``tensor`` (what ``Tensor.__dlpack__`` returns); shares memory unless
    ``copy=True``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): expected a Tensor, got {type(tensor).__name__}")
    if tensor._requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    be = tensor._device._backend
    capsule = be.to_dlpack(tensor, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    if capsule is not None:
        return capsule
    if tensor._device._type != "cpu":
        raise BufferError(f"__dlpack__: backend '{be.name}' (device {tensor._device}) does not implement DLPack export "
                          f"(a to_dlpack hook); copy the tensor to cpu first ({_desc(tensor)})")
    if dl_device is not None and tuple(dl_device) != (KDL_CPU, 0):
        raise BufferError(f"__dlpack__: can't export a cpu tensor to DLPack device {tuple(dl_device)}")
    if stream is not None:
        raise BufferError(f"__dlpack__: stream must be None for cpu tensors, got {stream!r}")
    if tensor._dtype.name == "bfloat16":
        # numpy's DLPack knows only its builtin dtypes, and bfloat16 comes from ml_dtypes
        raise BufferError("__dlpack__: bfloat16 cpu tensors can't be exported through numpy's DLPack "
                          f"({_desc(tensor)}); convert with .float() first")
    src = tensor.clone() if copy else tensor
    arr = be.to_numpy(src.detach())
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if copy is not None:
        kwargs["copy"] = False  # any copy was made above: numpy just wraps ``arr``
    try:
        return arr.__dlpack__(**kwargs)
    except TypeError:  # an older numpy without the 2023 keywords
        return arr.__dlpack__()


def dlpack_device(tensor) -> tuple:
    """``(device_type_code, device_id)`` of ``tensor`` (what ``Tensor.__dlpack_device__`` returns)."""
    be = tensor._device._backend
    dev = be.dlpack_device(tensor)
    if dev is not None:
        return tuple(dev)
    if tensor._device._type == "cpu":
        return (KDL_CPU, 0)
    raise BufferError(f"__dlpack_device__: backend '{be.name}' (device {tensor._device}) does not implement DLPack")


class _Capsule:
    """Presents a bare DLPack capsule (``torch.utils.dlpack.to_dlpack`` style) as an object with
    ``__dlpack__``, for numpy's ``from_dlpack``."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
_PyCapsule_GetName.restype = ctypes.c_char_p
_PyCapsule_GetName.argtypes = [ctypes.py_object]


def _capsule_device(capsule) -> tuple:
    """The DLDevice of a DLPack capsule: in both DLManagedTensor and DLManagedTensorVersioned the
    DLTensor (``void* data`` then ``DLDevice device``) sits after a fixed header."""
    name = _PyCapsule_GetName(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise TypeError(f"from_dlpack(): expected a DLPack capsule named 'dltensor', got {name!r} (a capsule can be "
                        "consumed only once)")
    ptr = _PyCapsule_GetPointer(capsule, name)
    # versioned: DLPackVersion (2 x uint32), void* manager_ctx, deleter, uint64 flags, then the DLTensor
    off = 0 if name == b"dltensor" else 8 + 2 * ctypes.sizeof(ctypes.c_void_p) + 8
    dev = (ctypes.c_int32 * 2).from_address(ptr + off + ctypes.sizeof(ctypes.c_void_p))
    return (int(dev[0]), int(dev[1]))


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor viewing the memory of ``ext_tensor``: any object implementing ``__dlpack__`` (numpy
    arrays, PyTorch/cupy/JAX tensors) or a DLPack capsule.

    Zero-copy by default. ``copy=True`` always copies; ``copy=False`` never does. A read-only or
    negatively strided source is refused unless ``copy=True`` (see the module docstring).
    ``device`` moves the result there (a copy when it differs).
    """
    if isinstance(ext_tensor, Tensor):
        r = ext_tensor.clone() if copy else ext_tensor
        return r if device is None else r.to(device)
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor, _capsule_device(ext_tensor))
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object implementing __dlpack__ or a DLPack capsule, got "
                        f"{type(ext_tensor).__name__}")
    code, index = (tuple(ext_tensor.__dlpack_device__()) if hasattr(ext_tensor, "__dlpack_device__")
                   else (KDL_CPU, 0))
    if code in (KDL_CPU, KDL_CUDA_HOST):
        t = _from_host(ext_tensor, copy)
    else:
        dtype_name = DEVICE_TYPES.get(code)
        if dtype_name is None:
            raise RuntimeError(f"from_dlpack(): DLPack device type {code} ({_NAMES.get(code, 'unknown')}) has no ember "
                               "device type")
        try:
            be = _plugins.backend_for(dtype_name)
        except RuntimeError as e:
            raise RuntimeError(f"from_dlpack(): a {_NAMES[code]} tensor needs the ember backend for device type "
                               f"'{dtype_name}': {e}") from None
        t = be.from_dlpack(ext_tensor, code, index)
        if t is None:
            raise RuntimeError(f"from_dlpack(): backend '{be.name}' can't import {_NAMES[code]} DLPack tensors (it has "
                               "no from_dlpack hook)")
        if copy:
            t = t.clone()
    if device is not None and _devices.canonical(device) is not t._device:
        t = t.to(device)
    return t


def _host_array(ext):
    """The numpy array over ``ext``'s host memory (zero-copy)."""
    try:
        cap = ext.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer without the 2023 keywords: an unversioned capsule
        cap = ext.__dlpack__()
    legacy = _PyCapsule_GetName(cap) == b"dltensor"
    arr = np.from_dlpack(_Capsule(cap, (KDL_CPU, 0)))
    if legacy and not arr.flags.writeable and arr.size and all(s >= 0 for s in arr.strides):
        # numpy marks unversioned imports read-only out of caution; the protocol they follow has
        # no such flag and their producers hand out writable memory: alias it writable
        n = sum((d - 1) * s for d, s in zip(arr.shape, arr.strides)) + arr.itemsize
        buf = (ctypes.c_char * n).from_address(arr.ctypes.data)
        buf._ember_owner = arr  # keeps the capsule's owner alive as long as the alias
        arr = np.ndarray(arr.shape, arr.dtype, buffer=buf, strides=arr.strides)
    return arr


def _from_host(ext, copy):
    arr = _host_array(ext)
    if copy:
        return from_numpy(np.array(arr, copy=True))
    if not arr.flags.writeable:
        raise BufferError(f"from_dlpack(): the source is read-only ({arr.dtype}{list(arr.shape)}); ember tensors are "
                          "writable, so sharing it would allow writes its owner forbids. Pass copy=True for a copy.")
    if any(s < 0 for s in arr.strides):
        raise BufferError(f"from_dlpack(): the source has negative strides {arr.strides} (in bytes), which ember views "
                          "can't express. Pass copy=True for a copy.")
    return from_numpy(arr)
