"""The save side: picklers that turn tensors into rebuild calls and storages into persistent ids
(``('storage', <type>, <key>, <location>, <numel>)``), collecting each storage once."""
from __future__ import annotations

import collections
import pickle

from .. import _dtype as D
from .._device import device as _device_cls
from .._layout import SparseParts
from .._storage import UntypedStorage
from .._tensor import Size, Tensor
from ._globals import _TORCH_STORAGE
from ._rebuild import _parameter_class, _rebuild_from_type, _rebuild_tensor_from_storage


class _StorageRef:
    """A storage as one tensor sees it (with that tensor's dtype): what persistent_id receives."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage: UntypedStorage, dtype):
        self.storage = storage
        self.dtype = dtype


class _TwoDtypes(RuntimeError):
    """One storage is viewed as two dtypes: PyTorch's format (one dtype per storage) cannot hold it."""


class _StorageTable:
    """The storages met while pickling, each given a key once (shared storages are written once)."""

    def __init__(self, torch_format: bool):
        self.torch_format = torch_format
        self.keys: dict = {}      # id(storage) -> key
        self.entries: list = []   # (key, storage, dtype the bytes are read and recorded as)

    def pid_parts(self, storage: UntypedStorage, dtype) -> tuple:
        """``(key, dtype, numel, location)``; ``dtype`` None for a bare storage (bytes)."""
        key = self.keys.get(id(storage))
        want = D.uint8 if dtype is None else dtype
        if key is None:
            key = str(len(self.entries))
            self.keys[id(storage)] = key
            rec = want if storage._nbytes % want.itemsize == 0 else D.uint8
            self.entries.append((key, storage, rec))
        rec = self.entries[int(key)][2]
        if self.torch_format and rec is not want:
            raise _TwoDtypes(
                f"ember.save(format='torch'): one storage is viewed as {rec} and as {want}; PyTorch's format "
                "records one dtype per storage. Save with format='ember', or .clone() one of the tensors.")
        return key, rec, storage._nbytes // rec.itemsize, str(storage._device)


def _tensor_state(t: Tensor) -> dict:
    """User attributes of a tensor (its ``__dict__`` minus ember's runtime bookkeeping)."""
    d = t.__dict__
    if not d:
        return {}
    return {k: v for k, v in d.items() if k not in ("_post_accumulate_hooks", "_inference")}


_SPARSE = ("ember.save does not write sparse tensors yet: save t._indices(), t._values() and t.shape, and rebuild "
           "with ember.sparse_coo_tensor (plain pickle of a sparse tensor works)")


class _EmberPickler(pickle.Pickler):
    """The C pickler with tensors reduced to ember's rebuild functions and storages as ids."""

    def __init__(self, file, protocol: int, table: _StorageTable):
        super().__init__(file, protocol)
        self._table = table

    def persistent_id(self, obj):
        cls = obj.__class__
        if cls is _StorageRef:
            key, dt, numel, loc = self._table.pid_parts(obj.storage, obj.dtype)
        elif cls is UntypedStorage:
            key, dt, numel, loc = self._table.pid_parts(obj, None)
        else:
            return None
        return ("storage", dt.name, key, loc, numel)

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            if obj._storage.__class__ is SparseParts:
                raise RuntimeError(_SPARSE)
            args = (_StorageRef(obj._storage, obj._dtype), obj._dtype, obj._offset, tuple(obj._shape),
                    tuple(obj._stride), obj._requires_grad)
            state = _tensor_state(obj)
            if type(obj) is Tensor and not state:
                return _rebuild_tensor_from_storage, args
            return _rebuild_from_type, (type(obj), args, state)
        return NotImplemented


class _TorchName:
    """A global written under a PyTorch name (``torch._utils._rebuild_tensor_v2``); saving never
    imports torch, so these are written as GLOBAL opcodes directly."""

    _cache: dict = {}
    __slots__ = ("module", "name")

    def __new__(cls, module: str, name: str):
        k = (module, name)
        obj = cls._cache.get(k)
        if obj is None:
            obj = object.__new__(cls)
            obj.module, obj.name = module, name
            cls._cache[k] = obj
        return obj

    def __call__(self, *args):  # pragma: no cover - never called; pickle wants reduce funcs callable
        raise TypeError(f"{self.module}.{self.name} is a placeholder for PyTorch's function")


class _PlainTensor:
    """The ``data`` of a Parameter in torch format (a tensor pickled without its subclass)."""

    __slots__ = ("t",)

    def __init__(self, t: Tensor):
        self.t = t


class _TorchPickler(pickle._Pickler):
    """Pure-Python pickler (protocol 2) writing PyTorch's global names: ``ember.save``'s default and
    ``format="torch"``. A Tensor subclass other than Parameter is written as itself by default
    (``torch._tensor._rebuild_from_type_v2`` with the subclass, as ``torch.save`` writes one), and as
    ``torch.Tensor`` with ``format="torch"`` (PyTorch has no such class)."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol: int, table: _StorageTable, keep_subclasses: bool = False):
        super().__init__(file, protocol)
        self._table = table
        self._keep_subclasses = keep_subclasses

    def _save_torch_name(self, obj: _TorchName) -> None:
        self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    def _save_dtype(self, obj) -> None:
        self._save_torch_name(_TorchName("torch", obj.name))

    dispatch[_TorchName] = _save_torch_name
    dispatch[D.dtype] = _save_dtype

    def persistent_id(self, obj):
        cls = obj.__class__
        if cls is _StorageRef:
            key, dt, numel, loc = self._table.pid_parts(obj.storage, obj.dtype)
            return ("storage", _TorchName("torch", _TORCH_STORAGE[dt]), key, loc, numel)
        if cls is UntypedStorage:
            key, dt, numel, loc = self._table.pid_parts(obj, None)
            return ("storage", _TorchName("torch", "UntypedStorage"), key, loc, numel)
        return None

    def reducer_override(self, obj):
        cls = obj.__class__
        if cls is _PlainTensor:
            return self._tensor_v2(obj.t)
        if isinstance(obj, Tensor):
            if obj._storage.__class__ is SparseParts:
                raise RuntimeError(_SPARSE)
            state = _tensor_state(obj)
            param = _parameter_class()
            if param is not None and isinstance(obj, param):
                hooks = collections.OrderedDict()
                if state:
                    return (_TorchName("torch._utils", "_rebuild_parameter_with_state"),
                            (_PlainTensor(obj), obj._requires_grad, hooks, state))
                return _TorchName("torch._utils", "_rebuild_parameter"), (_PlainTensor(obj), obj._requires_grad, hooks)
            if state or cls is not Tensor:
                # other Tensor subclasses have no PyTorch name: as themselves, or as torch.Tensor
                fn, args = self._tensor_v2(obj)
                kind = cls if self._keep_subclasses and cls is not Tensor else _TorchName("torch", "Tensor")
                return _TorchName("torch._tensor", "_rebuild_from_type_v2"), (fn, kind, args, state)
            return self._tensor_v2(obj)
        if cls is _device_cls:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return _TorchName("torch", "device"), args
        if cls is Size:
            return _TorchName("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _tensor_v2(self, t: Tensor) -> tuple:
        return (_TorchName("torch._utils", "_rebuild_tensor_v2"),
                (_StorageRef(t._storage, t._dtype), t._offset, tuple(t._shape), tuple(t._stride),
                 t._requires_grad, collections.OrderedDict()))


def _custom_pickler(pickle_module):
    """An ``_EmberPickler`` over another pickle module's Pickler (``dill``...)."""
    base = pickle_module.Pickler

    class P(base):
        def __init__(self, file, protocol, table):
            base.__init__(self, file, protocol)
            self._table = table

        persistent_id = _EmberPickler.persistent_id
        reducer_override = _EmberPickler.reducer_override
    return P

