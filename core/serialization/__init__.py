"""Saving and loading objects that hold tensors: :func:`ember.save` and :func:`ember.load`.

The file is the zip archive PyTorch has used since 1.6, so each side reads the other's files::

    archive/data.pkl             a pickle of the object; every storage in it is a persistent id
                                 ('storage', <type>, <key>, <location>, <numel>)
    archive/data/<key>           the raw bytes of one storage, 64-byte aligned, stored uncompressed
    archive/byteorder            'little' (storages are written in the host's byte order)
    archive/version, .format_version, .storage_alignment    what PyTorch's reader looks for

A storage shared by several tensors (views) is written once and shared again after loading; its
``<location>`` is the device it lived on (``'cpu'``, ``'cuda:0'``), which ``map_location`` remaps.

``format="ember"`` (the default) pickles ember's own rebuild functions; ``format="torch"`` writes
the names PyTorch's unpickler knows (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.float32``...), so that ``torch.load(weights_only=True)`` reads the file. ``ember.load``
reads both, and files written by ``torch.save``, without PyTorch installed.

Safety: ``load`` runs a restricted unpickler by default (``weights_only=True``) that admits only
tensors, storages, dtypes, devices, ``ember.Size``, containers and plain values; every other
global is refused before it is imported. Crash safety: ``save`` to a path writes a temporary file
beside the target, fsyncs it and renames it into place, so a failed or killed save leaves the
previous file as it was. See ``docs/serialization.md``.
"""
from __future__ import annotations

import io
import os
import pickle
import struct
from typing import IO, Any, Callable, Union

import numpy as np

from .. import _dtype as D
from .. import _methods
from .._device import device as _device_cls
from ._archive import _Archive, _AtomicFile, _open_for_read, _write_archive
from ._globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._pickler import _custom_pickler, _EmberPickler, _StorageTable, _TorchPickler
from ._rebuild import _BadFile
# pickles name these as ember.serialization.<name>: keep them reachable here
from ._rebuild import _rebuild_from_type, _rebuild_tensor_from_storage  # noqa: F401
from ._unpickler import _Loader, _make_unpickler, _Placeholder

__all__ = [
    "save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
    "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL",
]

#: pickle protocol of ``data.pkl`` (PyTorch's default; its weights-only unpickler reads only 2)
DEFAULT_PROTOCOL = 2
FileLike = Union[str, os.PathLike, IO[bytes]]
MapLocation = Union[None, str, _device_cls, dict, Callable]


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False, *,
         format: str = "ember", fsync: bool = True) -> None:
    """Save ``obj`` (tensors, state dicts, containers; any picklable object) to ``f``.

    ``f`` is a path (``str`` or ``pathlib.Path``) or a binary file object. Saving to a path is
    crash safe: the file is written beside the target, fsynced and renamed into place, so an
    exception, a full disk or a killed process leaves the previous file intact. The object is
    pickled before anything is written, so an unpicklable object never touches ``f``.

    ``format="torch"`` writes PyTorch's global names so that ``torch.load(weights_only=True)``
    reads the file; ``"ember"`` (default) writes ember's. ``ember.load`` reads both.
    ``fsync=False`` skips the fsyncs (faster; still atomic against exceptions and kills, but not
    against power loss).

    >>> import ember, io
    >>> buf = io.BytesIO()
    >>> ember.save({"w": ember.ones(2, 3)}, buf)
    >>> _ = buf.seek(0)
    >>> ember.load(buf)["w"].shape
    ember.Size([2, 3])
    """
    if format not in ("ember", "torch"):
        raise ValueError(f"ember.save: format must be 'ember' or 'torch', got {format!r}")
    if not _use_new_zipfile_serialization:
        raise ValueError("ember.save: only the zip format is written (_use_new_zipfile_serialization=False, "
                         "PyTorch's pre-1.6 format, is not supported)")
    if format == "torch" and pickle_module not in (None, pickle):
        raise ValueError("ember.save(format='torch') writes with the standard pickle module only")
    if not isinstance(f, (str, os.PathLike)) and not callable(getattr(f, "write", None)):
        raise TypeError(f"ember.save: f must be a path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("ember.save: f is a text file; open it in binary mode ('wb')")

    # 1. pickle first, in memory (metadata only: storages become ids), so that a failure here
    #    happens before any byte of the target is touched
    table = _StorageTable(format == "torch")
    buf = io.BytesIO()
    if format == "torch":
        pickler = _TorchPickler(buf, pickle_protocol, table)
    elif pickle_module is None or pickle_module is pickle:
        pickler = _EmberPickler(buf, pickle_protocol, table)
    else:
        pickler = _custom_pickler(pickle_module)(buf, pickle_protocol, table)
    try:
        pickler.dump(obj)
    except Exception as e:
        if hasattr(e, "add_note"):
            e.add_note(f"ember.save: the object could not be pickled; nothing was written to {_describe(f)}")
        raise
    finally:
        # the pickler is a reference cycle (it holds its own bound methods): empty it now, or its
        # memo would keep every saved object alive until the garbage collector runs
        pickler.clear_memo()
        pickler._table = None
    data_pkl = buf.getvalue()
    del pickler, buf

    # 2. stream the archive
    if isinstance(f, (str, os.PathLike)):
        target = _AtomicFile(os.fspath(f), fsync)
        try:
            _write_archive(target.file, data_pkl, table)
            target.commit()
        except BaseException:
            target.abort()
            raise
    else:
        _write_archive(f, data_pkl, table)
        if hasattr(f, "flush"):
            f.flush()


def _describe(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"a {type(f).__name__} object"


def load(f: FileLike, map_location: MapLocation = None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load an object saved with :func:`ember.save` or ``torch.save``.

    ``weights_only=True`` (default) admits only tensors, storages, dtypes, devices, ``ember.Size``,
    containers (dict, OrderedDict, list, tuple, set) and plain values, plus what
    :func:`add_safe_globals` allows; anything else raises ``pickle.UnpicklingError`` naming the
    global, before it is imported. ``weights_only=False`` loads any pickled object (whole models)
    and runs code from the file: use it only for files you trust.

    ``map_location`` places storages: a device string or ``ember.device`` (all storages), a dict
    mapping saved locations to new ones (``{'cuda:1': 'cuda:0'}``), or a callable
    ``fn(storage, location)`` that gets each storage on cpu and returns a storage, a device or None
    (None: its saved location). ``mmap=True`` maps cpu storages from the file instead of reading
    them (copy-on-write; not CRC-checked). Truncated or corrupt files raise ``RuntimeError``.

    >>> import ember, io
    >>> buf = io.BytesIO(); ember.save([ember.arange(3)], buf); _ = buf.seek(0)
    >>> ember.load(buf, map_location="cpu")[0].tolist()
    [0, 1, 2]
    """
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module not in (None, pickle):
        raise RuntimeError("ember.load: weights_only=True uses ember's restricted unpickler; pass "
                           "weights_only=False to load with another pickle_module")
    pickle_load_args.setdefault("encoding", "utf-8")
    name = _describe(f)
    base = pickle.Unpickler if pickle_module is None else pickle_module.Unpickler
    with _open_for_read(f, name) as fh:
        try:
            archive = _Archive(fh, bool(mmap))
            loader = None
            try:
                loader = _Loader(archive, name, map_location, bool(weights_only))
                data = archive.record("data.pkl")
                result = _make_unpickler(base, data, loader, pickle_load_args).load()
                archive.verify()
                return result
            finally:
                if loader is not None:
                    loader.close()
                archive.close()
        except _BadFile as e:
            raise RuntimeError(f"ember.load: {name} is not a readable checkpoint: {e}") from None
        except pickle.UnpicklingError as e:
            if str(e).startswith("ember.load"):
                raise
            raise RuntimeError(f"ember.load: {name} is corrupt: its pickle is malformed ({e})") from None
        except (EOFError, struct.error) as e:
            raise RuntimeError(f"ember.load: {name} is corrupt: its pickle ends early ({e})") from None


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list:
    """The globals a checkpoint uses that ``ember.load(weights_only=True)`` would refuse, found
    without importing or calling any of them and without reading storages."""
    name = _describe(f)
    found: list = []
    with _open_for_read(f, name) as fh:
        try:
            archive = _Archive(fh, False)
        except _BadFile as e:
            raise RuntimeError(f"ember.get_unsafe_globals_in_checkpoint: {name} is not a readable checkpoint: "
                               f"{e}") from None
        loader = _Loader(archive, name, "cpu", True)
        data = archive.record("data.pkl")
        archive.close()
        loader.close()

    class Scanner(pickle.Unpickler):
        def find_class(self, module, gname):
            full = f"{module}.{gname}"
            try:
                loader.find_class(module, gname, None)
            except pickle.UnpicklingError:
                if full not in found:
                    found.append(full)
            return _Placeholder

        def persistent_load(self, pid):
            return _Placeholder()

    try:
        Scanner(io.BytesIO(data), encoding="utf-8").load()
    except Exception as e:  # a malformed pickle: report what was found so far
        raise RuntimeError(f"ember.get_unsafe_globals_in_checkpoint: {name} has a malformed pickle ({e}); "
                           f"globals found before the error: {found}") from None
    return found


# plain pickle / copy / multiprocessing of one tensor (Tensor.__reduce_ex__, outside ember.save): the
# rebuild function lives with the Tensor protocols; its name stays importable here for old pickles
_rebuild_tensor = _methods._rebuild_tensor
_reduce_tensor = _methods._reduce_tensor


