"""Which globals a checkpoint may name under ``weights_only=True``: the built-in list (containers,
plain values, ember's dtypes, devices, Size and rebuild functions), PyTorch's names mapped onto
ember's, and what users add with :func:`add_safe_globals`."""
from __future__ import annotations

import collections
import contextlib
from typing import Iterable, Iterator

from .. import _dtype as D
from .._device import device as _device_cls
from .._tensor import Size, Tensor
from ._errors import CheckpointError
from ._rebuild import _rebuild_from_type, _rebuild_tensor_from_storage


_user_safe: list = []


def _global_name(entry) -> tuple:
    """``(object, 'module.qualname')`` of a safe-globals entry (an object or ``(object, name)``)."""
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise TypeError(f"safe globals: expected an object or (object, 'module.name'), got {entry!r}")
        return entry
    mod, qual = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if not isinstance(mod, str) or not isinstance(qual, str):
        raise TypeError(f"safe globals: {entry!r} has no __module__/__qualname__; pass (object, 'module.name')")
    return entry, f"{mod}.{qual}"


def add_safe_globals(safe_globals: Iterable) -> None:
    """Allow more globals in ``ember.load(weights_only=True)``: classes or functions, or
    ``(object, "module.name")`` pairs for objects pickled under another name.

    >>> import ember, io, collections
    >>> ember.serialization.add_safe_globals([collections.defaultdict])
    """
    entries = list(safe_globals)
    for e in entries:
        _global_name(e)   # refuse malformed entries now, not at load time
    _user_safe.extend(entries)


def get_safe_globals() -> list:
    """The globals added with :func:`add_safe_globals` (objects or ``(object, name)`` pairs)."""
    return list(_user_safe)


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    _user_safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: Iterable) -> Iterator[None]:
    """Allow ``safe_globals`` in ``ember.load(weights_only=True)`` inside a ``with`` block only."""
    saved = list(_user_safe)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_safe[:] = saved


def _user_safe_by_name() -> dict:
    return {name: obj for obj, name in (_global_name(e) for e in _user_safe)}


_TORCH_STORAGE = {
    D.float32: "FloatStorage", D.float64: "DoubleStorage", D.float16: "HalfStorage", D.bfloat16: "BFloat16Storage",
    D.int64: "LongStorage", D.int32: "IntStorage", D.int16: "ShortStorage", D.int8: "CharStorage",
    D.uint8: "ByteStorage", D.bool: "BoolStorage", D.complex64: "ComplexFloatStorage",
    D.complex128: "ComplexDoubleStorage",
}


class _StorageType:
    """What a PyTorch storage class (``torch.FloatStorage``, ``torch.UntypedStorage``) maps to."""

    __slots__ = ("dtype", "name")

    def __init__(self, dtype, name: str):
        self.dtype, self.name = dtype, name

    def __repr__(self) -> str:
        return f"<storage type torch.{self.name}>"


_STORAGE_TYPES = {name: _StorageType(dt, name) for dt, name in _TORCH_STORAGE.items()}
_STORAGE_TYPES["UntypedStorage"] = _StorageType(D.uint8, "UntypedStorage")
_TORCH_DTYPE_ALIASES = {"float": D.float32, "double": D.float64, "half": D.float16, "long": D.int64,
                        "int": D.int32, "short": D.int16, "cfloat": D.complex64, "cdouble": D.complex128}


_TORCH_UNSUPPORTED_DTYPES = {
    "complex32", "chalf", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
}
_TORCH_UNSUPPORTED_FUNCS = {
    "torch._utils._rebuild_sparse_tensor": "sparse tensors", "torch._utils._rebuild_qtensor": "quantized tensors",
    "torch._utils._rebuild_nested_tensor": "nested tensors", "torch._utils._rebuild_meta_tensor_no_storage":
    "meta tensors", "torch._utils._rebuild_wrapper_subclass": "tensor subclasses without storage",
    "torch._utils._rebuild_device_tensor_from_numpy": "tensors of devices without storages (XLA...)",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor": "tensors of devices without storages (XLA...)",
    "torch._utils._rebuild_mlc_tensor": "MLC tensors", "torch.serialization._get_layout": "sparse layouts",
}


def _safe_encode(obj, encoding="utf-8", errors="strict"):
    """``_codecs.encode`` as protocol-2 pickles use it for ``bytes``: latin-1 strings only."""
    if type(obj) is not str or encoding not in ("latin1", "latin-1"):
        raise CheckpointError("ember.load: _codecs.encode is allowed only for latin-1 strings (pickled bytes)")
    return obj.encode("latin-1")


def _safe_bytearray(source=b"", *args):
    if not isinstance(source, (bytes, str)):   # bytearray(n) would let a file allocate n bytes
        raise CheckpointError("ember.load: bytearray is allowed only from bytes")
    return bytearray(source, *args) if args else bytearray(source)


def _safe_dtype(name):
    d = D._BY_NAME.get(name) if isinstance(name, str) else None
    if d is None:
        raise CheckpointError(f"ember.load: unknown dtype {name!r}")
    return d


def _safe_device(type_or_spec, index=None):
    if not isinstance(type_or_spec, str) or not (index is None or type(index) is int):
        raise CheckpointError("ember.load: a device must be built from a string and an int index")
    return _device_cls(type_or_spec, index)


def _safe_size(sizes=()):
    if not isinstance(sizes, (tuple, list)) or not all(type(s) is int for s in sizes):
        raise CheckpointError("ember.load: ember.Size takes a tuple of ints")
    return Size(sizes)


# globals every load admits (weights_only=True included); torch names are added per load
_SAFE_GLOBALS = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "builtins.set": set, "builtins.frozenset": frozenset, "builtins.complex": complex, "builtins.slice": slice,
    "builtins.bytearray": _safe_bytearray, "_codecs.encode": _safe_encode,
    "ember._dtype._dtype_from_name": _safe_dtype,
    "ember._device.device": _safe_device,
    "ember._tensor.Size": _safe_size,
    "ember._tensor.Tensor": Tensor,
    "ember.serialization._rebuild_tensor_from_storage": _rebuild_tensor_from_storage,
    "ember.serialization._rebuild_from_type": _rebuild_from_type,
}

