"""Memory layouts (``ember.strided``, ``ember.sparse_coo``) and what marks a sparse tensor.

A sparse COO tensor is a plain :class:`ember.Tensor` whose ``_storage`` is a :class:`SparseParts`
(its indices, values and coalesced flag, in place of a buffer) and whose ``_device`` is the
*sparse variant* of its device: a device object equal to the dense one (``t.device == 'cpu'``)
whose kernel table is a :class:`SparseKernels`. That table is PyTorch's ``SparseCPU`` dispatch key:
dispatch looks kernels up in it as in any backend's table, finds the few sparse implementations
:mod:`ember.ops.sparse` registers, and for every other op a kernel that raises PyTorch's
"Could not run 'aten::<op>' with arguments from the 'SparseCPU' backend". So the dense path pays
nothing for sparse tensors: refusing is a table lookup that happens anyway. A sparse tensor that
reaches a dense kernel as a second operand (``dense + sparse``) is refused when the kernel reads its
buffer: :class:`SparseParts` has none, and says so.
"""
from __future__ import annotations

from ._device import device as _device_cls

__all__ = ["layout", "strided", "sparse_coo", "SparseParts", "SparseKernels", "sparse_device"]


class layout:
    """A memory layout, as ``torch.layout``: ``ember.strided`` (dense) or ``ember.sparse_coo``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return _layout_named, (self.name,)


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _layout_named(name: str) -> layout:
    return {"strided": strided, "sparse_coo": sparse_coo}[name]


_NO_STORAGE = ("a sparse_coo tensor was given to an op that needs a dense (strided) tensor: ember runs only the "
               "ops listed in docs/sparse.md on sparse tensors; convert it with .to_dense() first")


class SparseParts:
    """What a sparse COO tensor holds in place of a storage: ``indices`` (int64, sparse_dim x nnz),
    ``values`` (nnz x dense dims) and whether the indices are known to be coalesced. It has no
    buffer: a kernel that reads one (``_data``) gets a RuntimeError saying why."""

    __slots__ = ("indices", "values", "coalesced")

    def __init__(self, indices, values, coalesced: bool):
        self.indices = indices
        self.values = values
        self.coalesced = coalesced

    def __getattr__(self, name):
        raise RuntimeError(_NO_STORAGE)


def refusal(op_name: str, key: str):
    """The message PyTorch gives for an op without a kernel for a sparse dispatch key."""
    return (f"Could not run 'aten::{op_name}' with arguments from the '{key}' backend. ember supports the sparse "
            "COO operations listed in docs/sparse.md; convert with .to_dense() for the others.")


class SparseKernels(dict):
    """The kernel table of a sparse device variant: the sparse implementations registered by
    :mod:`ember.ops.sparse` (shared by every device: they are written in ember ops), and for any
    other op a kernel raising NotImplementedError. ``view`` answers view ops (which dispatch
    does not see) and ``grad`` runs an op whose inputs require grad (the implementations are
    differentiable compositions over the values, so they run with grad mode on)."""

    impls: dict = {}     # op name -> implementation(*kernel args)
    views: dict = {}     # view op name -> implementation(x, *view args)

    def __init__(self, key: str):
        super().__init__()
        self.key = key

    def get(self, name, default=None):
        f = self.impls.get(name)
        return f if f is not None else self._refuse(name)

    def __missing__(self, name):
        return self.get(name)

    def __contains__(self, name):
        return name in self.impls

    def _refuse(self, name):
        key = self.key

        def refuse(*args, **kwargs):
            raise NotImplementedError(refusal(name, key))
        return refuse

    def view(self, op, x, args):
        f = self.views.get(op.name)
        if f is None:
            raise NotImplementedError(refusal(op.name, self.key))
        return f(x, *args[1:])


_variants: dict = {}   # dense canonical device -> its sparse variant
_dense_of: dict = {}   # id(variant) -> dense canonical device


def sparse_device(dev) -> _device_cls:
    """The sparse variant of canonical device ``dev`` (cached): equal to it, printed as it, with
    the backend's ``_backend`` and a :class:`SparseKernels` table."""
    v = _variants.get(dev)
    if v is None or v._backend is not dev._backend:
        v = _device_cls(dev._type, dev._index)
        v._backend = dev._backend
        v._kernels = SparseKernels("Sparse" + ("CPU" if dev._type == "cpu" else dev._type.upper()))
        _variants[dev] = v
        _dense_of[id(v)] = dev
    return v


def dense_device(dev) -> _device_cls:
    """The canonical dense device of a device (itself for dense devices)."""
    return _dense_of.get(id(dev), dev)
