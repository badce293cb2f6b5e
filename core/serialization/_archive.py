"""The zip archive: writing records (64-byte aligned, stored), the crash-safe temporary file that
replaces a target only when complete, and reading records back straight into their buffers."""
from __future__ import annotations

import bisect
import contextlib
import io
import mmap as _mmap
import os
import secrets
import socket
import struct
import sys
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._storage import UntypedStorage
from .._tensor import _make
from .._version import __version__
from ._errors import _BadFile


_ALIGN = 64                      # storage records start at multiples of this (mmap-able, as PyTorch)
_ZIP_VERSION = b"3\n"            # the archive version PyTorch's reader expects
_TMP_SUFFIX = ".ember-tmp"
_CRC_THREAD_MIN = 1 << 20        # storages from this size are CRC-checked on a helper thread
_DEFLATE_MAX_RATIO = 1032        # deflate never expands more (258 bytes from one 2-bit code)


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


def _write_archive(fileobj, data_pkl: bytes, table) -> None:
    """The whole archive for a pickled object and its ``_StorageTable``."""
    with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, "archive/data.pkl", data_pkl)
        _write_record(zf, "archive/.format_version", b"1")
        _write_record(zf, "archive/.storage_alignment", str(_ALIGN).encode())
        _write_record(zf, "archive/byteorder", sys.byteorder.encode())
        for key, storage, dtype in table.entries:
            _write_record(zf, f"archive/data/{key}", _storage_bytes(storage, dtype))
        _write_record(zf, "archive/version", _ZIP_VERSION)
        _write_record(zf, "archive/.data/ember_version", __version__.encode())   # PyTorch's reader skips it


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


class _Archive:
    """A checkpoint's zip archive, read through its central directory; storages are read straight
    into their target buffers (``readinto``), CRC-checked."""

    def __init__(self, fh, fileno: int | None):
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
        self._extents: list = []      # (start, end) of every record read, sorted
        if fileno is not None:   # copy-on-write: tensors stay writable
            self.mm = _mmap.mmap(fileno, 0, access=_mmap.ACCESS_COPY)
        order = self.record("byteorder")
        self.byteorder = (order or b"little").decode("ascii", "replace")
        if self.byteorder not in ("little", "big"):
            raise _BadFile(f"unknown byteorder record {self.byteorder!r}")

    def record(self, name: str) -> bytes | None:
        """A small record's bytes (CRC-checked), or None when absent."""
        zi = self.zf.NameToInfo.get(self.prefix + name)
        if zi is None:
            return None
        self._check_extent(zi, f"record {name!r}")
        try:
            return self.zf.read(zi)
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
        off = self._check_extent(zi, f"storage {key!r}")   # before allocating: the bytes must exist
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
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="ember-load-crc")
            self._pending.append((key, zi.CRC, self._pool.submit(zlib.crc32, out)))
        return out

    def verify(self) -> None:
        """Wait for the CRC checks still running; raise if one failed."""
        pending, self._pending = self._pending, []
        for key, crc, fut in pending:
            if fut.result() != crc:
                raise _BadFile(f"storage {key!r} is corrupt (CRC-32 mismatch)")

    def _check_extent(self, zi: zipfile.ZipInfo, what: str) -> int:
        """Where record ``zi``'s data starts, once checked to lie inside the file, apart from every
        record read before (overlapping records would let a small file name the same bytes many
        times), and to be stored, or deflated to no more than deflate can expand: what the file
        makes ember allocate is bounded by the bytes it really has."""
        if zi.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _BadFile(f"{what} is compressed with zip method {zi.compress_type} (checkpoints are stored or "
                           "deflated)")
        if zi.compress_type == zipfile.ZIP_STORED and zi.compress_size != zi.file_size:
            raise _BadFile(f"{what} is stored uncompressed, but its zip entry gives two sizes ({zi.compress_size} and "
                           f"{zi.file_size})")
        if zi.compress_type == zipfile.ZIP_DEFLATED and zi.file_size > zi.compress_size * _DEFLATE_MAX_RATIO + 1024:
            raise _BadFile(f"{what} claims {zi.file_size} bytes deflated into {zi.compress_size}, more than deflate "
                           "can expand")
        off = self._data_offset(zi)
        end = off + zi.compress_size
        if end > self.size:
            raise _BadFile(f"it is truncated: {what} needs bytes {off}..{end} of {self.size}")
        ext = self._extents
        i = bisect.bisect_left(ext, (zi.header_offset, end))
        if (i and ext[i - 1][1] > zi.header_offset) or (i < len(ext) and ext[i][0] < end):
            raise _BadFile(f"{what} overlaps another record of the archive (each record's bytes are its own)")
        ext.insert(i, (zi.header_offset, end))
        return off

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


def _fileno_for_mmap(fh) -> int:
    """The file descriptor ``ember.load(mmap=True)`` maps; a ValueError for a file object without one."""
    try:
        return fh.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        raise ValueError("ember.load(mmap=True) needs a file path or a file object backed by a real file") from None


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

