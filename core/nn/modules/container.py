"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""
from __future__ import annotations

import operator
from collections import OrderedDict
from itertools import chain
from typing import Any, Iterable, Iterator, Mapping

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Container"]


def _index(idx: int, n: int, what: str) -> int:
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx + n if idx < 0 else idx


def _renumber(container, modules) -> None:
    """Make ``modules`` the children of ``container``, named ``0``, ``1``, ... in order."""
    container._modules.clear()
    container._modules.update((str(i), m) for i, m in enumerate(modules))


def _take(container, key):
    """``container[key]``, removed from the container."""
    item = container[key]
    del container[key]
    return item


class Container(Module):
    """Deprecated in PyTorch: a module whose children are given as keyword arguments."""

    def __init__(self, **kwargs: Module) -> None:
        super().__init__()
        for k, v in kwargs.items():
            self.add_module(k, v)


class Sequential(Module):
    """Modules called one after another: ``Sequential(nn.Linear(4, 8), nn.ReLU())`` or from an
    ``OrderedDict`` of names. Supports indexing, slicing (a new Sequential), ``len``,
    ``append``, ``insert``, ``extend``, ``pop`` and ``del``."""

    def __init__(self, *args) -> None:
        super().__init__()
        named = len(args) == 1 and isinstance(args[0], OrderedDict)
        for name, module in (args[0].items() if named else ((str(i), m) for i, m in enumerate(args))):
            self.add_module(name, module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_index(idx, len(keys), "Sequential")]]

    def __setitem__(self, idx: int, module: Module) -> None:
        keys = list(self._modules)
        setattr(self, keys[_index(idx, len(keys), "Sequential")], module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        if isinstance(idx, slice):
            for k in keys[idx]:
                delattr(self, k)
        else:
            delattr(self, keys[_index(idx, len(keys), "Sequential")])
        # the remaining children are renamed 0, 1, ... (named ones too), as PyTorch does
        _renumber(self, list(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __mul__(self, other: int) -> "Sequential":
        if not isinstance(other, int) or other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*[m for _ in range(other) for m in self])

    def append(self, module: Module) -> "Sequential":
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Insert ``module`` before position ``index``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        count = len(self._modules)
        if index < -count or index > count:
            raise IndexError(f"Index out of range: {index}")
        ordered = list(self._modules.values())
        ordered.insert(index + count if index < 0 else index, module)
        _renumber(self, ordered)
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key: int) -> Module:
        return _take(self, key)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]


class ModuleList(Module):
    """A list of modules, registered as children ``0``, ``1``, ... (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        self.extend(() if modules is None else modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_index(idx, len(self), "ModuleList")))
        _renumber(self, list(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList(chain(self, other))

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if isinstance(modules, (Module, Tensor)) or not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def insert(self, index: int, module: Module) -> None:
        ordered = list(self._modules.values())
        ordered.insert(index, module)
        self._modules.clear()
        for position, child in enumerate(ordered):
            self.add_module(str(position), child)  # checks the new module's type

    def pop(self, key: int) -> Module:
        return _take(self, key)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def __repr__(self) -> str:
        # runs of identical reprs print once, as PyTorch: "(0-2): 3 x Linear(...)"
        items = list(self._modules.items())
        if not items:
            return self._get_name() + "()"
        reprs = [repr(m) for _, m in items]
        lines = []
        start = 0
        for i in range(1, len(reprs) + 1):
            if i < len(reprs) and reprs[i] == reprs[start]:
                continue
            body = _addindent(reprs[start], 2)
            if i - start == 1:
                lines.append(f"({items[start][0]}): {body}")
            else:
                lines.append(f"({items[start][0]}-{items[i - 1][0]}): {i - start} x {body}")
            start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules (keys are child names)."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        self.update({} if modules is None else modules)

    # the mapping protocol, on the registered children
    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        self._modules.pop(key)

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        return _take(self, key)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        if isinstance(modules, (OrderedDict, ModuleDict, Mapping)):
            for k, m in modules.items():
                self[k] = m
        else:
            for j, m in enumerate(modules):
                if not isinstance(m, (list, tuple)) or len(m) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} should be a pair of (key, module)")
                self[m[0]] = m[1]


class ParameterList(Module):
    """A list of parameters, registered as ``0``, ``1``, ...; plain tensors are wrapped in Parameter."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0  # the number of entries, named "0" .. str(_size - 1)
        self.extend(() if values is None else values)

    def _key(self, idx: int) -> str:
        return str(_index(idx, self._size, "ParameterList"))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(self._size)[idx]:
                out.append(self[i])
            return out
        return getattr(self, self._key(idx))

    def __setitem__(self, idx: int, param) -> None:
        key = self._key(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, key, param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(self._size))

    def __iadd__(self, params):
        return self.extend(params)

    def append(self, value) -> "ParameterList":
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values) -> "ParameterList":
        if isinstance(values, Tensor) or not hasattr(values, "__iter__"):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def extra_repr(self) -> str:
        lines = []
        for i in range(self._size):
            p = self[i]
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.size())
                dev = "" if p.device.type == "cpu" else f" ({p.device})"
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({i}): {kind} containing: [{p.dtype} of size {size}{dev}]")
            else:
                lines.append(f"  ({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        body = self.extra_repr()
        return self._get_name() + "(\n" + body + "\n)" if body else self._get_name() + "()"


class ParameterDict(Module):
    """An ordered dict of parameters; plain tensors are wrapped in Parameter."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        return _take(self, key)

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def update(self, parameters) -> None:
        if hasattr(parameters, "keys"):
            for k in parameters.keys():
                self[k] = parameters[k]
        else:
            for j, kv in enumerate(parameters):
                if len(kv) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(kv)}; 2 is required")
                self[kv[0]] = kv[1]

    def extra_repr(self) -> str:
        lines = []
        for k in self._keys:
            p = self[k]
            size = "x".join(str(s) for s in p.size())
            dev = "" if p.device.type == "cpu" else f" ({p.device})"
            lines.append(f"  ({k}): Parameter containing: [{p.dtype} of size {size}{dev}]")
        return "\n".join(lines)

    def __repr__(self) -> str:
        body = self.extra_repr()
        return self._get_name() + "(\n" + body + "\n)" if body else self._get_name() + "()"
