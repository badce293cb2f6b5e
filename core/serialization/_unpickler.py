"""The load side: one unpickler per ``load`` that resolves globals (restricted by default),
reads each storage when the pickle first names it and places it where ``map_location`` says."""
from __future__ import annotations

import _compat_pickle
import collections
import io
import pickle
import struct
import sys
from typing import Callable

import numpy as np

from .. import _dtype as D
from .._device import device as _device_cls
from .._storage import UntypedStorage
from .._tensor import Tensor
from ._archive import _Archive
from ._globals import (_SAFE_GLOBALS, _STORAGE_TYPES, _TORCH_DTYPE_ALIASES, _TORCH_UNSUPPORTED_DTYPES,
                       _TORCH_UNSUPPORTED_FUNCS, _safe_device, _safe_size, _StorageType, _user_safe_by_name)
from ._errors import CheckpointError, _BadFile
from ._rebuild import (_as_dtype, _build, _checked_attributes, _ClassRef, _index, _make_parameter_v1,
                       _make_parameter_with_state, _parameter_class, _set_state, _torch_from_type, _torch_from_type_v2,
                       _torch_functional, _torch_layer_class)
from .. import _devices


class _Loader:
    """One ``load`` call: the archive, ``map_location``, the storages read so far, and the globals
    the file may use."""

    def __init__(self, archive: _Archive | None, name: str, map_location, weights_only: bool):
        self.archive, self.name, self.weights_only = archive, name, weights_only
        self.storages: dict = {}
        self.passthrough = None        # an error raised for a reason other than the file (map_location...)
        self.dtype_of: dict = {}       # id(storage) -> dtype, for PyTorch's typed storages
        self.devices: dict = {}
        self.swap = archive is not None and archive.byteorder != sys.byteorder
        self.map_location = _normalise_map_location(map_location)
        self.user_safe = _user_safe_by_name() if weights_only else {}
        self.torch_funcs = {
            "torch._utils._rebuild_tensor_v2": self._torch_v2,
            "torch._utils._rebuild_tensor": self._torch_v1,
            "torch._utils._rebuild_tensor_v3": self._torch_v3,
            "torch._utils._rebuild_parameter": _make_parameter_v1,
            "torch._utils._rebuild_parameter_with_state": _make_parameter_with_state,
            "torch._tensor._rebuild_from_type_v2": _torch_from_type_v2,
            "torch._tensor._rebuild_from_type": _torch_from_type,
        }

    def close(self) -> None:
        """Drop what this load holds (its bound methods make it a cycle: without this, the loaded
        storages would live until the garbage collector runs)."""
        self.storages.clear()
        self.dtype_of.clear()
        self.torch_funcs.clear()
        self.archive = None
        self.passthrough = None

    # -- globals ------------------------------------------------------------------------------------
    def find_class(self, module: str, name: str, default: Callable):
        obj = self._find_class(module, name, default)
        if self.weights_only and isinstance(obj, type) and issubclass(obj, Tensor):
            return _ClassRef(obj)   # a type to rebuild as, never called by the file
        return obj

    def _find_class(self, module: str, name: str, default: Callable):
        # protocol <= 2 pickles name Python 2 modules (__builtin__.set); map them as pickle does
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if module == "torch" or module.startswith("torch."):
            return self._torch_global(module, name, full)
        if module == "ember.nn.parameter" or (module.startswith("ember.") and name == "Parameter"):
            param = _parameter_class()
            if param is not None and f"{param.__module__}.{param.__qualname__}" == full:
                return param
        if self.weights_only:
            obj = _SAFE_GLOBALS.get(full)
            if obj is None:
                obj = self.user_safe.get(full)
            if obj is None:
                raise CheckpointError(_refusal(self.name, full))
            return obj
        return default(module, name)

    def _torch_global(self, module: str, name: str, full: str):
        obj = self.torch_funcs.get(full)
        if obj is not None:
            return obj
        if module in ("torch", "torch.cuda", "torch.storage") and name in _STORAGE_TYPES:
            return _STORAGE_TYPES[name]
        if module == "torch":
            dt = D._BY_NAME.get(name) if name in D._BY_NAME and name not in _TORCH_DTYPE_ALIASES else None
            dt = dt or _TORCH_DTYPE_ALIASES.get(name)
            if dt is not None:
                return dt
            if name in _TORCH_UNSUPPORTED_DTYPES:
                raise CheckpointError(f"ember.load({self.name}): the file holds PyTorch dtype torch.{name}, "
                                             "which ember does not support")
            if name == "Size":
                return _safe_size
            if name == "device":
                return _safe_device
            if name == "Tensor":
                return Tensor
        if full == "torch.nn.parameter.Parameter":
            return _parameter_class() or Tensor
        if full in _TORCH_UNSUPPORTED_FUNCS:
            raise CheckpointError(f"ember.load({self.name}): the file holds PyTorch "
                                         f"{_TORCH_UNSUPPORTED_FUNCS[full]} ({full}), which ember does not support")
        if self.weights_only and full in self.user_safe:
            return self.user_safe[full]
        layer = _torch_layer_class(module, name)
        if layer is not None:  # a whole PyTorch model: its layers are ember's (weights_only: if allowed)
            ember_full = f"{layer.__module__}.{layer.__qualname__}"
            if not self.weights_only or ember_full in self.user_safe:
                return layer
            raise CheckpointError(_refusal(self.name, full).replace(f"add_safe_globals([{full}])",
                                                                    f"add_safe_globals([{ember_full}])")
                                  + " (For a whole PyTorch model, its state_dict() is the portable file.)")
        fn = None if self.weights_only else _torch_functional(module, name)
        if fn is not None:
            return fn
        raise CheckpointError(
            f"ember.load({self.name}): the file pickles the PyTorch object '{full}', which ember cannot rebuild. "
            "ember loads PyTorch tensors, state dicts and containers of them; for a whole PyTorch model, save its "
            "state_dict() with torch.save and load that into the ember model with load_state_dict.")

    # -- storages -----------------------------------------------------------------------------------
    def persistent_load(self, pid):
        if type(pid) is not tuple or len(pid) != 5 or _ascii(pid[0]) != "storage":
            raise _BadFile(f"unknown persistent id {pid!r:.80}")
        _, stype, key, location, numel = pid
        key, location = _ascii(key), _ascii(location)
        if stype.__class__ is _StorageType:
            dtype = stype.dtype
        elif type(stype) is str and stype in D._BY_NAME:
            dtype = D._BY_NAME[stype]
        else:
            raise _BadFile(f"unknown storage type {stype!r:.80}")
        if not isinstance(key, str) or not isinstance(location, str):
            raise _BadFile(f"bad storage key or location {key!r:.40}, {location!r:.40}")
        numel = _index(numel, "a storage size")
        if numel < 0:
            raise _BadFile(f"negative storage size {numel}")
        st = self.storages.get(key)
        if st is None:
            st = self._load_storage(key, dtype, numel, location)
            self.storages[key] = st
            self.dtype_of[id(st)] = dtype
        return st

    def _load_storage(self, key: str, dtype, numel: int, location: str) -> UntypedStorage:
        host = self.archive.storage_bytes(key, numel * dtype.itemsize)
        if self.swap and dtype.itemsize > 1:
            host.view(f"u{dtype.itemsize}").byteswap(inplace=True)
        try:
            return self._place(host, dtype, key, location)
        except Exception as e:   # map_location's, the device's or the backend's error: not the file's
            self.passthrough = e
            raise

    def _place(self, host: np.ndarray, dtype, key: str, location: str) -> UntypedStorage:
        ml = self.map_location
        if callable(ml):
            st = self._to_device(host, dtype, self._device("cpu", location), key)
            res = ml(st, location)
            if res is None:
                return self._to_device(host, dtype, self._device(location, location), key)
            if isinstance(res, UntypedStorage):
                return res
            if isinstance(res, (str, _device_cls)):
                return self._to_device(host, dtype, self._device(str(res), location), key)
            raise TypeError(f"ember.load: map_location returned {type(res).__name__}; expected a storage, a device, "
                            "a device string or None")
        if ml is None:
            spec = location
        elif isinstance(ml, dict):
            spec = ml.get(location, location)
        else:
            spec = ml
        return self._to_device(host, dtype, self._device(spec, location), key)

    def _device(self, spec: str, location: str):
        dev = self.devices.get(spec)
        if dev is None:
            try:
                dev = _devices.canonical(spec)
            except (RuntimeError, TypeError, ValueError) as e:
                mapped = "" if spec == location else f" (map_location sent it to '{spec}')"
                # the file's own location (a CheckpointError: ember cannot read this file here), or
                # where map_location sent it (the caller's RuntimeError)
                raise (CheckpointError if spec == location else RuntimeError)(
                    f"ember.load({self.name}): a storage was saved on device '{location}'{mapped}, which is not "
                    f"available here: {e}\nIf the file comes from a machine with that device, load it onto one you "
                    "have, e.g. ember.load(f, map_location='cpu').") from None
            self.devices[spec] = dev
        return dev

    def _to_device(self, host: np.ndarray, dtype, dev, key: str) -> UntypedStorage:
        be = dev._backend
        try:
            be.check_dtype(dtype, "ember.load")
        except TypeError as e:
            raise RuntimeError(f"ember.load({self.name}): storage {key!r} holds {dtype}: {e}. Load it onto another "
                               "device with map_location.") from None
        # on cpu from_numpy adopts the buffer the bytes were read into: no second copy
        return be.from_numpy(host.view(dtype.np), dev)._storage

    # -- PyTorch's rebuild functions ------------------------------------------------------------------
    def _typed(self, storage):
        dt = self.dtype_of.get(id(storage)) if isinstance(storage, UntypedStorage) else None
        if dt is None:
            raise _BadFile("a PyTorch tensor refers to something that is not one of the file's storages")
        return dt

    def _torch_v2(self, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                  metadata=None):
        return _build(storage, self._typed(storage), storage_offset, size, stride, bool(requires_grad))

    def _torch_v1(self, storage, storage_offset, size, stride):
        return _build(storage, self._typed(storage), storage_offset, size, stride, False)

    def _torch_v3(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
        return _build(storage, _as_dtype(dtype), storage_offset, size, stride, bool(requires_grad))


def _ascii(x):
    return x.decode("ascii") if isinstance(x, bytes) else x


def _refusal(name: str, full: str) -> str:
    return (f"ember.load({name}) with weights_only=True refused the global '{full}': it is not an ember tensor, "
            "storage, dtype, device, Size, container or plain value, and loading it could run code from the file. "
            f"If you trust the source of this file, allow it with ember.serialization.add_safe_globals([{full}]) "
            "(or inside `with ember.serialization.safe_globals([...]):`), or load with weights_only=False, which "
            "runs any code the file contains.")


def _normalise_map_location(ml):
    if ml is None or callable(ml) and not isinstance(ml, (str, _device_cls)):
        return ml
    if isinstance(ml, (str, _device_cls)):
        return str(ml)
    if isinstance(ml, dict):
        out = {}
        for k, v in ml.items():
            if not isinstance(k, (str, _device_cls)) or not isinstance(v, (str, _device_cls)):
                raise TypeError(f"ember.load: map_location dict must map device strings or devices to devices, got "
                                f"{k!r}: {v!r}")
            out[str(k)] = str(v)
        return out
    raise TypeError(f"ember.load: map_location must be None, a device string, an ember.device, a dict or a "
                    f"callable, got {type(ml).__name__}")


class _Unpickler(pickle.Unpickler):
    """The C unpickler with globals and storages resolved by a :class:`_Loader`."""

    def __init__(self, file, loader: _Loader, **kwargs):
        super().__init__(file, **kwargs)
        self._loader = loader

    def find_class(self, module, name):
        return self._loader.find_class(module, name, super().find_class)

    def persistent_load(self, pid):
        return self._loader.persistent_load(pid)


class _BoundedUnpickler(pickle._Unpickler):
    """Python's own unpickler reading an in-memory pickle, allocating no more than it holds: the
    C unpickler sizes its memo table by an index the file gives (13 bytes can take 1 GB), and
    the Python one allocates a BYTEARRAY8's announced size before reading it."""

    dispatch = pickle._Unpickler.dispatch.copy()

    def __init__(self, data: bytes, **kwargs):
        self._file, self._data_len = io.BytesIO(data), len(data)
        super().__init__(self._file, **kwargs)

    def load_frame(self):   # a frame must hold the bytes it announces (pickle's own reader lets it run short)
        size, = struct.unpack("<Q", self.read(8))
        if size > self._data_len - self._file.tell():
            raise _BadFile(f"a pickle frame of {size} bytes runs past the end of data.pkl")
        self._unframer.load_frame(size)

    def load_bytearray8(self):
        size, = struct.unpack("<Q", self.read(8))
        data = self.read(size)
        if len(data) != size:
            raise _BadFile(f"a bytearray of {size} bytes runs past the end of data.pkl")
        self.append(bytearray(data))

    dispatch[pickle.FRAME[0]] = load_frame
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8


class _WeightsOnlyUnpickler(_BoundedUnpickler):
    """``weights_only=True``: a :class:`_BoundedUnpickler` with globals and storages resolved by a
    :class:`_Loader` and the state a file may set restricted: BUILD only on tensors (their own
    attributes, checked), OrderedDict/Counter (attributes such as a state dict's ``_metadata``) and
    classes the user allowed; NEWOBJ only of classes that are not tensors."""

    dispatch = _BoundedUnpickler.dispatch.copy()

    def __init__(self, data: bytes, loader: _Loader, **kwargs):
        super().__init__(data, **kwargs)
        self._loader = loader
        self._user_types = tuple(v for v in loader.user_safe.values() if isinstance(v, type))

    def find_class(self, module, name):
        return self._loader.find_class(module, name, None)

    def persistent_load(self, pid):
        return self._loader.persistent_load(pid)

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, Tensor):
            _set_state(inst, state)
        elif type(inst) in (collections.OrderedDict, collections.Counter):
            inst.__dict__.update(_checked_attributes(inst, state))
        elif type(inst) in self._user_types:
            self.stack.append(state)
            pickle._Unpickler.load_build(self)
        else:
            raise _BadFile(f"the pickle sets the state of a {type(inst).__name__} (BUILD), which only tensors, "
                           "OrderedDict and classes allowed with add_safe_globals may have")

    def load_newobj(self):
        self._check_new(self.stack[-2])
        pickle._Unpickler.load_newobj(self)

    def load_newobj_ex(self):
        self._check_new(self.stack[-3])
        pickle._Unpickler.load_newobj_ex(self)

    @staticmethod
    def _check_new(cls) -> None:
        if not isinstance(cls, type) or issubclass(cls, (Tensor, UntypedStorage)):
            raise _BadFile(f"the pickle creates an object of {cls!r:.80} with __new__ (NEWOBJ), which builds no "
                           "checked value")

    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex


def _make_unpickler(base, data: bytes, loader: _Loader, kwargs: dict):
    if loader.weights_only:
        return _WeightsOnlyUnpickler(data, loader, **kwargs)
    if base is pickle.Unpickler:
        return _Unpickler(io.BytesIO(data), loader, **kwargs)

    class Custom(base):   # another pickle module's Unpickler (weights_only=False), same two overrides
        def find_class(self, module, name):
            return loader.find_class(module, name, super().find_class)

        def persistent_load(self, pid):
            return loader.persistent_load(pid)

    return Custom(io.BytesIO(data), **kwargs)


class _Placeholder:
    """Stands for anything while scanning a pickle: absorbs calls, state and items."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Placeholder()

    def __setstate__(self, state):
        pass

    def __setitem__(self, k, v):
        pass

    def append(self, x):
        pass

    def extend(self, xs):
        pass

