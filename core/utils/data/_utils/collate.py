"""Collation: turning a list of samples into a batch (:func:`default_collate`), and converting one
sample without batching (:func:`default_convert`).

Type rules (PyTorch's): tensors are stacked along a new first dimension; numpy arrays become
tensors and are stacked; python floats become a float64 tensor, ints an int64 tensor (bools a
bool tensor); numpy scalars a tensor of their dtype; str and bytes stay a list; mappings,
namedtuples and sequences are collated field by field (tuples become lists, as in PyTorch).

Inside a DataLoader worker, stacked tensors are written straight into shared memory, which is how
the batch reaches the main process without another copy (see :mod:`.shm`).
"""
from __future__ import annotations

import collections.abc
import copy
import re
from typing import Callable

import numpy as np

from .... import _dtype as D
from .... import ops
from ...._tensor import Tensor
from ....ops.creation import as_tensor, tensor
from .shm import stack_shared, using_shm
from .worker import get_worker_info

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _as_tensor(x):
    return as_tensor(x)


def default_convert(data):
    """Convert each numpy array (and numpy scalar) in ``data`` into a tensor, recursing into
    mappings, namedtuples and sequences; everything else is returned unchanged. The collate
    function of a DataLoader without automatic batching (``batch_size=None``).

    >>> default_convert({"x": np.array([0, 1]), "name": "a"})
    {'x': tensor([0, 1]), 'name': 'a'}
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ in ("ndarray", "memmap") and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # as PyTorch
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate ``batch`` (a list of samples) by the type of its first element.

    ``collate_fn_map`` maps a type (or a tuple of types) to a function
    ``fn(batch, *, collate_fn_map)``; an exact type match wins, then the first ``isinstance``
    match in insertion order. Mappings, namedtuples and sequences are walked recursively.
    """
    if len(batch) == 0:
        raise IndexError("default_collate: got an empty batch (the sampler or batch_sampler yielded an empty list)")
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        def _field(key):
            try:
                return collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
            except KeyError:
                missing = next(i for i, d in enumerate(batch) if key not in d)
                raise KeyError(f"default_collate: sample {missing} of the batch has no key {key!r} that sample 0 "
                               "has") from None
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: _field(key) for key in elem})
                return clone
            return elem_type({key: _field(key) for key in elem})
        except TypeError:
            return {key: _field(key) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        elem_size = len(elem)
        for i, e in enumerate(batch):
            if len(e) != elem_size:
                raise RuntimeError(
                    f"each element in list of batch should be of equal size (sample 0 has {elem_size} elements, "
                    f"sample {i} has {len(e)})")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]  # as PyTorch
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map: dict | None = None):
    """Stack tensors along a new first dimension (into shared memory inside a worker)."""
    if get_worker_info() is not None and using_shm():
        out = stack_shared(batch)
        if out is not None:
            return out
    try:
        return ops.stack(batch, 0)
    except RuntimeError as e:
        shapes = {tuple(t.shape) for t in batch if isinstance(t, Tensor)}
        if len(shapes) > 1:
            raise RuntimeError(f"default_collate: {e}. Samples of different sizes need padding or a custom "
                               "collate_fn") from None
        raise


def collate_numpy_array_fn(batch, *, collate_fn_map: dict | None = None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: dict | None = None):
    return _as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map: dict | None = None):
    return tensor(batch, dtype=D.float64)


def collate_int_fn(batch, *, collate_fn_map: dict | None = None):
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: dict | None = None):
    return batch


default_collate_fn_map: dict[type | tuple, Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Put a list of samples into a batch with a new outer dimension (the default ``collate_fn``
    of a DataLoader with ``batch_size`` set).

    >>> default_collate([0, 1, 2])
    tensor([0, 1, 2])
    >>> default_collate([(0, "a"), (1, "b")])
    [tensor([0, 1]), ['a', 'b']]
    >>> default_collate([{"x": 1.5}, {"x": 2.5}])
    {'x': tensor([1.5000, 2.5000], dtype=ember.float64)}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
