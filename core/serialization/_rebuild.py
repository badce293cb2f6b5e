"""The functions a checkpoint's pickle calls to rebuild tensors, ember's and PyTorch's, with every
argument checked: a file names them, so they must refuse what a well-formed file never holds
(an offset past the storage, a negative stride, requires_grad on an int tensor...)."""
from __future__ import annotations

import math
import operator
import types

from .. import _dtype as D
from .._storage import UntypedStorage
from .._tensor import Tensor, _make
from ..nn import functional as _nn_functional
from ..nn import modules as _nn_modules
from ..nn.parameter import Parameter
from ._errors import _BadFile


#: what ember itself keeps in a tensor's ``__dict__``: a file may not set these
_EMBER_TENSOR_DICT = frozenset({"_inference", "_post_accumulate_hooks"})


class _ClassRef:
    """A tensor class a file names under ``weights_only=True`` (``ember.Tensor``, ``nn.Parameter``):
    the rebuild functions take it as the type to build, but the file cannot call it (``Tensor(n)``
    would allocate ``n`` elements) nor ``__new__`` it (a tensor without storage)."""

    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls

    def __repr__(self) -> str:
        return f"<class {self.cls.__module__}.{self.cls.__qualname__}>"

    def __call__(self, *args, **kwargs):
        raise _BadFile(f"the pickle calls {self.cls.__module__}.{self.cls.__qualname__}(...): a tensor class is "
                       "admitted only as the type a tensor is rebuilt as (calling it would allocate what the file "
                       "says)")


def _parameter_class():
    """``ember.nn.Parameter`` (checkpoints may hold parameters)."""
    return Parameter


def _torch_layer_class(module: str, name: str):
    """ember's layer for PyTorch's ``torch.nn.modules.<file>.<Name>`` (the path a whole pickled
    PyTorch model names: ``torch.nn.modules.linear.Linear`` is ``ember.nn.modules.linear.Linear``),
    or None where ember has no such file or class. Only ``ember.nn.Module`` subclasses answer."""
    if not module.startswith("torch.nn.modules."):
        return None
    sub = getattr(_nn_modules, module[len("torch.nn.modules."):], None)
    if not isinstance(sub, types.ModuleType) or not sub.__name__.startswith("ember.nn.modules."):
        return None
    cls = getattr(sub, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, _nn_modules.Module) else None


def _torch_functional(module: str, name: str):
    """ember's ``nn.functional.<name>`` for PyTorch's (a layer's ``activation=F.relu`` pickles it),
    or None."""
    if module != "torch.nn.functional" or name.startswith("_"):
        return None
    fn = getattr(_nn_functional, name, None)
    return fn if isinstance(fn, types.FunctionType) else None


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
        if dtype.category < D._FLOAT:
            raise _BadFile(f"a {dtype} tensor is marked requires_grad (only floating point tensors can be)")
        t._requires_grad = True
    return t


def _rebuild_tensor_from_storage(storage, dtype, storage_offset, size, stride, requires_grad) -> Tensor:
    """A tensor of ember's format: a view of ``storage`` (``ember.save``'s rebuild function)."""
    return _build(storage, dtype, storage_offset, size, stride, bool(requires_grad))


def _as_subclass(t: Tensor, cls) -> Tensor:
    if cls.__class__ is _ClassRef:
        cls = cls.cls
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise _BadFile(f"{cls!r} is not a Tensor class")
    if cls is Tensor:
        return t
    from_alias = getattr(cls, "_from_alias", None)   # a subclass's own constructor (nn.Parameter)
    if from_alias is not None:
        return from_alias(t, t._requires_grad)
    t.__class__ = cls   # the idiom of ember's own constructors (subclasses add no slots)
    return t


def _checked_attributes(obj, state) -> dict:
    """The attributes ``state`` sets on ``obj`` (a tensor, or an OrderedDict's ``_metadata``): only
    the object's own attributes, never a name its class defines (a method such as ``numpy`` or
    ``__add__``, a property, a slot such as ``_storage``) nor ember's bookkeeping."""
    if isinstance(state, tuple) and len(state) == 2:   # (dict state, slot state): pickle's and torch's form
        state, slots = state
        if slots:
            raise _BadFile(f"the file sets slots {sorted(map(str, slots))!r:.80} of a {type(obj).__name__}: "
                           "not state a checkpoint holds")
    if state is None:
        return {}
    if type(state) is not dict:
        raise _BadFile(f"the state of a {type(obj).__name__} must be a dict, got {type(state).__name__}")
    cls = type(obj)
    for k in state:
        if type(k) is not str or not k.isidentifier():
            raise _BadFile(f"the state of a {cls.__name__} has the key {k!r:.60}, not an attribute name")
        if k.startswith("__") or hasattr(cls, k) or k in _EMBER_TENSOR_DICT:
            raise _BadFile(f"the file sets {k!r} on a {cls.__name__}, which is not state a checkpoint may set "
                           f"(it is a name {cls.__name__} itself defines)")
    return state


def _set_state(t: Tensor, state) -> None:
    if not state:
        return
    setstate = getattr(type(t), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        setstate(t, state)   # a user's subclass (allowed by add_safe_globals) with its own state
        return
    t.__dict__.update(_checked_attributes(t, state))


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
    if requires_grad and data._dtype.category < D._FLOAT:
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
    if new_type.__class__ is _ClassRef:
        new_type = new_type.cls
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
