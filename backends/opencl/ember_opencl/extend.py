r"""The public API for plugins that add OpenCL C kernels to the opencl backend.

A plugin registers a kernel with ``ember_register_kernels(backend, register)`` when
``backend == "opencl"`` and imports this module inside that hook (the backend, and pyopencl,
are loaded by then). A kernel receives ember tensors on one opencl device, already validated
by the op's front end, and returns new tensors. Everything else in ``ember_opencl`` is
internal and may change; this module keeps its names and meanings.

A kernel in a few lines (``backends/opencl/tests/test_extend.py`` runs this one)::

    import functools
    from ember_opencl import extend as cl

    @functools.lru_cache(maxsize=None)
    def scale_args(t):                          # the argument struct, declared once per dtype
        return cl.Args().long("n", "off_x").scalar("alpha", t)

    def k_scale(x, alpha):                      # out = alpha * x, for a contiguous x
        dev, t = cl.device_of(x), cl.ctype(x.dtype)
        args = scale_args(t)
        src = (cl.preamble(t) + args.struct() +
               f"__kernel void scale({t.ptr()} o, const {t.ptr()} x, const M m) {{\n"
               f"  long i = get_global_id(0); if (i >= m.n) return;\n"
               f"  {t.store('o', 'i', 'm.alpha * ' + t.load('x', 'm.off_x + i'))};\n}}\n")
        k = dev.kernel(("my_plugin.scale", t.name), lambda: (src, "scale"))
        out = cl.empty(x.shape, x.dtype, x.device)
        n = x.numel()
        cl.launch(dev, k, (cl.round_up(n, 64),), (64,), [out, x],
                  args.pack(n=n, off_x=x.storage_offset(), alpha=alpha))
        return out

Conventions: buffers are the kernel's first arguments, in the order given to :func:`launch`;
its last argument is the by-value struct ``M`` declared by an :class:`Args` (named fields:
sizes, element offsets (``tensor.storage_offset()``; buffers are addressed in elements of their
dtype), strides, scalars), read in C as ``m.<field>`` and packed on the host by name. Declare
the :class:`Args` once per kernel (it is the same for every launch of that kernel; its first
``pack`` compiles the packer) and call its ``pack`` per launch. The older positional form is
still accepted: :func:`meta_struct` declares ``long v[n]``, the kernel reads ``m.v[j]`` (a
scalar with :func:`read_slot`), and :func:`launch` takes the list of ints (a scalar as
:func:`scalar_slot`). 16-bit floats are stored as 16-bit words and computed in ``float``
(``ctype(dtype).ct``); a device may lack float64 (``device_of(t).fp64``; the backend refuses
float64 tensors there).
"""
from __future__ import annotations

import ember

from .kernels.args import Args, meta_struct, read_slot, scalar_slot
from .kernels.args import pack_slots as pack
from .kernels.tensors import cl_dev as _cl_dev
from .kernels.layout import round_up
from .kernels.types import CT, T as _T, preamble
from .runtime import CLDevice, OpenCLError, check

__all__ = ["Args", "CLDevice", "CT", "OpenCLError", "buffer", "check", "ctype", "device_of", "empty", "launch",
           "meta_struct", "pack", "preamble", "read_slot", "round_up", "scalar_slot"]


def device_of(tensor) -> CLDevice:
    """The :class:`CLDevice` holding ``tensor``: ``kernel(key, make)`` compiles and caches a
    program (``make()`` returns ``(source, kernel_name)``, called once per key and device),
    ``fp64``/``fp16``, ``is_cpu``, ``max_wg`` (largest work-group), ``local_mem`` (bytes),
    ``synchronize()``."""
    return _cl_dev(tensor)


def buffer(tensor):
    """The ``pyopencl.Buffer`` under ``tensor``'s storage (index it from
    ``tensor.storage_offset()``, in elements, with ``tensor.stride()``)."""
    return tensor.untyped_storage()._data.cl


def ctype(dtype) -> CT:
    """The OpenCL C view of an ember dtype: ``st`` (storage type), ``ct`` (compute type),
    ``ptr(qual="__global")`` (pointer type of a buffer), ``load(p, i)`` / ``store(p, i, v)``
    (C expressions converting between the two), ``is_float``, ``size``."""
    return _T(dtype)


def empty(shape, dtype, device):
    """A new contiguous, uninitialised opencl tensor (``device``: an ember device or its name)."""
    return ember.empty(tuple(shape), dtype=dtype, device=device)


def launch(device: CLDevice, kernel, global_size: tuple, local_size, operands, meta) -> None:
    """Queue ``kernel`` over ``global_size`` (``local_size`` a tuple, or None for the driver's
    choice). ``operands`` are tensors (passed as their buffers) or ``pyopencl`` buffers, in the
    kernel's argument order; ``meta``, the last argument ``M``, is what :meth:`Args.pack`
    returned (or, in the positional form, a list of ints). The queue is in order: later ops see
    the results without waiting."""
    bufs = tuple(x.untyped_storage()._data.cl if hasattr(x, "untyped_storage") else x for x in operands)
    if not isinstance(meta, (bytes, bytearray)):
        meta = pack(list(meta))
    device.launch(kernel, tuple(global_size), None if local_size is None else tuple(local_size), bufs, meta)
