"""Saving and loading objects that hold tensors: :func:`ember.save` and :func:`ember.load`.

The file is the zip archive PyTorch has used since 1.6, so each side reads the other's files::

    archive/data.pkl             a pickle of the object; every storage in it is a persistent id
                                 ('storage', <type>, <key>, <location>, <numel>)
    archive/data/<key>           the raw bytes of one storage, 64-byte aligned, stored uncompressed
    archive/byteorder            'little' (storages are written in the host's byte order)
    archive/version, .format_version, .storage_alignment    what PyTorch's reader looks for

A storage shared by several tensors (views) is written once and shared again after loading; its
``<location>`` is the device it lived on (``'cpu'``, ``'cuda:0'``), which ``map_location`` remaps.

``ember.save`` writes PyTorch's names (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``,
``torch.float32``...) so that ``torch.load`` (``weights_only=True``) reads its files; ``format="ember"``
(the default before; still read) pickles ember's own rebuild functions. ``ember.load`` reads both, and
files written by ``torch.save``, without PyTorch installed.

Safety: ``load`` runs a restricted unpickler by default (``weights_only=True``) that admits only
tensors, storages, dtypes, devices, ``ember.Size``, containers and plain values; every other
global is refused before it is imported, and a file cannot make ember allocate more than the bytes
it holds. Every file ``load`` cannot read raises :class:`CheckpointError`. Crash safety: ``save``
to a path writes a temporary file beside the target, fsyncs it and renames it into place, so a
failed or killed save leaves the previous file as it was. See ``docs/serialization.md``.
"""
from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from typing import IO, Any, Callable, Union

import numpy as np

from .. import _dtype as D
from .._compat import add_note
from .. import _methods
from .._device import device as _device_cls
from ._archive import _Archive, _AtomicFile, _fileno_for_mmap, _open_for_read, _write_archive
from ._errors import CheckpointError, _BadFile
from ._globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._pickler import _custom_pickler, _EmberPickler, _StorageTable, _TorchPickler, _TwoDtypes
# pickles name these as ember.serialization.<name>: keep them reachable here
from ._rebuild import _rebuild_from_type, _rebuild_tensor_from_storage  # noqa: F401
from ._unpickler import _BoundedUnpickler, _Loader, _make_unpickler, _normalise_map_location, _Placeholder

__all__ = [
    "save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
    "get_unsafe_globals_in_checkpoint", "CheckpointError", "DEFAULT_PROTOCOL",
]

#: pickle protocol of ``data.pkl`` (PyTorch's default; its weights-only unpickler reads only 2)
DEFAULT_PROTOCOL = 2
FileLike = Union[str, os.PathLike, IO[bytes]]
MapLocation = Union[None, str, _device_cls, dict, Callable]


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False, *,
         format: str | None = None, fsync: bool = True) -> None:
    """Save ``obj`` (tensors, state dicts, containers; any picklable object) to ``f``.

    ``f`` is a path (``str`` or ``pathlib.Path``) or a binary file object. Saving to a path is
    crash safe: the file is written beside the target, fsynced and renamed into place, so an
    exception, a full disk or a killed process leaves the previous file intact. The object is
    pickled before anything is written, so an unpicklable object never touches ``f``.

    The file is PyTorch's: ``torch.load(f)`` reads it (with its default ``weights_only=True``).
    Only what PyTorch's format cannot hold (one storage viewed as two dtypes, or a ``pickle_module``
    other than ``pickle``) is written with ember's own rebuild functions, which ``ember.load``
    alone reads. ``format="torch"`` is strict (it refuses those, and writes Tensor subclasses as
    ``torch.Tensor``); ``format="ember"`` always writes ember's names. ``ember.load`` reads all.
    ``fsync=False`` skips the fsyncs (faster; still atomic against exceptions and kills, but not
    against power loss).

    >>> import ember, io
    >>> buf = io.BytesIO()
    >>> ember.save({"w": ember.ones(2, 3)}, buf)
    >>> _ = buf.seek(0)
    >>> ember.load(buf)["w"].shape
    ember.Size([2, 3])
    """
    if format not in (None, "ember", "torch"):
        raise ValueError(f"ember.save: format must be None (PyTorch's format), 'torch' or 'ember', got {format!r}")
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
    std = pickle_module is None or pickle_module is pickle
    try:
        data_pkl, table = _pickle(obj, f, pickle_protocol, "torch" if format is None and std else format,
                                  pickle_module, keep_subclasses=format is None)
    except _TwoDtypes:
        if format is not None:
            raise
        data_pkl, table = _pickle(obj, f, pickle_protocol, "ember", pickle_module)

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


def _pickle(obj, f, protocol: int, format: str | None, pickle_module, keep_subclasses: bool = False) -> tuple:
    """``(data.pkl bytes, storage table)`` of ``obj`` in ``format`` (``'torch'`` or ``'ember'``)."""
    table = _StorageTable(format == "torch")
    buf = io.BytesIO()
    if format == "torch":
        pickler = _TorchPickler(buf, protocol, table, keep_subclasses)
    elif pickle_module is None or pickle_module is pickle:
        pickler = _EmberPickler(buf, protocol, table)
    else:
        pickler = _custom_pickler(pickle_module)(buf, protocol, table)
    try:
        pickler.dump(obj)
    except _TwoDtypes:
        raise
    except Exception as e:
        add_note(e, f"ember.save: the object could not be pickled; nothing was written to {_describe(f)}")
        raise
    finally:
        # the pickler is a reference cycle (it holds its own bound methods): empty it now, or its
        # memo would keep every saved object alive until the garbage collector runs
        pickler.clear_memo()
        pickler._table = None
    return buf.getvalue(), table


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
    :func:`add_safe_globals` allows; anything else raises :class:`CheckpointError` (a
    ``pickle.UnpicklingError``) naming the global, before it is imported. A file cannot make it
    allocate more than the bytes the file holds, nor set state that is not a tensor's.
    ``weights_only=False`` loads any pickled object (whole models) and runs code from the file:
    use it only for files you trust.

    ``map_location`` places storages: a device string or ``ember.device`` (all storages), a dict
    mapping saved locations to new ones (``{'cuda:1': 'cuda:0'}``), or a callable
    ``fn(storage, location)`` that gets each storage on cpu and returns a storage, a device or None
    (None: its saved location). ``mmap=True`` maps cpu storages from the file instead of reading
    them (copy-on-write; not CRC-checked). Every file that cannot be loaded (truncated, corrupt,
    malformed, refused by ``weights_only``, saved on a device not available here) raises
    :class:`CheckpointError`, a ``pickle.UnpicklingError`` and a ``RuntimeError``.

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
    map_location = _normalise_map_location(map_location)   # refuse a bad argument before reading
    with _open_for_read(f, name) as fh:
        fileno = _fileno_for_mmap(fh) if mmap else None
        archive = loader = None
        try:
            archive = _Archive(fh, fileno)
            loader = _Loader(archive, name, map_location, bool(weights_only))
            data = archive.record("data.pkl")
            result = _make_unpickler(base, data, loader, pickle_load_args).load()
            archive.verify()
            return result
        except (MemoryError, RecursionError):
            raise
        except Exception as e:
            if loader is not None and e is loader.passthrough:
                raise   # map_location's or the device's error, not the file's
            raise _checkpoint_error(e, name, bool(weights_only)) from (None if weights_only else e)
        finally:
            if loader is not None:
                loader.close()
            if archive is not None:
                archive.close()


def _checkpoint_error(e: Exception, name: str, weights_only: bool) -> CheckpointError:
    """The :class:`CheckpointError` for what went wrong reading file ``name``."""
    msg = str(e)
    if isinstance(e, CheckpointError):
        if msg.startswith("ember.load("):
            return e
        return CheckpointError(f"ember.load({name}): {msg.removeprefix('ember.load: ')}")
    if isinstance(e, _BadFile):
        return CheckpointError(f"ember.load: {name} is not a readable checkpoint: {msg}")
    if isinstance(e, (EOFError, struct.error)) or "truncated" in msg:
        return CheckpointError(f"ember.load: {name} is corrupt: its pickle ends early ({type(e).__name__}: {msg})")
    where = "" if weights_only else " (or an object in it failed to unpickle)"
    return CheckpointError(f"ember.load: {name} is corrupt: its pickle is malformed{where} "
                           f"({type(e).__name__}: {msg:.200})")


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list:
    """The globals a checkpoint uses that ``ember.load(weights_only=True)`` would refuse, found
    without importing or calling any of them and without reading storages."""
    name = _describe(f)
    found: list = []
    with _open_for_read(f, name) as fh:
        archive = None
        try:
            archive = _Archive(fh, None)
            data = archive.record("data.pkl")
        except Exception as e:
            raise CheckpointError(f"ember.get_unsafe_globals_in_checkpoint: {name} is not a readable checkpoint: "
                                  f"{e}") from None
        finally:
            if archive is not None:
                archive.close()
    loader = _Loader(None, name, "cpu", True)

    class Scanner(_BoundedUnpickler):
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
        Scanner(data, encoding="utf-8").load()
    except Exception as e:  # a malformed pickle: report what was found so far
        raise CheckpointError(f"ember.get_unsafe_globals_in_checkpoint: {name} has a malformed pickle ({e}); "
                              f"globals found before the error: {found}") from None
    finally:
        loader.close()
    return found


# plain pickle / copy / multiprocessing of one tensor (Tensor.__reduce_ex__, outside ember.save): the
# rebuild function lives with the Tensor protocols; its name stays importable here for old pickles
_rebuild_tensor = _methods._rebuild_tensor
_reduce_tensor = _methods._reduce_tensor


