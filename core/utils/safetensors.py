"""Read and write the safetensors format (``pip install 'ember[safetensors]'``).

The functions mirror ``safetensors.torch``: :func:`save_file`, :func:`load_file`, :func:`save`,
:func:`load` and :func:`safe_open`, working on dicts of ember tensors through the ``safetensors``
package's numpy API, and :func:`save_model`/:func:`load_model`, which save and load a module's
state dict with tied (shared) tensors stored once. A safetensors file holds only named tensors
and string metadata (no pickle), so loading one never runs code. ``save_file`` is crash safe like
:func:`ember.save`: it writes a temporary file beside the target and renames it into place.

>>> import ember, tempfile, os
>>> from ember.utils import safetensors as st
>>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
>>> st.save_file({"w": ember.ones(2, 3)}, path, metadata={"format": "pt"})
>>> st.load_file(path)["w"].shape
ember.Size([2, 3])
"""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Dict, List, Optional, Set, Tuple, Union

import numpy as np
from .. import _devices
from ..ops.creation import from_host
from ..serialization._archive import _AtomicFile

try:
    import safetensors as _st
    import safetensors.numpy as _st_numpy
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("ember.utils.safetensors needs the safetensors package: pip install 'ember[safetensors]'") from e

from .. import _dtype as D
from .._tensor import Tensor

__all__ = ["save_file", "load_file", "save", "load", "safe_open", "save_model", "load_model"]

# safetensors' dtype tags -> ember dtypes (what the numpy API lacks: BF16 comes back as ml_dtypes)
_TAGS = {"BOOL": D.bool, "U8": D.uint8, "I8": D.int8, "I16": D.int16, "I32": D.int32, "I64": D.int64,
         "F16": D.float16, "BF16": D.bfloat16, "F32": D.float32, "F64": D.float64}
_FRAMEWORKS = ("pt", "torch", "ember", "np", "numpy")


def _host_arrays(tensors: Dict[str, Tensor], op: str) -> Dict[str, np.ndarray]:
    """Contiguous host arrays of ``tensors``; refuses tensors that overlap in memory."""
    if not isinstance(tensors, dict):
        raise TypeError(f"{op}: expected a dict of name -> tensor, got {type(tensors).__name__}")
    spans: dict = {}
    out = {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"{op}: tensor names must be str, got {type(name).__name__} {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: '{name}' is a {type(t).__name__}, not a tensor")
        if t.numel():
            isz = t._dtype.itemsize
            lo = t._offset * isz
            hi = lo + (1 + sum((s - 1) * st for s, st in zip(t._shape, t._stride))) * isz
            for other, (olo, ohi) in spans.get(id(t._storage), {}).items():
                if lo < ohi and olo < hi:
                    raise RuntimeError(
                        f"{op}: tensors '{other}' and '{name}' share memory; safetensors stores each tensor "
                        "on its own, so they would not be tied after loading. Save only one of them, or .clone() "
                        "one to save independent copies.")
            spans.setdefault(id(t._storage), {})[name] = (lo, hi)
        a = t.detach()._host()
        out[name] = a if a.flags.c_contiguous else a.copy(order="C")   # (ascontiguousarray makes 0-d 1-d)
    return out


def _check_metadata(metadata, op: str) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        raise TypeError(f"{op}: metadata must be a dict of str -> str, got {metadata!r:.100}")


def _to_tensor(arr: np.ndarray, device) -> Tensor:
    if not arr.flags.writeable:   # a view of a read-only buffer: tensors must be writable
        arr = arr.copy()
    dev = _devices.canonical(device)
    return from_host(arr, D.from_numpy_dtype(arr.dtype), dev)


def save_file(tensors: Dict[str, Tensor], filename: Union[str, os.PathLike],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Write ``tensors`` (name -> tensor, any device) to a safetensors file, crash safely."""
    arrays = _host_arrays(tensors, "save_file")
    _check_metadata(metadata, "save_file")
    target = _AtomicFile(os.fspath(filename), fsync=True)
    try:
        target.file.close()   # safetensors writes the temporary file by name
        _st_numpy.save_file(arrays, target.tmp, metadata=metadata)
        target.commit()
    except BaseException:
        target.abort()
        raise


def _span(t: Tensor) -> tuple:
    """The bytes of its storage that ``t`` reaches: ``(start, stop)``."""
    isz = t._dtype.itemsize
    start = t._offset * isz
    if not t.numel():
        return start, start
    return start, start + (1 + sum((s - 1) * st for s, st in zip(t._shape, t._stride))) * isz


def _is_complete(t: Tensor) -> bool:
    """Whether ``t`` covers its whole storage (safetensors keeps only such a name of a shared group)."""
    return t._offset == 0 and t.numel() * t._dtype.itemsize == t._storage.nbytes()


def _shared_groups(state_dict: Dict[str, Tensor]) -> List[Set[str]]:
    """Names of tensors that share memory, grouped as safetensors does: by storage, then by
    overlapping byte ranges (views of one storage that don't overlap are separate groups)."""
    by_storage = defaultdict(list)
    for name, t in state_dict.items():
        if t._storage.nbytes():
            by_storage[id(t._storage)].append(name)
    groups = []
    for names in by_storage.values():
        areas = sorted((*_span(state_dict[n]), n) for n in names)
        current, stop = {areas[0][2]}, areas[0][1]
        for lo, hi, n in areas[1:]:
            if lo >= stop:
                groups.append(current)
                current = {n}
            else:
                current.add(n)
            stop = hi  # safetensors' rule: the previous area's end, not the group's furthest
        groups.append(current)
    return [g for g in groups if len(g) > 1]


def _remove_duplicate_names(state_dict: Dict[str, Tensor], preferred_names=()) -> Dict[str, List[str]]:
    """kept name -> the names of the same memory to drop: the kept one covers its whole storage,
    the first in sorted order, preferring ``preferred_names`` (the names a file holds)."""
    preferred_names = set(preferred_names)
    out = defaultdict(list)
    for shared in _shared_groups(state_dict):
        complete = sorted(n for n in shared if _is_complete(state_dict[n]))
        if not complete:
            raise RuntimeError(
                f"Error while trying to find names to remove to save state dict, but found no suitable name to keep "
                f"for saving amongst: {shared}. None is covering the entire storage. Refusing to save/load the model "
                "since you could be storing much more memory than needed (.clone() the tensors to save them apart).")
        keep = ([n for n in complete if n in preferred_names] or complete)[0]
        out[keep] = [n for n in sorted(shared) if n != keep]
    return out


def save_model(model, filename: Union[str, os.PathLike], metadata: Optional[Dict[str, str]] = None,
               force_contiguous: bool = True) -> None:
    """Save ``model.state_dict()`` to a safetensors file, as ``safetensors.torch.save_model``:
    tensors that share memory (tied weights) are stored once, under the first complete name in
    sorted order, and each dropped name is recorded in the metadata (``dropped -> kept``, unless
    ``metadata`` already has that key). ``force_contiguous`` is accepted for compatibility;
    :func:`save_file` always writes a contiguous copy of a strided tensor."""
    state_dict = model.state_dict()
    metadata = dict(metadata) if metadata is not None else None
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    save_file(state_dict, filename, metadata=metadata)


def load_model(model, filename: Union[str, os.PathLike], strict: bool = True, device: Union[str, object] = "cpu",
               *, backend: str = "mmap") -> Tuple[Set[str], List[str]]:
    """Load a safetensors file into ``model``, as ``safetensors.torch.load_model``: the names of
    a tied group that the file does not hold (:func:`save_model` stored one of them) are not
    missing. Returns ``(missing, unexpected)`` (a set and a list, as safetensors returns them);
    with ``strict``, raises RuntimeError listing both when either is non-empty. ``backend``
    (``"mmap"``/``"pread"``, how safetensors reads) is accepted and does not change the result."""
    if backend not in ("mmap", "pread"):
        raise ValueError(f"load_model: backend must be 'mmap' or 'pread', got {backend!r}")
    state_dict = load_file(filename, device=device)
    to_remove = _remove_duplicate_names(model.state_dict(), preferred_names=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing, unexpected = set(missing), list(unexpected)
    for group in to_remove.values():
        for name in group:
            if name not in missing:
                unexpected.append(name)
            else:
                missing.remove(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return missing, unexpected


def save(tensors: Dict[str, Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The safetensors encoding of ``tensors`` as bytes."""
    arrays = _host_arrays(tensors, "save")
    _check_metadata(metadata, "save")
    return _st_numpy.save(arrays, metadata=metadata)


def load_file(filename: Union[str, os.PathLike], device: Union[str, object] = "cpu") -> Dict[str, Tensor]:
    """Read every tensor of a safetensors file onto ``device``."""
    with safe_open(filename, device=device) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def load(data: bytes, device: Union[str, object] = "cpu") -> Dict[str, Tensor]:
    """Decode safetensors ``data`` (bytes) into tensors on ``device``."""
    try:
        entries = _st.deserialize(data)
    except Exception as e:
        raise RuntimeError(f"ember.utils.safetensors.load: not a valid safetensors buffer ({e})") from None
    out = {}
    for name, info in entries:
        dt = _TAGS.get(info["dtype"])
        if dt is None:
            raise TypeError(f"ember.utils.safetensors.load: tensor '{name}' has dtype {info['dtype']}, which ember "
                            f"does not support (supported: {', '.join(_TAGS)})")
        arr = np.frombuffer(info["data"], dtype=dt.np).reshape(info["shape"])
        out[name] = _to_tensor(arr, device)
    return out


class safe_open:
    """Open a safetensors file lazily: ``keys()``, ``metadata()``, ``get_tensor(name)`` and
    ``get_slice(name)[...]`` read only what is asked for.

    ``framework`` is accepted for code written for ``safetensors.torch`` (``"pt"``); tensors are
    ember tensors on ``device``.

    >>> # with safe_open("model.safetensors", framework="pt", device="cpu") as f:
    >>> #     w = f.get_tensor("w")
    """

    def __init__(self, filename: Union[str, os.PathLike], framework: str = "pt", device: Union[str, object] = "cpu"):
        if framework not in _FRAMEWORKS:
            raise ValueError(f"safe_open: framework must be one of {_FRAMEWORKS}, got {framework!r}")
        self._device = device
        try:
            self._f = _st.safe_open(os.fspath(filename), framework="np")
        except Exception as e:
            if isinstance(e, (FileNotFoundError, IsADirectoryError, PermissionError)):
                raise
            raise RuntimeError(f"ember.utils.safetensors: {os.fspath(filename)!r} is not a readable safetensors file "
                               f"({type(e).__name__}: {e})") from None
        self._h = self._f.__enter__()

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc) -> None:
        self._f.__exit__(*exc)

    def keys(self) -> list:
        return list(self._h.keys())

    def metadata(self) -> Optional[Dict[str, str]]:
        return self._h.metadata()

    def get_tensor(self, name: str) -> Tensor:
        return _to_tensor(self._h.get_tensor(name), self._device)

    def get_slice(self, name: str) -> "_Slice":
        return _Slice(self._h.get_slice(name), self._device)


class _Slice:
    """Part of one tensor of a file: ``get_shape()``, ``get_dtype()``, and ``[...]`` to read."""

    def __init__(self, s, device):
        self._s, self._device = s, device

    def get_shape(self) -> list:
        return self._s.get_shape()

    def get_dtype(self) -> str:
        return self._s.get_dtype()

    def __getitem__(self, index) -> Tensor:
        return _to_tensor(np.asarray(self._s[index]), self._device)
