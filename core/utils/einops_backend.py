"""einops on ember tensors: ``einops.rearrange``/``reduce``/``repeat``/``einsum``/``pack`` take ember
tensors as they take PyTorch's, through einops's backend mechanism.

einops finds a backend by walking the subclasses of its ``AbstractBackend`` whose
``framework_name`` is an imported module; this module defines that subclass for ``ember``.
ember imports it for you: at ``import ember`` when einops is already imported, else right after
einops is imported (:mod:`ember.utils._einops_hook`); importing it yourself is harmless. It
needs the einops package (``pip install einops``). einops's layers (``einops.layers.torch``) are
written against ``torch.nn``; they work on ember under ``ops.testing.torch_alias``.
"""
from __future__ import annotations

try:
    from einops._backends import AbstractBackend
except ImportError as e:  # pragma: no cover - exercised without einops
    raise ImportError(f"ember.utils.einops_backend needs the einops package ({e}): pip install einops") from None

from .. import _dtype as D
from .. import ops
from .._tensor import Tensor

__all__ = ["EmberBackend"]

_FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)


class EmberBackend(AbstractBackend):
    """einops's backend for ember tensors: the same operations as its PyTorch backend, in ember."""

    framework_name = "ember"

    def is_appropriate_type(self, tensor):
        return isinstance(tensor, Tensor)

    def from_numpy(self, x):
        t = ops.from_numpy(x)
        if self.is_float_type(t):
            t.requires_grad_(True)
        return t

    def to_numpy(self, x):
        return x.detach().cpu().numpy()

    def arange(self, start, stop):
        return ops.arange(start, stop, dtype=D.int64)

    def reduce(self, x, operation, reduced_axes):
        if operation == "min":
            return x.amin(dim=reduced_axes)
        if operation == "max":
            return x.amax(dim=reduced_axes)
        if operation == "sum":
            return x.sum(dim=reduced_axes)
        if operation == "mean":
            return x.mean(dim=reduced_axes)
        if operation in ("any", "all", "prod"):  # one dim at a time, as PyTorch
            for i in sorted(reduced_axes)[::-1]:
                x = getattr(x, operation)(dim=i)
            return x
        raise NotImplementedError(f"einops reduction {operation!r} on ember tensors")

    def transpose(self, x, axes):
        return x.permute(axes)

    def stack_on_zeroth_dimension(self, tensors: list):
        return ops.stack(tensors)

    def add_axes(self, x, n_axes, pos2len):
        repeats = [-1] * n_axes
        for axis_position, axis_length in pos2len.items():
            x = self.add_axis(x, axis_position)
            repeats[axis_position] = axis_length
        return x.expand(repeats)

    def tile(self, x, repeats):
        return x.repeat(repeats)

    def concat(self, tensors, axis: int):
        return ops.cat(tensors, dim=axis)

    def add_axis(self, x, new_position):
        return ops.unsqueeze(x, new_position)

    def is_float_type(self, x):
        return x.dtype in _FLOATS

    def layers(self):
        raise NotImplementedError("einops layers for ember: use einops.layers.torch under ember.testing.torch_alias "
                                  "(docs/torch_alias.md)")

    def einsum(self, pattern, *x):
        return ops.einsum(pattern, *x)
