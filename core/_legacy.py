"""Legacy typed tensor classes (``ember.FloatTensor(2, 3)``, ``ember.LongTensor([1, 2])``) and the
type strings ``Tensor.type()`` returns (``'ember.FloatTensor'``, ``'ember.cuda.FloatTensor'``)."""
from __future__ import annotations

from . import _dtype as D
from ._tensor import Tensor

NAMES = {
    D.float32: "FloatTensor", D.float64: "DoubleTensor", D.float16: "HalfTensor", D.bfloat16: "BFloat16Tensor",
    D.int64: "LongTensor", D.int32: "IntTensor", D.int16: "ShortTensor", D.int8: "CharTensor", D.uint8: "ByteTensor",
    D.bool: "BoolTensor",
}
_BY_NAME = {v: k for k, v in NAMES.items()}


def type_string(t) -> str:
    dev = t._device._type
    prefix = "ember." if dev == "cpu" else f"ember.{dev}."
    return prefix + NAMES[t._dtype]


def parse_type_string(s: str):
    """``'ember.cuda.FloatTensor'`` -> (float32, 'cuda'); ``torch.`` prefixes are accepted too."""
    parts = s.split(".")
    if len(parts) < 2 or parts[0] not in ("ember", "torch") or parts[-1] not in _BY_NAME:
        raise ValueError(f"invalid type: '{s}'")
    dev = parts[1] if len(parts) == 3 else None
    return _BY_NAME[parts[-1]], dev


class _LegacyMeta(type):
    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj._dtype is cls._legacy_dtype
                and obj._device._type == (cls._legacy_device or "cpu"))

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def make(dtype, device_type=None, module="ember"):
    name = NAMES[dtype]
    cls = _LegacyMeta(name, (Tensor,), {"_legacy_dtype": dtype, "_legacy_device": device_type, "__module__": module,
                                        "__doc__": f"Legacy constructor of {dtype} tensors on {device_type or 'cpu'}."})
    return cls


CPU_CLASSES = {NAMES[d]: make(d) for d in NAMES}
