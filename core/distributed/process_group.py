"""The interface a collective backend implements: :class:`ProcessGroup`, :class:`Work`, :class:`ReduceOp`.

A collective backend (MPI, built in; NCCL, from the cuda backend) is a ``ProcessGroup`` subclass
registered through the ``ember_register_collectives`` hook with the device types whose tensors
it moves::

    @ember.hookimpl
    def ember_register_collectives(register):
        register("nccl", "ember_mycuda.nccl:NCCLProcessGroup", ("cuda",))

What ember guarantees to an implementation (the front ends in :mod:`ember.distributed` do it):

* every tensor argument is an ember tensor of one of ``device_types``, contiguous (unless the
  class sets ``accepts_strided``), of the same
  dtype as the other tensors of the call, with the shapes the op needs on this rank (cross-rank
  agreement is checked by the front end before the call, unless checks are switched off);
* ranks (``root``, ``peer``) are **group** ranks, ``0 <= r < size()``;
* ``op`` is a :class:`ReduceOp` member the dtype supports (AVG only on floating dtypes).

Every collective method returns a :class:`Work`; with ``async_op=False`` it may do the whole
operation before returning (and return a completed Work). Results are written into the given
output tensors, which must see them once ``wait()`` has returned.
"""
from __future__ import annotations

import enum
import pickle
from typing import Sequence

import numpy as np  # host-side format of the pickled bytes

from .._device import device
from .._dtype import int64, uint8
from ..ops.creation import empty, from_numpy, tensor

__all__ = ["ReduceOp", "Work", "CompletedWork", "ProcessGroup"]


class ReduceOp(enum.Enum):
    """How ``all_reduce``, ``reduce`` and ``reduce_scatter`` combine the ranks' tensors.

    ``AVG`` is the sum divided by the group size (floating-point dtypes only: ember refuses to
    average integers rather than truncate silently). On ``bool`` tensors SUM/MAX/BOR mean
    logical or, PRODUCT/MIN/BAND logical and, BXOR logical xor.
    """

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}>"


class Work:
    """A handle on a collective or point-to-point operation started with ``async_op=True``.

    ``wait()`` blocks until the operation has finished and its results are in the output
    tensors; ``is_completed()`` polls without blocking. A failure is raised by ``wait()``.
    """

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done (at most ``timeout`` seconds: then ``RuntimeError``); returns True."""
        raise NotImplementedError

    def is_completed(self) -> bool:
        """True once the operation has finished (polls, never blocks)."""
        raise NotImplementedError

    def is_success(self) -> bool:
        """True when the operation finished without error."""
        return self.is_completed() and self.exception() is None

    def exception(self) -> BaseException | None:
        return None

    def result(self) -> list:
        """The output tensors of the operation (after ``wait()``)."""
        return list(getattr(self, "_outputs", ()))

    def synchronize(self) -> None:
        self.wait()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} completed={self.is_completed()}>"


class CompletedWork(Work):
    """A Work for an operation that already finished (the synchronous path)."""

    def __init__(self, outputs: Sequence = (), value=None) -> None:
        self._outputs = tuple(outputs)
        self.value = value

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


class ProcessGroup:
    """Base class of collective backends: a fixed set of processes that run collectives together.

    Subclasses set ``name`` and ``device_types`` and implement :meth:`create` and the collective
    methods below. A group is built by :meth:`create`, called collectively by every member (only
    the members) when ``init_process_group`` or ``new_group`` runs; creation should be cheap —
    open expensive communicators lazily, at the first collective.

    ``ranks`` holds the global ranks of the members in group-rank order; every rank argument of
    the methods is a group rank.
    """

    #: the backend's name, as given to ``init_process_group(backend=...)``
    name: str = ""
    #: device types whose tensors this backend moves
    device_types: tuple = ()
    #: False: the front ends hand over contiguous tensors (copying strided views in and out);
    #: True: the backend accepts any strided view and writes results into it
    accepts_strided: bool = False

    def __init__(self, rank: int, size: int, ranks: Sequence[int]) -> None:
        self._rank = int(rank)
        self._size = int(size)
        self.ranks = tuple(int(r) for r in ranks)

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def availability(cls) -> tuple:
        """``(True, "")`` or ``(False, reason)`` (for example, a missing library); must not fail."""
        return True, ""

    @classmethod
    def create(cls, store, ranks: Sequence[int]) -> "ProcessGroup":
        """Build the group of the processes with global ranks ``ranks`` (sorted); called by
        every member, collectively. ``store`` exchanges small python objects among exactly
        these members (``store.rank``, ``store.size``, ``store.broadcast_object(obj, root)``,
        ``store.allgather_object(obj)``, ``store.global_rank``): what NCCL needs to share its
        unique id."""
        raise NotImplementedError

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of processes in the group."""
        return self._size

    def destroy(self) -> None:
        """Release the group's communicators (``destroy_process_group``)."""

    def serves(self, device_type: str) -> bool:
        return device_type in self.device_types

    # -- collectives (override) -------------------------------------------------------------
    def allreduce(self, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        """Reduce ``tensor`` over the group, in place, on every rank."""
        raise NotImplementedError(f"process group '{self.name}' does not implement allreduce")

    def broadcast(self, tensor, root: int, async_op: bool = False) -> Work:
        """Copy ``tensor`` of rank ``root`` into ``tensor`` of every other rank."""
        raise NotImplementedError(f"process group '{self.name}' does not implement broadcast")

    def reduce(self, tensor, root: int, op: ReduceOp, async_op: bool = False) -> Work:
        """Reduce into ``tensor`` of rank ``root`` (other ranks' tensors are left unchanged)."""
        raise NotImplementedError(f"process group '{self.name}' does not implement reduce")

    def allgather(self, outputs: list, tensor, async_op: bool = False) -> Work:
        """``outputs[r]`` receives rank ``r``'s ``tensor`` (its shape may differ per rank)."""
        raise NotImplementedError(f"process group '{self.name}' does not implement allgather")

    def allgather_into_tensor(self, output, tensor, async_op: bool = False) -> Work:
        """``output`` (``size() * tensor.numel()`` elements, contiguous) receives every rank's
        ``tensor`` in rank order."""
        raise NotImplementedError(f"process group '{self.name}' does not implement allgather_into_tensor")

    def reduce_scatter_tensor(self, output, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        """Reduce ``tensor`` (``size() * output.numel()`` elements) over the group and give
        block ``r`` of the result to rank ``r``'s ``output``."""
        raise NotImplementedError(f"process group '{self.name}' does not implement reduce_scatter_tensor")

    def gather(self, outputs: list | None, tensor, root: int, async_op: bool = False) -> Work:
        """``outputs[r]`` on rank ``root`` receives rank ``r``'s ``tensor``; ``outputs`` is None
        elsewhere."""
        raise NotImplementedError(f"process group '{self.name}' does not implement gather")

    def scatter(self, output, inputs: list | None, root: int, async_op: bool = False) -> Work:
        """Rank ``r``'s ``output`` receives ``inputs[r]`` of rank ``root``; ``inputs`` is None
        elsewhere."""
        raise NotImplementedError(f"process group '{self.name}' does not implement scatter")

    def send(self, tensor, peer: int, tag: int = 0, async_op: bool = False) -> Work:
        raise NotImplementedError(f"process group '{self.name}' does not implement send")

    def recv(self, tensor, peer: int | None, tag: int = 0, async_op: bool = False) -> Work:
        """Receive into ``tensor`` from ``peer`` (None: any rank). The Work's ``source`` is the
        sender's group rank once it has completed."""
        raise NotImplementedError(f"process group '{self.name}' does not implement recv")

    def barrier(self, async_op: bool = False) -> Work:
        raise NotImplementedError(f"process group '{self.name}' does not implement barrier")

    # -- host-side helpers, with default implementations over the tensor collectives -------------
    def object_device(self):
        """The device on which the default object collectives stage their bytes."""
        return device(self.device_types[0])

    def allgather_ints(self, values: Sequence[int], timeout: float | None = None) -> list:
        """Every rank's list of ``len(values)`` integers (the cross-rank argument checks);
        ``RuntimeError`` after ``timeout`` seconds."""
        dev = self.object_device()
        mine = tensor(list(values), dtype=int64, device=dev)
        outs = [empty(len(values), dtype=int64, device=dev) for _ in range(self.size())]
        self.allgather(outs, mine, async_op=timeout is not None).wait(timeout)
        return [o.tolist() for o in outs]

    def allgather_object(self, obj) -> list:
        """Every rank's picklable ``obj``, in rank order."""
        data = pickle.dumps(obj)
        lengths = [v[0] for v in self.allgather_ints([len(data)])]
        dev = self.object_device()
        mine = from_numpy(np.frombuffer(bytearray(data), dtype=np.uint8)).to(dev)
        outs = [empty(n, dtype=uint8, device=dev) for n in lengths]
        self.allgather(outs, mine).wait()
        return [pickle.loads(o.cpu().numpy().tobytes()) for o in outs]

    def broadcast_object(self, obj, root: int):
        """Rank ``root``'s picklable ``obj`` on every rank."""
        return self.allgather_object(obj if self.rank() == root else None)[root]

    def gather_object(self, obj, root: int) -> list | None:
        """Every rank's ``obj`` as a list on rank ``root``; None elsewhere."""
        objs = self.allgather_object(obj)
        return objs if self.rank() == root else None

    def scatter_object(self, objs: list | None, root: int):
        """Element ``rank()`` of rank ``root``'s list ``objs``."""
        return self.broadcast_object(objs, root)[self.rank()]

    def __repr__(self) -> str:
        return f"<ember ProcessGroup {self.name!r} rank {self._rank} of {self._size} (global ranks {list(self.ranks)})>"
