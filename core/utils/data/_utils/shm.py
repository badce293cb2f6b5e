"""How batches cross from a worker process to the main process: through shared memory.

A worker pickles each batch with :class:`_Encoder`, which replaces every cpu tensor (and every
numeric numpy array) by a reference. The bytes of those tensors live in POSIX shared-memory
segments:

* tensors that ``default_collate`` builds in a worker are allocated in a fresh segment from the
  start (:func:`stack_shared`), so stacking the samples is the only copy the batch ever gets;
* any other tensor or array found in the batch is copied into one extra segment per batch.

The message sent to the main process holds the pickle of the batch's *structure* (small), the
segment names and one descriptor (offset, shape, strides, dtype) per tensor. The main process
maps each segment, unlinks its name at once (so nothing is left behind in ``/dev/shm`` whatever
happens next) and builds tensors over the mapping with ``ember.from_numpy``: the data is never
pickled, copied through a pipe or unpickled. The mapping lives as long as the tensors do.

Segments are registered with multiprocessing's resource tracker (one per program, shared by the
workers): the main process unregisters each segment it takes over, and should a worker die
between creating a segment and handing it over, the tracker unlinks it when the program ends.

Set ``EMBER_DATALOADER_TRANSPORT=pickle`` to send batches as plain pickles instead (for
comparison, and on platforms without POSIX shared memory, where it is the default).
"""
from __future__ import annotations

import math
import io
import itertools
import mmap
import os
import pickle
import secrets
import warnings
import weakref

import numpy as np
from multiprocessing import resource_tracker
from ...._dtype import to_dtype
from ....backend.shared_memory import unlink_segment
from ....ops.creation import empty, from_numpy

try:  # the module behind multiprocessing.shared_memory on POSIX systems
    import _posixshmem
except ImportError:  # pragma: no cover - Windows
    _posixshmem = None

from ...._tensor import Tensor

AVAILABLE = _posixshmem is not None
_ALIGN = 64
_NUMERIC_KINDS = frozenset("biufcmM")
_counter = itertools.count()

# storage -> [name, nbytes, handed_over]: segments this process allocated for tensors
_owned: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# names created by this process that are not handed over yet (a worker owns them until sent)
_pending: list = []
_state = {"transport": "shm" if AVAILABLE else "pickle", "warned": False, "token": "0"}


def default_transport() -> str:
    """``"shm"`` where POSIX shared memory exists, unless ``EMBER_DATALOADER_TRANSPORT`` says
    ``pickle``."""
    want = os.environ.get("EMBER_DATALOADER_TRANSPORT", "shm").strip().lower() or "shm"
    if want not in ("shm", "pickle"):
        raise ValueError(f"EMBER_DATALOADER_TRANSPORT must be 'shm' or 'pickle', got {want!r}")
    return want if AVAILABLE else "pickle"


def set_transport(name: str, token: str = "0") -> None:
    """Select the transport of this (worker) process and the tag of its pool's segment names."""
    _state["transport"] = name
    _state["token"] = token


def using_shm() -> bool:
    return _state["transport"] == "shm"


def prepare() -> None:
    """Run in the main process before starting workers: the resource tracker must be running
    so that the workers (forked, spawned or forkserved) share it with this process."""
    if AVAILABLE:
        resource_tracker.ensure_running()


# -- segments ---------------------------------------------------------------------------------
def _new_name() -> str:
    # short (macOS allows 31 characters); pid and the pool's token let the main process find what
    # a dead worker left behind (release_orphans)
    return f"/ember_{os.getpid():x}_{_state['token']}_{next(_counter):x}"


def new_token() -> str:
    """A random tag for the segments of one worker pool."""
    return secrets.token_hex(3)


def release_orphans(pids, token: str) -> None:
    """Unlink segments that workers ``pids`` of the pool ``token`` created and never handed over
    (a worker killed while making a batch). Call only once those workers have exited and their
    pipes are drained. Needs a listable ``/dev/shm`` (Linux); elsewhere the resource tracker
    unlinks them when the program ends."""
    if not AVAILABLE or not os.path.isdir("/dev/shm"):
        return
    prefixes = tuple(f"ember_{p:x}_{token}_" for p in pids if p is not None)
    try:
        names = [f for f in os.listdir("/dev/shm") if f.startswith(prefixes)]
    except OSError:  # pragma: no cover
        return
    for f in names:
        name = "/" + f
        # a worker killed between creating and registering a segment: register first (a set add)
        # so that the tracker's unregister finds it
        resource_tracker.register(name, "shared_memory")
        release(name)


class SharedMemoryFull(OSError):
    """The shared-memory filesystem has no room for a segment."""


def _create(nbytes: int):
    name = _new_name()
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        try:
            # reserve the pages now: a full /dev/shm then fails here with ENOSPC instead of
            # killing the worker with SIGBUS on its first write (PyTorch's "bus error")
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, nbytes)
            else:  # pragma: no cover - macOS
                os.ftruncate(fd, nbytes)
        except OSError as e:
            _posixshmem.shm_unlink(name)
            raise SharedMemoryFull(e.errno, f"cannot allocate {nbytes} bytes of shared memory ({e.strerror}); "
                                            "/dev/shm may be too small (docker: --shm-size)") from None
        mm = mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)
    resource_tracker.register(name, "shared_memory")
    _pending.append(name)
    return name, mm


def _attach(name: str, nbytes: int):
    fd = _posixshmem.shm_open(name, os.O_RDWR, 0o600)
    try:
        return mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)


def release(name: str) -> None:
    """Unlink a segment's name and stop tracking it (its mappings stay valid)."""
    unlink_segment(name)


def release_pending() -> None:
    """Give back every segment this worker created and did not hand over."""
    while _pending:
        release(_pending.pop())


def _warn_full(e) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(f"DataLoader worker: {e}; sending batches as pickles instead", RuntimeWarning, stacklevel=3)


# -- allocation in a worker -----------------------------------------------------------------------
def empty_shared(shape: tuple, dtype):
    """A new contiguous cpu tensor whose storage is a fresh shared-memory segment, or None when
    that is not possible here (no shared memory, zero bytes, a cpu backend that copies)."""
    n = math.prod(shape)
    nbytes = n * dtype.itemsize
    if not AVAILABLE or nbytes == 0:
        return None
    try:
        name, mm = _create(nbytes)
    except SharedMemoryFull as e:
        _warn_full(e)
        return None
    arr = np.frombuffer(mm, dtype=dtype.np, count=n).reshape(shape)
    t = from_numpy(arr)
    if t.data_ptr() != arr.ctypes.data:  # this cpu backend copied: the tensor is not in the segment
        _pending.remove(name)
        release(name)
        return None
    _owned[t._storage] = [name, nbytes, False]
    return t


def stack_shared(batch: list):
    """``ember.stack(batch)`` written straight into shared memory, or None where the plain stack
    must run instead (not cpu, mixed shapes or dtypes, autograd involved)."""
    elem = batch[0]
    if elem.__class__ is not Tensor or elem._device._type != "cpu":
        return None
    shape, dt = elem._shape, elem._dtype
    for t in batch:
        if (t.__class__ is not Tensor or t._shape != shape or t._dtype is not dt or t._requires_grad
                or t._device is not elem._device):
            return None
    out = empty_shared((len(batch),) + tuple(shape), dt)
    if out is None:
        return None
    for i, t in enumerate(batch):
        out.select(0, i).copy_(t)
    return out


# -- encoding (worker side) -----------------------------------------------------------------------
class _Encoder(pickle.Pickler):
    """Pickles a batch, leaving every cpu tensor and numeric numpy array out as a reference."""

    def __init__(self, f):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.refs: list = []
        self._seen: dict = {}

    def persistent_id(self, obj):
        cls = obj.__class__
        if cls is Tensor:
            if obj._device._type != "cpu":
                return None
        elif cls is not np.ndarray or obj.dtype.kind not in _NUMERIC_KINDS or obj.dtype.hasobject:
            return None
        key = id(obj)
        i = self._seen.get(key)
        if i is None:
            i = self._seen[key] = len(self.refs)
            self.refs.append(obj)
        return i


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def encode(obj) -> tuple:
    """``(payload, segments, descriptors)`` for :func:`decode`; ``descriptors`` is None for a
    plain pickle. On success the segments named in ``segments`` belong to the receiver once the
    message is sent (call :func:`sent`); every other pending segment has been released."""
    if not using_shm():
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), (), None
    buf = io.BytesIO()
    enc = _Encoder(buf)
    enc.dump(obj)
    refs = enc.refs
    descs: list = [None] * len(refs)
    segs: dict = {}
    pack: list = []
    for i, r in enumerate(refs):
        if r.__class__ is Tensor:
            if r._requires_grad and not r.is_leaf:
                raise RuntimeError(
                    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
                    "support crossing process boundaries. If you just want to transfer the data, call detach() on "
                    f"the tensor before returning it from the dataset or collate_fn (got {r._dtype.name}"
                    f"{list(r._shape)} with grad_fn={type(r._grad_fn).__name__})")
            own = _owned.get(r._storage)
            if own is not None and not own[2]:
                segs[own[0]] = own[1]
                descs[i] = ("T", own[0], r._offset * r._dtype.itemsize, r._shape, r._stride, r._dtype.name,
                            r._requires_grad)
            elif r.numel() == 0:
                descs[i] = ("E", r._shape, r._dtype.name, r._requires_grad)
            else:
                pack.append(i)
        elif r.nbytes == 0:
            descs[i] = ("e", r.shape, r.dtype)
        else:
            pack.append(i)
    if pack:
        total = sum(_aligned(refs[i].nbytes) for i in pack)
        try:
            name, mm = _create(total)
        except SharedMemoryFull as e:
            _warn_full(e)
            release_pending()
            return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), (), None
        off = 0
        for i in pack:
            r = refs[i]
            if r.__class__ is Tensor:
                src = r.detach()._host()
                dst = np.ndarray(r._shape, src.dtype, buffer=mm, offset=off)
                np.copyto(dst, src)  # a byte copy into the segment, no arithmetic
                descs[i] = ("T", name, off, r._shape, _cstrides(r._shape), r._dtype.name, r._requires_grad)
            else:
                dst = np.ndarray(r.shape, r.dtype, buffer=mm, offset=off)
                np.copyto(dst, r)
                descs[i] = ("A", name, off, r.shape, r.dtype)
            off += _aligned(r.nbytes)
        del dst
        segs[name] = total
    for name in list(_pending):  # segments made for tensors that did not end up in the batch
        if name not in segs:
            _pending.remove(name)
            release(name)
    return buf.getvalue(), tuple(segs.items()), descs


def sent() -> None:
    """The last encoded message was sent: its segments now belong to the main process."""
    if _pending:
        names = set(_pending)
        for own in list(_owned.values()):
            if own[0] in names:
                own[2] = True
        _pending.clear()


def _cstrides(shape) -> tuple:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


# -- decoding (main side) --------------------------------------------------------------------------
class _Decoder(pickle.Unpickler):
    def __init__(self, f, objs):
        super().__init__(f)
        self._objs = objs

    def persistent_load(self, pid):
        return self._objs[pid]


def decode(payload: bytes, segments, descs):
    """Rebuild a batch sent by :func:`encode`; takes over (maps and unlinks) its segments."""
    if descs is None:
        return pickle.loads(payload)
    maps = {}
    try:
        for name, nbytes in segments:
            maps[name] = _attach(name, nbytes)
    finally:
        for name, _ in segments:
            release(name)
    objs = [_build(d, maps) for d in descs]
    return _Decoder(io.BytesIO(payload), objs).load()


def discard(segments) -> None:
    """Drop a message that will never be decoded (a stale epoch, shutdown)."""
    for name, _ in segments:
        release(name)


def _build(d, maps):
    kind = d[0]
    if kind == "T":
        _, name, off, shape, stride, dname, rg = d
        dt = to_dtype(dname)
        isz = dt.itemsize
        arr = np.ndarray(shape, dt.np, buffer=maps[name], offset=off, strides=tuple(s * isz for s in stride))
        t = from_numpy(arr)
    elif kind == "E":
        _, shape, dname, rg = d
        t = empty(shape, dtype=to_dtype(dname))
    elif kind == "A":
        _, name, off, shape, npdt = d
        return np.ndarray(shape, npdt, buffer=maps[name], offset=off)
    else:  # "e": an empty array
        return np.empty(d[1], d[2])
    if rg:
        t.requires_grad_(True)
    return t
