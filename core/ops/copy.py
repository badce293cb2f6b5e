"""Copies and casts: ``copy_``, ``to_copy`` (``Tensor.to``), ``clone``, ``contiguous``, ``fill_``, ``zero_``."""
from __future__ import annotations

from .. import _dtype as D
from .. import _state
from .._tensor import Tensor
from . import _args as U
from . import writes as W
from .declare import composite, defop
from .registry import dispatch, register_op

__all__ = ["clone", "contiguous", "copy_", "fill_", "zero_"]

_grad = _state.grad


def _empty(shape, dtype, dev):
    return dev._backend.empty(shape, dtype, dev)


# _copy_to(src, shape, dtype): a new contiguous tensor of shape/dtype holding src broadcast and cast
def _copy_to_decomp(src, shape, dtype):
    out = _empty(shape, dtype, src._device)
    src._device._kernels["copy_"](out, src)
    return out


_COPY_TO = register_op("_copy_to", decomposition=_copy_to_decomp, saves=(), group="memory",
                       backward=lambda ctx, g: (g,))
_COPY = register_op("copy_", group="memory", differentiable=False)  # autograd: _copy_to


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` into ``self`` (broadcast; ``self`` keeps its dtype and device)."""
    if not isinstance(src, Tensor):
        if U.is_scalar(src):
            return fill_(self, src)
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src._shape != self._shape:
        bs = U.broadcast_shapes(self._shape, src._shape, "copy_")
        if bs != self._shape:
            raise RuntimeError(
                f"copy_: the source of shape {list(src._shape)} can't be broadcast to the destination's shape "
                f"{list(self._shape)}")
    if src._storage is self._storage and src is not self:
        _check_partial_overlap(self, src)
    dev = self._device
    if src._device is not dev and src._device._backend is not dev._backend:
        src = to_copy(src, src._dtype, dev)  # across backends through the host
    if _grad.enabled and (src._requires_grad or self._requires_grad or
                          (self._base is not None and self._base._requires_grad) or
                          (src._base is not None and src._base._requires_grad)):
        return W.write_direct(_COPY_TO, self, dev, (src, self._shape, self._dtype), (src,), None)
    W.check_overlap(self, "copy_")
    dev._kernels["copy_"](self, src)
    self._version[0] += 1
    return self


def _check_partial_overlap(dst: Tensor, src: Tensor) -> None:
    """PyTorch's refusal of a copy between two different views of overlapping memory (the result
    would depend on the order the elements are copied in; backends differ). Like PyTorch's check,
    it judges contiguous views; the same memory copied onto itself is allowed."""
    if not (dst.is_contiguous() and src.is_contiguous()):
        return
    nd, ns = dst.numel() * dst._dtype.itemsize, src.numel() * src._dtype.itemsize
    d0, s0 = dst._offset * dst._dtype.itemsize, src._offset * src._dtype.itemsize
    if nd and ns and (d0, nd) != (s0, ns) and d0 < s0 + ns and s0 < d0 + nd:
        raise RuntimeError(
            f"copy_: unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
            f"single memory location ({U.desc(src)} into {U.desc(dst)}). Please clone() the tensor before performing "
            "the operation.")


_FILL = register_op("fill_", group="memory", differentiable=False)


def _full_like_decomp(value, shape, dtype, dev):
    out = _empty(shape, dtype, dev)
    dev._kernels["fill_"](out, value)
    return out


def fill_(self: Tensor, value) -> Tensor:
    """Fill ``self`` with ``value`` (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        W.check_overlap(self, "fill_")  # a tensor value is copied, and PyTorch's copy refuses overlap
        if value.dim() != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        if value._requires_grad and _grad.enabled:
            return copy_(self, value.expand(self._shape))
        value = value.item()
    if not U.is_scalar(value):
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    value = scalar_for(value, self._dtype, "fill_")
    dev = self._device
    if _grad.enabled and (self._requires_grad or (self._base is not None and self._base._requires_grad)):
        return W.write_direct(_FULL, self, dev, (value, self._shape, self._dtype, dev), (), None)
    dev._kernels["fill_"](self, value)  # one value: overlapping (expanded) elements are fine
    self._version[0] += 1
    return self


_FULL = register_op("_full", decomposition=_full_like_decomp, differentiable=False, group="memory")


# the memory primitives' own front ends (in-place only; their autograd goes through _copy_to and _full)
_COPY.fn, _FILL.fn = copy_, fill_


def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return fill_(self, 0)


def scalar_for(value, dtype, op):
    """Convert a python scalar to the python type matching ``dtype`` (the value a fill writes:
    a float truncates into an integer dtype; out of the dtype's range raises, as
    :func:`~ember.ops._args.scalar_value`)."""
    cat = dtype.category
    if cat == D._FLOAT:
        if isinstance(value, complex):
            raise RuntimeError(f"{op}: complex value {value} cannot be converted to type {dtype.name} without overflow")
        return float(value)
    if cat == D._COMPLEX:
        return complex(value)
    if cat == D._INT:
        if isinstance(value, float):
            return U.float_to_int(value, dtype, op)
        return U.int_in_range(int(value), dtype, op)
    return bool(value)


def _to_copy_decomp(x, dtype, dev):
    # same backend (possibly another device index of it): the backend's strided copy casts
    out = _empty(x._shape, dtype, dev)
    dev._kernels["copy_"](out, x)
    return out


def _to_device_decomp(x, dtype, dev, non_blocking=False):
    # across backends, through host memory (numpy is the host format); only a request for an
    # asynchronous copy is passed on, so a backend's from_numpy may leave the keyword out
    host = x._device._backend.to_numpy(x)
    if host.dtype != dtype.np:
        host = host.astype(dtype.np)
    if non_blocking:
        return dev._backend.from_numpy(host, dev, non_blocking=True)
    return dev._backend.from_numpy(host, dev)


def _to_copy_bw(ctx, g):
    src = ctx.args[0]
    if g._device is not src.device:
        g = to_copy(g, src.dtype, src.device)
    return (g,)


_TO_COPY = register_op("_to_copy", decomposition=_to_copy_decomp, saves=(), backward=_to_copy_bw, group="memory")
# kernels for _to_device, if any, are looked up on the source device
_TO_DEVICE = register_op("_to_device", decomposition=_to_device_decomp, saves=(), backward=_to_copy_bw,
                         group="memory")


def to_copy(x: Tensor, dtype, dev, non_blocking: bool = False, op: str = "to") -> Tensor:
    """A copy of ``x`` with ``dtype`` on canonical device ``dev`` (differentiable).
    ``non_blocking``: a copy between backends may return before it is done (cuda_cupy does so
    from pinned host memory; the source must then stay untouched until the stream gets there).
    ``op`` names the op in the error for a dtype the device's backend lacks."""
    dev._backend.check_dtype(dtype, op)
    if dev._backend is x._device._backend:
        return dispatch(_TO_COPY, dev, (x, dtype, dev), (x,))
    return dispatch(_TO_DEVICE, x._device, (x, dtype, dev, bool(non_blocking)), (x,))


def cast(t: Tensor, dtype, op: str = "to") -> Tensor:
    """``t`` converted to ``dtype`` on its device (differentiable; a copy); ``op`` names the op
    that promoted it in the error for a dtype the backend lacks (complex on opencl)."""
    return to_copy(t, dtype, t._device, op=op)


def _clone_decomp(x):
    out = _empty(x._shape, x._dtype, x._device)
    x._device._kernels["copy_"](out, x)
    return out


@defop("clone", decomposition=_clone_decomp, saves=(), backward=lambda ctx, g: (g,), out=False, group="memory")
def clone(input: Tensor, *, memory_format=None):
    """A copy of ``input`` with its own storage (differentiable)."""
    return input._device, (input,), (input,)


@composite("contiguous", out=False)
def contiguous(self: Tensor, memory_format=None):
    """``self`` if it is contiguous, else a contiguous copy."""
    if self.is_contiguous():
        return self
    return dispatch(clone.op, self._device, (self,), (self,))
