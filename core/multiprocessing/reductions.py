"""How tensors and storages cross process boundaries through multiprocessing: by shared memory.

:func:`init_reductions` registers reducers with multiprocessing's ``ForkingPickler``, the
pickler behind ``Queue``, ``SimpleQueue``, ``Pipe``, ``Pool`` and the arguments of processes
started with ``spawn``/``forkserver`` (``import ember`` calls it, as ``import torch`` does). A
tensor is sent as its geometry plus its storage; the storage is first moved into shared memory
(``share_memory_()``, in place in the sender, as PyTorch does) and then sent by handle:

* ``file_descriptor`` strategy: a duplicate of the segment's descriptor
  (``multiprocessing.reduction.DupFd``: inherited by a spawned child, or fetched from the
  sender over a Unix socket, so the sender must still be alive when the receiver unpickles);
* ``file_system`` strategy: the segment's name in ``/dev/shm``.

The receiver maps the segment, so both processes see each other's writes. A storage received
twice (or sent back to the process that owns it) maps to the same storage object, so views stay
views. Tensors of a backend without shared memory (``supports_sharing`` False: opencl, cuda) are
sent by value, as a plain pickle sends them.
"""
from __future__ import annotations

import os
import weakref
from multiprocessing.reduction import DupFd, ForkingPickler

from .. import _devices
from ..backend import SharedSegment, make_tensor
from .._dtype import to_dtype
from .._storage import UntypedStorage
from .._tensor import Tensor

__all__ = ["init_reductions", "reduce_tensor", "reduce_storage", "rebuild_tensor", "rebuild_storage_fd",
           "rebuild_storage_filename"]

# segment key -> storage: every shared storage this process sent or received
_shared_cache: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def reduce_storage(storage: UntypedStorage):
    be = storage._device._backend
    if not be.supports_sharing:
        raise RuntimeError(f"a storage of device {storage.device} cannot be sent to another process: backend "
                           f"'{be.name}' has no shared memory (send a tensor, which is copied, or move it to cpu)")
    seg = be.shared_segment(storage)  # moves the storage into shared memory first
    _shared_cache.setdefault(seg.key, storage)
    dev = str(storage.device)
    if seg.fd is not None:
        return (rebuild_storage_fd, (DupFd(seg.fd), storage._nbytes, dev))
    return (rebuild_storage_filename, (seg.name, storage._nbytes, dev))


def _from_segment(seg: SharedSegment, nbytes: int, device: str) -> UntypedStorage:
    dev = _devices.canonical(device)
    storage = dev._backend.storage_from_segment(seg, nbytes, dev)
    _shared_cache[seg.key] = storage
    return storage


def rebuild_storage_fd(df, nbytes: int, device: str) -> UntypedStorage:
    fd = df.detach()  # always take the descriptor: the sender holds a duplicate until then
    st = os.fstat(fd)
    cached = _shared_cache.get(("fd", st.st_dev, st.st_ino))
    if cached is not None:
        os.close(fd)
        return cached
    return _from_segment(SharedSegment.from_fd(fd, nbytes), nbytes, device)


def rebuild_storage_filename(name: str, nbytes: int, device: str) -> UntypedStorage:
    cached = _shared_cache.get(("name", name))
    if cached is not None:
        return cached
    return _from_segment(SharedSegment.from_name(name, nbytes), nbytes, device)


def rebuild_tensor(storage: UntypedStorage, shape, stride, offset: int, dtype_name: str, requires_grad: bool):
    t = make_tensor(storage, tuple(shape), tuple(stride), offset, to_dtype(dtype_name), storage.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t: Tensor):
    if t._requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")
    if not t._device._backend.supports_sharing:
        return t.__reduce_ex__(2)  # by value
    return (rebuild_tensor, (t._storage, t._shape, t._stride, t._offset, t._dtype.name, t._requires_grad))


def init_reductions() -> None:
    """Register the reducers with ``multiprocessing.reduction.ForkingPickler`` (idempotent).
    ``nn.Parameter`` needs none: its own pickling sends its data as a plain tensor."""
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(UntypedStorage, reduce_storage)
