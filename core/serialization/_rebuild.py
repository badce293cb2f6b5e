"""The functions a checkpoint's pickle calls to rebuild tensors, ember's and PyTorch's, with every
argument checked: a file names them, so they must refuse what a well-formed file never holds
(an offset past the storage, a negative stride, requires_grad on an int tensor...)."""
from __future__ import annotations

import math
import operator

from .. import _dtype as D
from .._storage import UntypedStorage
from .._tensor import Tensor, _make
from ..nn.parameter import Parameter


class _BadFile(Exception):
    """Raised inside loading for a malformed file; ``load`` turns it into a RuntimeError naming it."""


def _parameter_class():
    """``ember.nn.Parameter`` (checkpoints may hold parameters)."""
    return Parameter


def _index(x, what: str) -> int:
    if isinstance(x, bool):
        raise _BadFile(f"{what} is a bool, expected an int")
    try:
        return operator.index(x)
    except TypeError:
        raise _BadFile(f"{what} is {type(x).__name__}, expected an int") from None


def _check_storage(storage) -> UntypedStorage:
    if not isinstance(storage, UntypedStorage):
        raise _BadFile(f"a tensor's storage is {type(storage).__name__}, not a storage of the file")
    return storage


def _check_geometry(storage: UntypedStorage, dtype, offset, size, stride) -> tuple:
    offset = _index(offset, "storage offset")
    if not isinstance(size, (tuple, list)) or not isinstance(stride, (tuple, list)) or len(size) != len(stride):
        raise _BadFile(f"tensor size {size!r} and stride {stride!r} do not match")
    size = tuple(_index(s, "a size") for s in size)
    stride = tuple(_index(s, "a stride") for s in stride)
    if offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise _BadFile(f"negative offset, size or stride: offset {offset}, size {size}, stride {stride}")
    if math.prod(size):
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if (last + 1) * dtype.itemsize > storage._nbytes:
            raise _BadFile(f"a {dtype} tensor of size {list(size)}, stride {list(stride)} and offset {offset} "
                           f"reaches past the end of its storage ({storage._nbytes} bytes)")
    return offset, size, stride


def _as_dtype(dtype):
    if dtype.__class__ is not D.dtype:
        raise _BadFile(f"expected a dtype, got {type(dtype).__name__}")
    return dtype


def _build(storage, dtype, offset, size, stride, requires_grad) -> Tensor:
    storage = _check_storage(storage)
    dtype = _as_dtype(dtype)
    offset, size, stride = _check_geometry(storage, dtype, offset, size, stride)
    t = _make(storage, size, stride, offset, dtype, storage._device)
    if requires_grad:
        if dtype.category != D._FLOAT:
            raise _BadFile(f"a {dtype} tensor is marked requires_grad (only floating point tensors can be)")
        t._requires_grad = True
    return t


def _rebuild_tensor_from_storage(storage, dtype, storage_offset, size, stride, requires_grad) -> Tensor:
    """A tensor of ember's format: a view of ``storage`` (``ember.save``'s rebuild function)."""
    return _build(storage, dtype, storage_offset, size, stride, bool(requires_grad))


def _as_subclass(t: Tensor, cls) -> Tensor:
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise _BadFile(f"{cls!r} is not a Tensor class")
    if cls is Tensor:
        return t
    from_alias = getattr(cls, "_from_alias", None)   # a subclass's own constructor (nn.Parameter)
    if from_alias is not None:
        return from_alias(t, t._requires_grad)
    t.__class__ = cls   # the idiom of ember's own constructors (subclasses add no slots)
    return t


def _set_state(t: Tensor, state) -> None:
    if not state:
        return
    setstate = getattr(type(t), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        setstate(t, state)
        return
    if not isinstance(state, dict):
        raise _BadFile(f"tensor state must be a dict, got {type(state).__name__}")
    t.__dict__.update(state)


def _rebuild_from_type(cls, args, state) -> Tensor:
    """A tensor subclass (e.g. ``nn.Parameter``) or a tensor with attributes, ember's format."""
    if not isinstance(args, tuple):
        raise _BadFile("tensor arguments must be a tuple")
    t = _as_subclass(_rebuild_tensor_from_storage(*args), cls)
    _set_state(t, state)
    return t


def _make_parameter(data, requires_grad, state=None) -> Tensor:
    if not isinstance(data, Tensor):
        raise _BadFile(f"a Parameter's data is {type(data).__name__}, not a tensor")
    requires_grad = bool(requires_grad)
    if requires_grad and data._dtype.category != D._FLOAT:
        raise _BadFile(f"a {data._dtype} Parameter is marked requires_grad")
    param = _parameter_class()
    if param is not None:
        p = param(data, requires_grad)
    else:   # ember.nn not available: the data, a leaf with the flag
        p = data
        p._requires_grad = requires_grad
    _set_state(p, state)
    return p


def _make_parameter_v1(data, requires_grad, backward_hooks=None):
    return _make_parameter(data, requires_grad)


def _make_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _make_parameter(data, requires_grad, state)


def _torch_from_type_v2(func, new_type, args, state):
    if not callable(func) or not isinstance(args, tuple):
        raise _BadFile("malformed torch._tensor._rebuild_from_type_v2 record")
    t = func(*args)
    if not isinstance(t, Tensor):
        raise _BadFile(f"torch._tensor._rebuild_from_type_v2 built a {type(t).__name__}, not a tensor")
    if type(t) is not new_type:
        t = _as_subclass(t, new_type)
    _set_state(t, state)
    return t


def _torch_from_type(func, new_type, args, dict_):
    return _torch_from_type_v2(func, new_type, args, dict_)



# the format names these two as ember.serialization.<name> (a stable path, whatever the file layout)
_rebuild_tensor_from_storage.__module__ = "ember.serialization"
_rebuild_from_type.__module__ = "ember.serialization"
