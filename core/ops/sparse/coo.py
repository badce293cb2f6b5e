"""Sparse COO tensors: construction (``sparse_coo_tensor``, ``Tensor.to_sparse``), ``to_dense``,
``coalesce`` and the accessors (``indices``, ``values``, ``_nnz``, ``sparse_dim``...).

A sparse tensor is an ``ember.Tensor`` whose storage is a :class:`~ember._layout.SparseParts`
(``indices``, ``values``, ``coalesced``) on the sparse variant of its device (see
:mod:`ember._layout`). Everything here is written in ordinary ember ops on the indices and values,
so it runs on every backend, and autograd reaches the values through those ops: the sparse
tensor's ``requires_grad`` and ``grad_fn`` are its values'. A leaf sparse tensor that requires
grad (``sparse_coo_tensor(...).requires_grad_()``) owns a values leaf, and its ``.grad`` is the
sparse tensor of that leaf's gradient at the tensor's (coalesced) indices, as PyTorch's.
"""
from __future__ import annotations

import math

from ... import _devices
from ... import _dtype as D
from ..._layout import SparseParts, dense_device, sparse_device
from ..._tensor import Tensor, _make
from .. import copy as CP
from .. import creation as CR
from .. import indexing as IX
from .. import reduction as R
from .. import shape as SH

__all__ = ["sparse_coo_tensor", "make_sparse", "is_sparse", "to_dense", "to_sparse", "coalesce", "is_coalesced",
           "indices", "values", "raw_indices", "raw_values", "nnz", "sparse_dim", "dense_dim", "linear_index",
           "sparse_to"]


def is_sparse(t) -> bool:
    return isinstance(t, Tensor) and t._storage.__class__ is SparseParts


def make_sparse(indices: Tensor, values: Tensor, size, coalesced: bool) -> Tensor:
    """The sparse tensor of ``indices`` (int64, sparse_dim x nnz) and ``values`` (nnz x dense
    dims) with shape ``size``, unchecked. Its autograd fields are its values'."""
    t = _make(SparseParts(indices, values, coalesced), tuple(size), _strides(size), 0, values._dtype,
              sparse_device(values._device))
    t._requires_grad = values._requires_grad
    t._grad_fn = values._grad_fn
    return t


def _strides(size):
    out, acc = [], 1
    for s in reversed(tuple(size)):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def _parts(t: Tensor, op: str) -> SparseParts:
    if t._storage.__class__ is not SparseParts:
        raise RuntimeError(f"{op} expected sparse coordinate tensor layout but got Strided")
    return t._storage


def sparse_coo_tensor(indices, values=None, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None) -> Tensor:
    """A sparse COO tensor with ``values[i]`` at ``indices[:, i]`` (duplicates add up), as
    ``torch.sparse_coo_tensor``; ``sparse_coo_tensor(size)`` is an empty one."""
    if values is None:
        if isinstance(indices, (tuple, list)) and all(isinstance(s, int) for s in indices):
            size, indices = tuple(indices), None
        else:
            raise TypeError("sparse_coo_tensor() missing required argument 'values'")
    dev = None if device is None else _devices.canonical(device)
    if indices is None:
        dt = dtype or D.get_default_dtype()
        d = dev or _devices.canonical(CR.zeros(0).device)
        return make_sparse(CR.zeros(len(size), 0, dtype=D.int64, device=d), CR.zeros(0, dtype=dt, device=d), size,
                           True)
    if not isinstance(values, Tensor):
        values = CR.tensor(values, dtype=dtype, device=dev)
    if not isinstance(indices, Tensor):
        indices = CR.tensor(indices, dtype=D.int64, device=dev or dense_device(values._device))
    if dev is not None and values._device != dev:
        values = values.to(dev)
    if dtype is not None and values._dtype is not D.to_dtype(dtype):
        values = values.to(D.to_dtype(dtype))
    if indices._device != values._device:
        indices = indices.to(dense_device(values._device))
    if indices._dtype is not D.int64:
        indices = indices.to(D.int64)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices._shape)}")
    if values.dim() < 1:
        raise RuntimeError("values must have at least one dimension (nnz)")
    sd, n = indices._shape
    if values._shape[0] != n:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {n}, nnz from "
                           f"values: {values._shape[0]}")
    if values._requires_grad:
        vals = values
    else:
        vals = values.detach()
    idx = indices.detach()
    if size is None:
        if n == 0:
            raise RuntimeError("sparse_coo_tensor(): cannot infer the size of a tensor with no entries; give size")
        size = tuple(int(m) + 1 for m in R.amax(idx, 1).tolist()) + tuple(values._shape[1:])
        check_invariants = True if check_invariants is None else check_invariants
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sd + values.dim() - 1:
            raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim ({values.dim() - 1}), "
                               f"but got {len(size)}")
        if tuple(size[sd:]) != tuple(values._shape[1:]):
            raise RuntimeError(f"values has incorrect size, expected {[n, *size[sd:]]}, got {list(values._shape)}")
    if check_invariants and n:
        lo = R.amin(idx, 1).tolist()
        hi = R.amax(idx, 1).tolist()
        for d in range(sd):
            if lo[d] < 0:
                raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
            if hi[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {hi[d]}")
    t = make_sparse(idx, vals, size, bool(is_coalesced) or n <= 1)
    if requires_grad:
        t.requires_grad_(True)
    return t


def linear_index(indices: Tensor, sizes) -> Tensor:
    """Row-major linear positions of COO ``indices`` in a tensor of shape ``sizes`` (sparse dims)."""
    lin = None
    for d, s in enumerate(sizes):
        row = indices[d]
        lin = row if lin is None else lin * s + row
    return lin if lin is not None else CR.zeros(indices._shape[1], dtype=D.int64, device=indices._device)


def _unravel(lin: Tensor, sizes) -> Tensor:
    rows = []
    for s in reversed(tuple(sizes)):
        rows.append(lin % s)
        lin = lin.div(s, rounding_mode="floor")
    return SH.stack(rows[::-1]) if rows else CR.zeros(0, lin._shape[0], dtype=D.int64, device=lin._device)


def coalesce(self: Tensor) -> Tensor:
    """Duplicate indices summed, indices sorted (a new tensor; ``self`` when already coalesced)."""
    p = _parts(self, "coalesce")
    if p.coalesced:
        return self
    sd = p.indices._shape[0]
    sizes = self._shape[:sd]
    uniq, inv = IX.unique(linear_index(p.indices, sizes), sorted=True, return_inverse=True)
    vals = CR.zeros((uniq._shape[0],) + tuple(p.values._shape[1:]), dtype=p.values._dtype,
                    device=p.values._device).index_add(0, inv, p.values)
    return make_sparse(_unravel(uniq, sizes), vals, self._shape, True)


def is_coalesced(self: Tensor) -> bool:
    return _parts(self, "is_coalesced").coalesced


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """The dense (strided) tensor; duplicates add up (differentiable to the values)."""
    if self._storage.__class__ is not SparseParts:
        return self if dtype is None else self.to(dtype)
    p = self._storage
    sd = p.indices._shape[0]
    sizes = self._shape[:sd]
    flat = CR.zeros((math.prod(sizes),) + tuple(p.values._shape[1:]), dtype=p.values._dtype,
                    device=p.values._device)
    out = flat.index_add(0, linear_index(p.indices, sizes), p.values).reshape(self._shape)
    return out if dtype is None else out.to(dtype)


def to_sparse(self: Tensor, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """This tensor in COO layout (its nonzero entries; differentiable), ``sparse_dim`` leading
    dims sparse (all by default)."""
    if layout is not None and repr(layout) not in ("ember.sparse_coo", "sparse_coo"):
        raise RuntimeError(f"to_sparse: ember supports the sparse_coo layout only, got {layout}")
    if self._storage.__class__ is SparseParts:
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion between sparse dims is not supported")
        return self
    nd = self.dim()
    sd = nd if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"sparse_dim {sd} must be in [0, {nd}]")
    mask = CP.cast(self != 0, D.bool)
    if sd < nd:
        mask = mask.any(dim=tuple(range(sd, nd)))
    idx = IX.nonzero(mask).t() if sd else CR.zeros(0, 1, dtype=D.int64, device=self._device)
    sizes = self._shape[:sd]
    flat = self.reshape((math.prod(sizes),) + tuple(self._shape[sd:]))
    vals = flat.index_select(0, linear_index(idx, sizes)) if sd else flat
    return make_sparse(idx.contiguous(), vals, self._shape, True)


def indices(self: Tensor) -> Tensor:
    p = _parts(self, "indices")
    if not p.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return p.indices


def values(self: Tensor) -> Tensor:
    if self._storage.__class__ is not SparseParts:
        raise RuntimeError("values expected sparse tensor layout but got Strided")
    p = self._storage
    if not p.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return p.values


def raw_indices(self: Tensor) -> Tensor:
    """``Tensor._indices()``: the indices, coalesced or not."""
    return _parts(self, "_indices").indices


def raw_values(self: Tensor) -> Tensor:
    """``Tensor._values()``: the values, coalesced or not."""
    if self._storage.__class__ is not SparseParts:
        raise RuntimeError("values expected sparse tensor layout but got Strided")
    return self._storage.values


def nnz(self: Tensor) -> int:
    if self._storage.__class__ is not SparseParts:
        raise NotImplementedError("Could not run 'aten::_nnz' with arguments from the 'CPU' backend (a dense tensor)")
    return self._storage.values._shape[0]


def sparse_dim(self: Tensor) -> int:
    return self._storage.indices._shape[0] if self._storage.__class__ is SparseParts else 0


def dense_dim(self: Tensor) -> int:
    return self._storage.values.dim() - 1 if self._storage.__class__ is SparseParts else self.dim()


def sparse_to(self: Tensor, dtype, dev, copy: bool) -> Tensor:
    """``Tensor.to`` of a sparse tensor: its indices and values moved/cast."""
    p = self._storage
    vals = p.values if dtype is p.values._dtype else p.values.to(dtype)
    vals = vals if dev == vals._device else vals.to(dev)
    idx = p.indices if dev == p.indices._device else p.indices.to(dev)
    if vals is p.values and idx is p.indices:
        if not copy:
            return self
        vals, idx = vals.clone(), idx.clone()
    return make_sparse(idx, vals, self._shape, p.coalesced)


# -- autograd fields of a sparse tensor: its values' ------------------------------------------

def _detached(parts: SparseParts, t: Tensor) -> Tensor:
    return make_sparse(parts.indices, parts.values.detach(), t._shape, parts.coalesced)


def _grad_of(parts: SparseParts, t: Tensor):
    g = parts.values._grad
    if g is None:
        return None
    cached = t.__dict__.get("_sparse_grad")
    if cached is not None and cached[0] is g:
        return cached[1]
    if parts.coalesced:
        out = make_sparse(parts.indices, g, t._shape, True)
    else:  # the gradient at each distinct position, as PyTorch's (duplicates carry equal values)
        sd = parts.indices._shape[0]
        uniq, inv = IX.unique(linear_index(parts.indices, t._shape[:sd]), sorted=True, return_inverse=True)
        vals = CR.zeros((uniq._shape[0],) + tuple(g._shape[1:]), dtype=g._dtype, device=g._device)
        out = make_sparse(_unravel(uniq, t._shape[:sd]), vals.index_copy(0, inv, g), t._shape, True)
    t.__dict__["_sparse_grad"] = (g, out)
    return out


def _set_grad(parts: SparseParts, t: Tensor, value) -> None:
    if value is None:
        parts.values._grad = None
        return
    if value._storage.__class__ is not SparseParts or value._storage.values._shape != parts.values._shape:
        raise RuntimeError("ember: the grad of a sparse tensor can be set to None or to a sparse tensor with the "
                           "same number of entries only")
    parts.values._grad = value._storage.values


SparseParts.detached = _detached
SparseParts.grad_of = _grad_of
SparseParts.set_grad = _set_grad
