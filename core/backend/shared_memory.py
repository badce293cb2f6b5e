"""Shared-memory segments for storages shared between processes (``Tensor.share_memory_()``,
``ember.multiprocessing``).

A :class:`SharedSegment` is a POSIX shared-memory object mapped into this process. How it is
found by other processes follows the sharing strategy (``ember.multiprocessing.
set_sharing_strategy``), as in PyTorch:

* ``"file_descriptor"`` (the default on Linux): the segment has no name at all (``memfd_create``,
  or ``shm_open`` and an immediate ``shm_unlink``). Other processes receive a duplicate of its file
  descriptor (multiprocessing passes it over a Unix socket, or a forked child inherits the
  mapping). Nothing ever appears in ``/dev/shm``; the memory is freed by the kernel when the last
  mapping and descriptor close, in whichever process that happens, and even when a process
  crashes.
* ``"file_system"``: the segment has a name in ``/dev/shm``; receivers open it by name. The
  creating process unlinks the name when its storage is freed (receivers keep their mappings), and
  multiprocessing's resource tracker unlinks it should the creator die first. A receiver must
  therefore open the segment while the creator still holds the storage.

Backends allocate their host buffers over :attr:`SharedSegment.buffer` (cpu_numpy does); the
segment object is kept alive by the storage (``storage.backend_state``), and its descriptor is
closed (and, under ``file_system``, its name unlinked by the creator) when it is collected.
"""
from __future__ import annotations

import itertools
import mmap
import os
import sys
import weakref
from multiprocessing import resource_tracker

try:  # the module behind multiprocessing.shared_memory on POSIX systems
    import _posixshmem
except ImportError:  # pragma: no cover - Windows
    _posixshmem = None

__all__ = ["SharedSegment", "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies"]

if sys.platform.startswith("linux"):
    _ALL = {"file_descriptor", "file_system"}
    _strategy = ["file_descriptor"]
else:  # pragma: no cover - macOS, Windows: descriptors cannot be passed this way
    _ALL = {"file_system"}
    _strategy = ["file_system"]
_counter = itertools.count()


def get_all_sharing_strategies() -> set:
    """The sharing strategies this system supports."""
    return set(_ALL)


def get_sharing_strategy() -> str:
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Select how shared storages are named (see the module docstring)."""
    if new_strategy not in _ALL:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_ALL}")
    _strategy[0] = new_strategy


def _close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:  # pragma: no cover - already closed
        pass


def unlink_segment(name: str) -> None:
    """Unlink a named segment and stop multiprocessing's resource tracker from tracking it (its
    mappings stay valid); shared by the DataLoader's worker segments."""
    try:
        _posixshmem.shm_unlink(name)
    except FileNotFoundError:
        pass
    resource_tracker.unregister(name, "shared_memory")


def _reserve(fd: int, nbytes: int) -> None:
    # reserve the pages now: a full /dev/shm fails here (RuntimeError) instead of killing the
    # process with SIGBUS on its first write
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, nbytes)
        else:  # pragma: no cover - macOS
            os.ftruncate(fd, nbytes)
    except OSError as e:
        raise RuntimeError(f"unable to allocate {nbytes} bytes of shared memory ({e.strerror}); /dev/shm may be "
                           "too small (docker: --shm-size)") from None


class SharedSegment:
    """``nbytes`` bytes of shared memory mapped in this process.

    ``buffer`` is the writable mapping (an ``mmap``; view it with ``numpy.frombuffer``), ``fd``
    a descriptor of the segment this object owns (or None), ``name`` its ``/dev/shm`` name under the
    ``file_system`` strategy (else None). ``key`` identifies the segment across processes (so that
    a storage received twice maps to one storage object).
    """

    __slots__ = ("nbytes", "buffer", "fd", "name", "key", "_finalizer", "__weakref__")

    def __init__(self, nbytes: int, buffer, fd, name, key, owner_unlinks: bool):
        self.nbytes = nbytes
        self.buffer = buffer
        self.fd = fd
        self.name = name
        self.key = key
        # only the creating process unlinks the name (a forked child holds a copy of this object)
        self._finalizer = weakref.finalize(self, _release, fd, name if owner_unlinks else None, os.getpid())

    @classmethod
    def create(cls, nbytes: int, strategy: str | None = None) -> "SharedSegment":
        """A new zero-filled segment of ``nbytes`` bytes (at least one page is mapped)."""
        if _posixshmem is None:  # pragma: no cover - Windows
            raise RuntimeError("shared memory is not supported on this platform")
        strategy = strategy or _strategy[0]
        size = max(int(nbytes), 1)
        if strategy == "file_descriptor":
            if hasattr(os, "memfd_create"):
                fd = os.memfd_create("ember_shm", os.MFD_CLOEXEC)
            else:  # pragma: no cover - no memfd: an immediately unlinked POSIX object
                name = f"/ember_mp_{os.getpid():x}_{next(_counter):x}"
                fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
                _posixshmem.shm_unlink(name)
            try:
                _reserve(fd, size)
                buf = mmap.mmap(fd, size)
            except BaseException:
                os.close(fd)
                raise
            st = os.fstat(fd)
            return cls(nbytes, buf, fd, None, ("fd", st.st_dev, st.st_ino), True)
        name = f"/ember_mp_{os.getpid():x}_{next(_counter):x}"
        fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            try:
                _reserve(fd, size)
            except RuntimeError:
                _posixshmem.shm_unlink(name)
                raise
            buf = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        resource_tracker.register(name, "shared_memory")
        return cls(nbytes, buf, None, name, ("name", name), True)

    @classmethod
    def from_fd(cls, fd: int, nbytes: int) -> "SharedSegment":
        """Map the segment behind ``fd``; the new object owns ``fd`` (and closes it)."""
        try:
            buf = mmap.mmap(fd, max(int(nbytes), 1))
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(nbytes, buf, fd, None, ("fd", st.st_dev, st.st_ino), False)

    @classmethod
    def from_name(cls, name: str, nbytes: int) -> "SharedSegment":
        """Map the named segment another process created (``file_system``)."""
        try:
            fd = _posixshmem.shm_open(name, os.O_RDWR, 0o600)
        except FileNotFoundError:
            raise RuntimeError(
                f"shared memory segment {name} no longer exists: under the 'file_system' sharing strategy the "
                "sending process must keep the tensor alive until the receiver has taken it") from None
        try:
            buf = mmap.mmap(fd, max(int(nbytes), 1))
        finally:
            os.close(fd)
        return cls(nbytes, buf, None, name, ("name", name), False)

    def __repr__(self) -> str:
        where = f"name={self.name}" if self.name else f"fd={self.fd}"
        return f"SharedSegment(nbytes={self.nbytes}, {where})"


def _release(fd, name, pid: int) -> None:
    if fd is not None:
        _close_fd(fd)
    if name is not None and os.getpid() == pid:
        unlink_segment(name)
