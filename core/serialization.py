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

import _compat_pickle
import collections
import contextlib
import io
import mmap as _mmap
import operator
import os
import pickle
import secrets
import socket
import struct
import sys
import zipfile
import zlib
from typing import IO, Any, Callable, Iterable, Iterator, Union

import numpy as np

from . import _dtype as D
from ._device import device as _device_cls
from ._storage import UntypedStorage
from ._tensor import Size, Tensor, _make

__all__ = [
    "save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
    "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL",
]

#: pickle protocol of ``data.pkl`` (PyTorch's default; its weights-only unpickler reads only 2)
DEFAULT_PROTOCOL = 2
_ALIGN = 64                      # storage records start at multiples of this (mmap-able, as PyTorch)
_ZIP_VERSION = b"3\n"            # the archive version PyTorch's reader expects
_TMP_SUFFIX = ".ember-tmp"
_CRC_THREAD_MIN = 1 << 20        # storages from this size are CRC-checked on a helper thread

FileLike = Union[str, os.PathLike, IO[bytes]]
MapLocation = Union[None, str, _device_cls, dict, Callable]


# ================================================================================================
# safe globals: what a user allows beyond the built-in list
# ================================================================================================
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


# ================================================================================================
# saving: picklers
# ================================================================================================
class _StorageRef:
    """A storage as one tensor sees it (with that tensor's dtype): what persistent_id receives."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage: UntypedStorage, dtype):
        self.storage = storage
        self.dtype = dtype


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
            raise RuntimeError(
                f"ember.save(format='torch'): one storage is viewed as {rec} and as {want}; PyTorch's format "
                "records one dtype per storage. Save with format='ember', or .clone() one of the tensors.")
        return key, rec, storage._nbytes // rec.itemsize, str(storage._device)


def _tensor_state(t: Tensor) -> dict:
    """User attributes of a tensor (its ``__dict__`` minus ember's runtime bookkeeping)."""
    d = t.__dict__
    if not d:
        return {}
    return {k: v for k, v in d.items() if k not in ("_post_accumulate_hooks", "_inference")}


def _parameter_class():
    """``ember.nn.Parameter`` when ``ember.nn`` is importable, else None."""
    try:
        from . import nn
        return getattr(nn, "Parameter", None)
    except Exception:  # nn is optional to this module (and may be mid-build)
        return None


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


_TORCH_STORAGE = {
    D.float32: "FloatStorage", D.float64: "DoubleStorage", D.float16: "HalfStorage", D.bfloat16: "BFloat16Storage",
    D.int64: "LongStorage", D.int32: "IntStorage", D.int16: "ShortStorage", D.int8: "CharStorage",
    D.uint8: "ByteStorage", D.bool: "BoolStorage",
}


class _TorchPickler(pickle._Pickler):
    """Pure-Python pickler (protocol 2) writing PyTorch's global names, for ``format="torch"``."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol: int, table: _StorageTable):
        super().__init__(file, protocol)
        self._table = table

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
            state = _tensor_state(obj)
            param = _parameter_class()
            if param is not None and isinstance(obj, param):
                hooks = collections.OrderedDict()
                if state:
                    return (_TorchName("torch._utils", "_rebuild_parameter_with_state"),
                            (_PlainTensor(obj), obj._requires_grad, hooks, state))
                return _TorchName("torch._utils", "_rebuild_parameter"), (_PlainTensor(obj), obj._requires_grad, hooks)
            if state or cls is not Tensor:
                # other Tensor subclasses have no PyTorch name: they load in PyTorch as torch.Tensor
                fn, args = self._tensor_v2(obj)
                return (_TorchName("torch._tensor", "_rebuild_from_type_v2"),
                        (fn, _TorchName("torch", "Tensor"), args, state))
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


# ================================================================================================
# saving: the archive and the crash-safe file
# ================================================================================================
def _storage_bytes(storage: UntypedStorage, dtype) -> np.ndarray:
    """The bytes of a storage on the host as a flat uint8 array (a view, no copy, on cpu)."""
    numel = storage._nbytes // dtype.itemsize
    dev = storage._device
    t = _make(storage, (numel,), (1,), 0, dtype, dev)
    a = dev._backend.to_numpy(t)
    if not a.flags.c_contiguous:  # a backend may hand back any layout; the file needs flat bytes
        a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


def _write_record(zf: zipfile.ZipFile, name: str, payload) -> None:
    """One stored (uncompressed) zip entry whose data starts at a multiple of ``_ALIGN``."""
    n = len(payload) if isinstance(payload, bytes) else payload.nbytes
    zi = zipfile.ZipInfo(name)   # fixed 1980 timestamp: the same object gives the same bytes
    zi.compress_type = zipfile.ZIP_STORED
    zi.file_size = n
    zip64 = n * 1.05 > zipfile.ZIP64_LIMIT        # zipfile's own rule; it adds a 20-byte field
    # local header: 30 bytes + name + our padding field (4 + pad) + zip64 field
    start = zf.start_dir + 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
    pad = (-start) % _ALIGN
    zi.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad   # 'FB' padding field, as PyTorch's writer
    with zf.open(zi, "w", force_zip64=zip64) as w:
        if n:
            w.write(payload)


def _write_archive(fileobj, data_pkl: bytes, table: _StorageTable) -> None:
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, "archive/data.pkl", data_pkl)
        _write_record(zf, "archive/.format_version", b"1")
        _write_record(zf, "archive/.storage_alignment", str(_ALIGN).encode())
        _write_record(zf, "archive/byteorder", sys.byteorder.encode())
        for key, storage, dtype in table.entries:
            _write_record(zf, f"archive/data/{key}", _storage_bytes(storage, dtype))
        _write_record(zf, "archive/version", _ZIP_VERSION)


_fdopen = os.fdopen   # indirection so tests can simulate a full disk


class _AtomicFile:
    """A temporary file beside ``path`` that replaces it only on :meth:`commit`.

    The temporary is named ``.<name>.<host>.<pid>.<random>.ember-tmp``; one left behind by a killed
    process (whose pid is gone) is removed by the next save to the same path.
    """

    def __init__(self, path: str, fsync: bool):
        path = os.path.realpath(path)   # write through a symlink, as open(path, 'wb') would
        if os.path.isdir(path):
            raise IsADirectoryError(f"ember.save: '{path}' is a directory")
        self.dir, self.base = os.path.split(path)
        if not os.path.isdir(self.dir):
            raise FileNotFoundError(f"ember.save: the directory of '{path}' does not exist")
        self.path, self.fsync = path, fsync
        self.host = socket.gethostname().replace(".", "_")
        self.tmp = os.path.join(self.dir, f".{self.base}.{self.host}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}")
        _remove_stale_temps(self.dir, self.base, self.host)
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            try:
                os.chmod(self.tmp, os.stat(path).st_mode & 0o7777)   # keep an existing file's mode
            except FileNotFoundError:
                pass
            self.file = _fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            os.unlink(self.tmp)
            raise

    def commit(self) -> None:
        f = self.file
        if f.closed:   # another library wrote ``self.tmp`` by name (ember.utils.safetensors)
            if self.fsync:
                fd = os.open(self.tmp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        else:
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())
            f.close()
        os.replace(self.tmp, self.path)
        if self.fsync and os.name == "posix":   # make the rename itself durable
            dfd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(dfd)
            except OSError:
                pass
            finally:
                os.close(dfd)

    def abort(self) -> None:
        try:
            self.file.close()
        except Exception:
            pass
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass


def _remove_stale_temps(dirname: str, base: str, host: str) -> None:
    prefix = f".{base}.{host}."
    try:
        names = [n for n in os.listdir(dirname) if n.startswith(prefix) and n.endswith(_TMP_SUFFIX)]
    except OSError:
        return
    for n in names:
        pid = n[len(prefix):-len(_TMP_SUFFIX)].split(".")[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _pid_alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(dirname, n))
        except OSError:
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


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


def _describe(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"a {type(f).__name__} object"


# ================================================================================================
# loading: the archive
# ================================================================================================
class _BadFile(Exception):
    """Raised inside loading for a malformed file; ``load`` turns it into a RuntimeError naming it."""


class _Archive:
    """A checkpoint's zip archive, read through its central directory; storages are read straight
    into their target buffers (``readinto``), CRC-checked."""

    def __init__(self, fh, use_mmap: bool):
        self.fh = fh
        head = fh.read(9)
        fh.seek(-len(head), io.SEEK_CUR)
        if head[:4] != b"PK\x03\x04":
            raise _BadFile(_not_zip_reason(head))
        try:
            self.zf = zipfile.ZipFile(fh)
        except zipfile.BadZipFile as e:
            raise _BadFile(f"it is truncated or not a valid zip archive ({e})") from None
        pkls = [n for n in self.zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
        if not pkls:
            if any(n.endswith("constants.pkl") for n in self.zf.namelist()):
                raise _BadFile("it is a TorchScript archive (torch.jit.save), which ember cannot load")
            raise _BadFile("the zip archive has no data.pkl record: it is not a checkpoint")
        self.prefix = pkls[0][:-len("data.pkl")]
        fh.seek(0, io.SEEK_END)
        self.size = fh.tell()
        self.mm = None
        self._pool = None
        self._pending: list = []
        if use_mmap:
            try:
                fileno = fh.fileno()
            except (AttributeError, OSError, io.UnsupportedOperation):
                raise ValueError("ember.load(mmap=True) needs a file path or a file object backed by a real file") from None
            self.mm = _mmap.mmap(fileno, 0, access=_mmap.ACCESS_COPY)  # copy-on-write: tensors stay writable
        order = self.record("byteorder")
        self.byteorder = (order or b"little").decode("ascii", "replace")
        if self.byteorder not in ("little", "big"):
            raise _BadFile(f"unknown byteorder record {self.byteorder!r}")

    def record(self, name: str) -> bytes | None:
        """A small record's bytes (CRC-checked), or None when absent."""
        try:
            return self.zf.read(self.prefix + name)
        except KeyError:
            return None
        except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as e:
            raise _BadFile(f"record {name!r} is unreadable ({e})") from None

    def storage_bytes(self, key: str, nbytes: int) -> np.ndarray:
        """Storage ``key``'s bytes as a new flat uint8 array (or a view of the mmap)."""
        name = f"{self.prefix}data/{key}"
        zi = self.zf.NameToInfo.get(name)
        if zi is None:
            raise _BadFile(f"the record of storage {key!r} ({name}) is missing")
        if zi.file_size != nbytes:
            raise _BadFile(f"storage {key!r} holds {zi.file_size} bytes but its tensors need {nbytes}")
        if zi.compress_type != zipfile.ZIP_STORED:   # re-zipped by another tool: slow path
            out = np.empty(nbytes, np.uint8)
            try:
                with self.zf.open(zi) as r:
                    got = _read_into(r, out)
            except (zipfile.BadZipFile, EOFError, zlib.error) as e:
                raise _BadFile(f"storage {key!r} is corrupt ({e})") from None
            if got != nbytes:
                raise _BadFile(f"storage {key!r} is truncated")
            return out
        off = self._data_offset(zi)
        if off + nbytes > self.size:
            raise _BadFile(f"it is truncated: storage {key!r} needs bytes {off}..{off + nbytes} of {self.size}")
        if self.mm is not None:
            return np.frombuffer(self.mm, np.uint8, nbytes, off)
        out = np.empty(nbytes, np.uint8)
        self.fh.seek(off)
        if _read_into(self.fh, out) != nbytes:
            raise _BadFile(f"it is truncated: storage {key!r} ends early")
        if nbytes < _CRC_THREAD_MIN:
            if zlib.crc32(out) != zi.CRC:
                raise _BadFile(f"storage {key!r} is corrupt (CRC-32 mismatch)")
        else:   # check big storages on a helper thread while the next one is read (crc32 drops the GIL)
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="ember-load-crc")
            self._pending.append((key, zi.CRC, self._pool.submit(zlib.crc32, out)))
        return out

    def verify(self) -> None:
        """Wait for the CRC checks still running; raise if one failed."""
        pending, self._pending = self._pending, []
        for key, crc, fut in pending:
            if fut.result() != crc:
                raise _BadFile(f"storage {key!r} is corrupt (CRC-32 mismatch)")

    def _data_offset(self, zi: zipfile.ZipInfo) -> int:
        self.fh.seek(zi.header_offset)
        h = self.fh.read(30)
        if len(h) != 30 or h[:4] != b"PK\x03\x04":
            raise _BadFile(f"the local header of {zi.filename} is corrupt")
        name_len, extra_len = struct.unpack("<HH", h[26:30])
        return zi.header_offset + 30 + name_len + extra_len

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self.zf.close()
        # the mmap itself stays open while tensors view it (numpy holds a reference)


def _read_into(fh, out: np.ndarray) -> int:
    mv = memoryview(out)
    got, n = 0, len(mv)
    while got < n:
        k = fh.readinto(mv[got:])
        if not k:
            break
        got += k
    return got


def _not_zip_reason(head: bytes) -> str:
    if not head:
        return "it is empty (0 bytes): a save was interrupted, or this is not a checkpoint"
    if head[:1] == b"\x80":
        return ("it is a bare pickle, not a zip archive: either PyTorch's legacy (pre-1.6) format, which ember does "
                "not read (re-save it with a recent torch.save), or a file written by pickle.dump (use pickle.load)")
    if head[:6] == b"\x93NUMPY":
        return "it is a numpy .npy file (use numpy.load, then ember.from_numpy)"
    if len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < (1 << 30):
        return ("it is not a zip archive (it may be a safetensors file: use "
                "ember.utils.safetensors.load_file)")
    return "it is not a zip archive (truncated, corrupt, or not written by ember.save/torch.save)"


# ================================================================================================
# loading: rebuilding tensors (the functions the format's pickles call)
# ================================================================================================
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
    numel = 1
    for s in size:
        numel *= s
    if numel:
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
    if cls is not Tensor:
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
                        "int": D.int32, "short": D.int16}
_TORCH_UNSUPPORTED_DTYPES = {
    "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "uint16", "uint32", "uint64",
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
        raise pickle.UnpicklingError("ember.load: _codecs.encode is allowed only for latin-1 strings (pickled bytes)")
    return obj.encode("latin-1")


def _safe_bytearray(source=b"", *args):
    if not isinstance(source, (bytes, str)):   # bytearray(n) would let a file allocate n bytes
        raise pickle.UnpicklingError("ember.load: bytearray is allowed only from bytes")
    return bytearray(source, *args) if args else bytearray(source)


def _safe_dtype(name):
    d = D._BY_NAME.get(name) if isinstance(name, str) else None
    if d is None:
        raise pickle.UnpicklingError(f"ember.load: unknown dtype {name!r}")
    return d


def _safe_device(type_or_spec, index=None):
    if not isinstance(type_or_spec, str) or not (index is None or type(index) is int):
        raise pickle.UnpicklingError("ember.load: a device must be built from a string and an int index")
    return _device_cls(type_or_spec, index)


def _safe_size(sizes=()):
    if not isinstance(sizes, (tuple, list)) or not all(type(s) is int for s in sizes):
        raise pickle.UnpicklingError("ember.load: ember.Size takes a tuple of ints")
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


# ================================================================================================
# loading: the unpickler
# ================================================================================================
class _Loader:
    """One ``load`` call: the archive, ``map_location``, the storages read so far, and the globals
    the file may use."""

    def __init__(self, archive: _Archive, name: str, map_location, weights_only: bool):
        self.archive, self.name, self.weights_only = archive, name, weights_only
        self.storages: dict = {}
        self.dtype_of: dict = {}       # id(storage) -> dtype, for PyTorch's typed storages
        self.devices: dict = {}
        self.swap = archive.byteorder != sys.byteorder
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

    # -- globals ------------------------------------------------------------------------------------
    def find_class(self, module: str, name: str, default: Callable):
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
                raise pickle.UnpicklingError(_refusal(self.name, full))
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
                raise pickle.UnpicklingError(f"ember.load({self.name}): the file holds PyTorch dtype torch.{name}, "
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
            raise pickle.UnpicklingError(f"ember.load({self.name}): the file holds PyTorch {_TORCH_UNSUPPORTED_FUNCS[full]} "
                                         f"({full}), which ember does not support")
        if self.weights_only and full in self.user_safe:
            return self.user_safe[full]
        raise pickle.UnpicklingError(
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
            from . import _devices
            try:
                dev = _devices.canonical(spec)
            except (RuntimeError, TypeError, ValueError) as e:
                mapped = "" if spec == location else f" (map_location sent it to '{spec}')"
                raise RuntimeError(
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


def _make_unpickler(base, data: bytes, loader: _Loader, kwargs: dict):
    class Unpickler(base):
        def find_class(self, module, name):
            return loader.find_class(module, name, super().find_class)

        def persistent_load(self, pid):
            return loader.persistent_load(pid)

    return Unpickler(io.BytesIO(data), **kwargs)


@contextlib.contextmanager
def _open_for_read(f, name: str):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            yield fh
        return
    if not callable(getattr(f, "read", None)):
        raise TypeError(f"ember.load: f must be a path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("ember.load: f is a text file; open it in binary mode ('rb')")
    seekable = getattr(f, "seekable", None)
    if seekable is not None and seekable():
        yield f
    else:   # a pipe or socket: zip needs random access
        yield io.BytesIO(f.read())


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
            try:
                loader = _Loader(archive, name, map_location, bool(weights_only))
                data = archive.record("data.pkl")
                result = _make_unpickler(base, data, loader, pickle_load_args).load()
                archive.verify()
                return result
            finally:
                archive.close()
        except _BadFile as e:
            raise RuntimeError(f"ember.load: {name} is not a readable checkpoint: {e}") from None
        except pickle.UnpicklingError as e:
            if str(e).startswith("ember.load"):
                raise
            raise RuntimeError(f"ember.load: {name} is corrupt: its pickle is malformed ({e})") from None
        except (EOFError, struct.error) as e:
            raise RuntimeError(f"ember.load: {name} is corrupt: its pickle ends early ({e})") from None


# ================================================================================================
# inspecting a checkpoint without loading it
# ================================================================================================
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


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list:
    """The globals a checkpoint uses that ``ember.load(weights_only=True)`` would refuse, found
    without importing or calling any of them and without reading storages."""
    name = _describe(f)
    found: list = []
    with _open_for_read(f, name) as fh:
        try:
            archive = _Archive(fh, False)
        except _BadFile as e:
            raise RuntimeError(f"ember.get_unsafe_globals_in_checkpoint: {name} is not a readable checkpoint: {e}") from None
        loader = _Loader(archive, name, "cpu", True)
        data = archive.record("data.pkl")
        archive.close()

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


# ================================================================================================
# plain pickle / copy / multiprocessing of one tensor (Tensor.__reduce_ex__), outside ember.save
# ================================================================================================
def _rebuild_tensor(array: np.ndarray, dtype_name: str, device: str, requires_grad: bool):
    from . import _devices
    from ._factory import _from_host
    dt = D.to_dtype(dtype_name)
    t = _from_host(np.ascontiguousarray(array), dt, _devices.canonical(device))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    arr = t.detach()._host()
    return (_rebuild_tensor, (np.array(arr, copy=True), t._dtype.name, str(t._device), t._requires_grad))
