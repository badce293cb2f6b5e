"""The built-in MPI collective backend (mpi4py), for cpu and opencl tensors.

MPI works on host memory: a contiguous cpu tensor whose numpy view aliases its storage is
handed to MPI as is (zero copy); any other tensor (opencl, non-contiguous) is copied to a host
numpy buffer (``backend.to_numpy``) and the result is written back with the backend's ``copy_``.
MPI has no float16/bfloat16 arithmetic, so reductions of those run in float32 on the host and
are cast back; ops that only move data send raw bytes, so every dtype travels.

Nonblocking collectives (``async_op=True``) use MPI-3's ``I*`` calls; MPICH progresses them
when any MPI call runs, in particular in ``Work.wait()``/``is_completed()``.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np  # host buffers are what MPI moves

from . import _meta
from ._mpi_env import availability as _availability, mpi
from .process_group import CompletedWork, ProcessGroup, ReduceOp, Work
from .._device import device

_P2P_MAGIC = 0x656D6265  # "embe": the first integer of a point-to-point header


def _f32():
    return np.dtype(np.float32)


class _Host:
    """A C-contiguous numpy array over a tensor's values, and how to put results back."""

    __slots__ = ("tensor", "array", "copied")

    def __init__(self, t, need_values: bool = True) -> None:
        self.tensor = t
        a = t._device._backend.to_numpy(t)
        data = getattr(t._storage, "_data", None)
        if (a.flags.c_contiguous and a.flags.writeable and isinstance(data, np.ndarray)
                and np.may_share_memory(a, data)):
            self.array, self.copied = a, False  # zero copy: MPI reads and writes the storage itself
        else:
            self.array = np.array(a, order="C", copy=True) if need_values else np.empty(t._shape, t._dtype.np)
            self.copied = True

    def bytes(self) -> np.ndarray:
        return self.array.reshape(-1).view(np.uint8)

    def commit(self, values: np.ndarray | None = None) -> None:
        """The tensor now holds ``values`` (default: the buffer); bumps its version counter."""
        t = self.tensor
        if values is not None and values is not self.array:
            self.array[...] = values.reshape(self.array.shape)
        if self.copied:
            src = t._device._backend.from_numpy(self.array, t._device)
            t._device._kernels["copy_"](t, src)
        t._version[0] += 1


def _commit_bytes(t, flat_bytes: np.ndarray) -> None:
    """Write raw bytes (a uint8 slice) into tensor ``t``."""
    h = _Host(t, need_values=False)
    h.bytes()[...] = flat_bytes
    h.commit()


class _Reduction:
    """The host buffer MPI reduces for one tensor and the MPI op, by dtype: float16/bfloat16
    through float32, bool through logical ops, AVG as SUM then a division."""

    _BOOL_OPS = {ReduceOp.SUM: "LOR", ReduceOp.MAX: "LOR", ReduceOp.BOR: "LOR", ReduceOp.PRODUCT: "LAND",
                 ReduceOp.MIN: "LAND", ReduceOp.BAND: "LAND", ReduceOp.BXOR: "LXOR"}
    _OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
            ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}

    def __init__(self, MPI, host: _Host, op: ReduceOp, size: int) -> None:
        self.host, self.op, self.size = host, op, size
        a = host.array
        name = host.tensor._dtype.name
        if name in ("float16", "bfloat16"):
            self.buf = a.astype(np.float32)
        else:
            self.buf = a
        self.mpi_op = getattr(MPI, (self._BOOL_OPS if name == "bool" else self._OPS)[op])

    def finish(self) -> None:
        if self.op is ReduceOp.AVG:
            self.buf /= self.size
        self.host.commit(self.buf if self.buf is not self.host.array else None)


class MPIWork(Work):
    """Pending MPI requests, and what to do once they complete (copy results into tensors)."""

    def __init__(self, requests: list, finish=None, outputs: Sequence = (), keep=()) -> None:
        self._reqs = requests
        self._finish = finish
        self._outputs = tuple(outputs)
        self._keep = keep  # host buffers MPI is still reading or writing
        self._done = False
        self._exc: BaseException | None = None
        self.source = None

    def _complete(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            if self._finish is not None:
                self._finish(self)
        except BaseException as e:  # kept and raised by wait()
            self._exc = e
        self._keep = None

    def is_completed(self) -> bool:
        if self._done:
            return True
        try:
            if not mpi().Request.Testall(self._reqs):
                return False
        except Exception as e:
            self._exc = e
            self._done = True
            return True
        self._complete()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        if not self._done:
            MPI = mpi()
            try:
                if timeout is None:
                    MPI.Request.Waitall(self._reqs)
                else:
                    # MPI has no timed wait: poll, backing off to 1 ms
                    deadline = time.monotonic() + float(timeout.total_seconds() if hasattr(timeout, "total_seconds")
                                                        else timeout)
                    pause = 1e-5
                    while not MPI.Request.Testall(self._reqs):
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"Work.wait: the operation did not complete within {timeout} s")
                        time.sleep(pause)
                        pause = min(pause * 2, 1e-3)
            except RuntimeError:
                raise
            except Exception as e:
                self._done = True
                self._exc = e
            self._complete()
        if self._exc is not None:
            raise self._exc
        return True

    def exception(self):
        return self._exc


def _done(finish=None, outputs=()) -> Work:
    w = MPIWork([], finish, outputs)
    w._complete()
    if w._exc is not None:
        raise w._exc
    return w


class MPIProcessGroup(ProcessGroup):
    """A process group over an MPI communicator (a duplicate of, or a group of, ``COMM_WORLD``)."""

    name = "mpi"
    device_types = ("cpu", "opencl")
    accepts_strided = True  # _Host copies a strided view to a host buffer and back

    def __init__(self, comm, ranks: Sequence[int]) -> None:
        super().__init__(comm.Get_rank(), comm.Get_size(), ranks)
        self.comm = comm
        self.MPI = mpi()

    @classmethod
    def availability(cls) -> tuple:
        return _availability()

    @classmethod
    def create(cls, store, ranks: Sequence[int]) -> "MPIProcessGroup":
        MPI = mpi()
        world = MPI.COMM_WORLD
        ranks = list(ranks)
        if ranks == list(range(world.Get_size())):
            comm = world.Dup()
        else:
            wgroup = world.Get_group()
            sub = wgroup.Incl(ranks)
            comm = world.Create_group(sub)  # collective over the members only
            sub.Free()
            wgroup.Free()
        return cls(comm, ranks)

    def destroy(self) -> None:
        MPI = self.MPI
        if self.comm is not None and not MPI.Is_finalized() and self.comm != MPI.COMM_NULL:
            self.comm.Free()
        self.comm = None

    def _comm(self):
        if self.comm is None:
            raise RuntimeError("this process group has been destroyed (destroy_process_group)")
        return self.comm

    # -- reductions --------------------------------------------------------------------------
    def allreduce(self, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        red = _Reduction(MPI, _Host(tensor), op, self._size)
        fin = lambda w: red.finish()  # noqa: E731
        if async_op:
            return MPIWork([comm.Iallreduce(MPI.IN_PLACE, red.buf, op=red.mpi_op)], fin, (tensor,), red)
        comm.Allreduce(MPI.IN_PLACE, red.buf, op=red.mpi_op)
        return _done(fin, (tensor,))

    def reduce(self, tensor, root: int, op: ReduceOp, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        red = _Reduction(MPI, _Host(tensor), op, self._size)
        is_root = self._rank == root
        fin = (lambda w: red.finish()) if is_root else None
        send = MPI.IN_PLACE if is_root else red.buf
        recv = red.buf if is_root else None
        if async_op:
            return MPIWork([comm.Ireduce(send, recv, op=red.mpi_op, root=root)], fin, (tensor,), red)
        comm.Reduce(send, recv, op=red.mpi_op, root=root)
        return _done(fin, (tensor,))

    def reduce_scatter_tensor(self, output, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        src = _Reduction(MPI, _Host(tensor), op, self._size)
        out = _Reduction(MPI, _Host(output, need_values=False), op, self._size)
        fin = lambda w: out.finish()  # noqa: E731
        if async_op:
            return MPIWork([comm.Ireduce_scatter_block(src.buf, out.buf, op=src.mpi_op)], fin, (output,), (src, out))
        comm.Reduce_scatter_block(src.buf, out.buf, op=src.mpi_op)
        return _done(fin, (output,))

    # -- data movement (raw bytes: every dtype) -------------------------------------------------
    def broadcast(self, tensor, root: int, async_op: bool = False) -> Work:
        comm = self._comm()
        is_root = self._rank == root
        h = _Host(tensor, need_values=is_root)
        fin = None if is_root else (lambda w: h.commit())
        if async_op:
            return MPIWork([comm.Ibcast(h.bytes(), root=root)], fin, (tensor,), h)
        comm.Bcast(h.bytes(), root=root)
        return _done(fin, (tensor,))

    @staticmethod
    def _layout(tensors) -> tuple:
        counts = [t.numel() * t._dtype.itemsize for t in tensors]
        displs = [0] * len(counts)
        for i in range(1, len(counts)):
            displs[i] = displs[i - 1] + counts[i - 1]
        return counts, displs

    @staticmethod
    def _unpack(outputs, recv: np.ndarray, counts, displs) -> None:
        for o, c, d in zip(outputs, counts, displs):
            _commit_bytes(o, recv[d:d + c])

    def allgather(self, outputs: list, tensor, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        send = _Host(tensor)
        counts, displs = self._layout(outputs)
        recv = np.empty(sum(counts), np.uint8)
        fin = lambda w: self._unpack(outputs, recv, counts, displs)  # noqa: E731
        args = ([send.bytes(), MPI.BYTE], [recv, (counts, displs), MPI.BYTE])
        if async_op:
            return MPIWork([comm.Iallgatherv(*args)], fin, outputs, (send, recv))
        comm.Allgatherv(*args)
        return _done(fin, outputs)

    def allgather_into_tensor(self, output, tensor, async_op: bool = False) -> Work:
        comm = self._comm()
        send = _Host(tensor)
        out = _Host(output, need_values=False)
        fin = lambda w: out.commit()  # noqa: E731
        if async_op:
            return MPIWork([comm.Iallgather(send.bytes(), out.bytes())], fin, (output,), (send, out))
        comm.Allgather(send.bytes(), out.bytes())
        return _done(fin, (output,))

    def gather(self, outputs: list | None, tensor, root: int, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        send = _Host(tensor)
        if self._rank == root:
            counts, displs = self._layout(outputs)
            recv = np.empty(sum(counts), np.uint8)
            rbuf = [recv, (counts, displs), MPI.BYTE]
            fin = lambda w: self._unpack(outputs, recv, counts, displs)  # noqa: E731
        else:
            recv = rbuf = fin = None
        if async_op:
            return MPIWork([comm.Igatherv([send.bytes(), MPI.BYTE], rbuf, root=root)], fin, outputs or (),
                           (send, recv))
        comm.Gatherv([send.bytes(), MPI.BYTE], rbuf, root=root)
        return _done(fin, outputs or ())

    def scatter(self, output, inputs: list | None, root: int, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        out = _Host(output, need_values=False)
        if self._rank == root:
            counts, displs = self._layout(inputs)
            send = np.concatenate([_Host(t).bytes() for t in inputs]) if inputs else np.empty(0, np.uint8)
            sbuf = [send, (counts, displs), MPI.BYTE]
        else:
            send = sbuf = None
        fin = lambda w: out.commit()  # noqa: E731
        if async_op:
            return MPIWork([comm.Iscatterv(sbuf, [out.bytes(), MPI.BYTE], root=root)], fin, (output,), (send, out))
        comm.Scatterv(sbuf, [out.bytes(), MPI.BYTE], root=root)
        return _done(fin, (output,))

    def barrier(self, async_op: bool = False) -> Work:
        comm = self._comm()
        if async_op:
            return MPIWork([comm.Ibarrier()])
        comm.Barrier()
        return CompletedWork()

    # -- point to point: a small header (dtype and shape) goes first, so that a receiver with a
    #    tensor of another shape or dtype raises instead of reading garbage ----------------------
    @staticmethod
    def _header(t) -> np.ndarray:
        return np.array([_P2P_MAGIC] + _meta.signature(t), dtype=np.int64)

    def _check_header(self, header: np.ndarray, tensor, src: int, op: str) -> None:
        got = [int(v) for v in header]
        want = _meta.signature(tensor)
        if got[0] != _P2P_MAGIC:
            raise RuntimeError(f"{op}: the message from rank {self.ranks[src]} was not sent by ember.distributed.send")
        if got[1:] != want:
            raise RuntimeError(
                f"{op}: rank {self.ranks[src]} sent {_meta.describe(got[1:])} but this rank (rank "
                f"{self.ranks[self._rank]}) receives into {_meta.describe(want)}; sender and receiver must use the "
                "same shape and dtype (the receiving tensor was left unchanged)")

    def send(self, tensor, peer: int, tag: int = 0, async_op: bool = False) -> Work:
        comm = self._comm()
        h = _Host(tensor)
        header = self._header(tensor)
        if async_op:
            reqs = [comm.Isend(header, dest=peer, tag=tag), comm.Isend(h.bytes(), dest=peer, tag=tag)]
            return MPIWork(reqs, None, (tensor,), (h, header))
        comm.Send(header, dest=peer, tag=tag)
        comm.Send(h.bytes(), dest=peer, tag=tag)
        return CompletedWork((tensor,))

    def _drain(self, header: np.ndarray, src: int, tag: int) -> None:
        """Receive (and drop) the data message that follows a refused header."""
        sig = [int(v) for v in header[1:]]
        n = _meta.nbytes_of(sig) if header[0] == _P2P_MAGIC and sig[0] in _meta.DTYPE_NAMES else 0
        self._comm().Recv(np.empty(n, np.uint8), source=src, tag=tag)

    def recv(self, tensor, peer: int | None, tag: int = 0, async_op: bool = False) -> Work:
        comm, MPI = self._comm(), self.MPI
        source = MPI.ANY_SOURCE if peer is None else peer
        header = np.empty(1 + _meta.SIG_LEN, np.int64)
        if not async_op:
            status = MPI.Status()
            comm.Recv(header, source=source, tag=tag, status=status)
            src = status.Get_source()
            try:
                self._check_header(header, tensor, src, "recv")
            except RuntimeError:
                self._drain(header, src, tag)
                raise
            h = _Host(tensor, need_values=False)
            comm.Recv(h.bytes(), source=src, tag=tag)
            h.commit()
            w = CompletedWork((tensor,))
            w.source = src
            return w
        # asynchronous: the data lands in a scratch buffer and reaches the tensor only after its
        # header has been checked
        scratch = np.empty(tensor.numel() * tensor._dtype.itemsize, np.uint8)
        state = {"data_req": None}

        def finish(w):
            src = w._status.Get_source()
            w.source = src
            try:
                self._check_header(header, tensor, src, "irecv")
            except RuntimeError:
                if state["data_req"] is None:
                    self._drain(header, src, tag)
                raise
            if state["data_req"] is None:
                comm.Recv(scratch, source=src, tag=tag)
            _commit_bytes(tensor, scratch)

        if peer is None:
            # the data must come from whichever rank sent the header: receive it on completion
            work = _AnySourceRecv(comm.Irecv(header, source=source, tag=tag), finish, (tensor,), (header, scratch))
        else:
            hreq = comm.Irecv(header, source=source, tag=tag)
            state["data_req"] = comm.Irecv(scratch, source=source, tag=tag)
            work = _AnySourceRecv(hreq, finish, (tensor,), (header, scratch), state["data_req"])
        work._check = lambda src: self._check_header(header, tensor, src, "irecv")
        return work

    # -- host-side helpers ------------------------------------------------------------------------
    def object_device(self):
        return device("cpu")

    def allgather_ints(self, values: Sequence[int], timeout: float | None = None) -> list:
        mine = np.asarray(list(values), dtype=np.int64)
        out = np.empty((self._size, mine.size), dtype=np.int64)
        if timeout is None:
            self._comm().Allgather(mine, out)
        else:
            MPIWork([self._comm().Iallgather(mine, out)], keep=(mine, out)).wait(timeout)
        return out.tolist()

    def allgather_object(self, obj) -> list:
        return self._comm().allgather(obj)

    def broadcast_object(self, obj, root: int):
        return self._comm().bcast(obj, root=root)

    def gather_object(self, obj, root: int):
        return self._comm().gather(obj, root=root)

    def scatter_object(self, objs, root: int):
        return self._comm().scatter(objs, root=root)


class _AnySourceRecv(MPIWork):
    """An ``irecv``: the header request comes first and carries the status (the sender's rank);
    the data request follows it (posted at once for a known sender, on completion otherwise)."""

    def __init__(self, header_req, finish, outputs, keep, data_req=None) -> None:
        super().__init__([header_req] + ([data_req] if data_req is not None else []), finish, outputs, keep)
        self._status = None
        self._check = None  # check(src): raises RuntimeError when the header does not match

    def _poll(self, block: bool) -> bool:
        MPI = mpi()
        try:
            if self._status is None:
                st = MPI.Status()
                if block:
                    self._reqs[0].Wait(st)
                elif not self._reqs[0].Test(st):
                    return False
                self._status = st
            rest = self._reqs[1:]
            if rest:
                if block:
                    MPI.Request.Waitall(rest)
                elif not MPI.Request.Testall(rest):
                    return False
        except Exception as e:  # e.g. MPI_ERR_TRUNCATE: a longer message than the tensor
            self._done = True
            self._exc = e
            if self._status is not None and self._check is not None:  # explain it by the sender's header
                try:
                    self._check(self._status.Get_source())
                except RuntimeError as err:
                    self._exc = err
            return True
        self._complete()
        return True

    def is_completed(self) -> bool:
        return True if self._done else self._poll(False)

    def wait(self, timeout: float | None = None) -> bool:
        if not self._done:
            if timeout is None:
                self._poll(True)
            else:
                deadline = time.monotonic() + float(timeout)
                while not self._poll(False):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"Work.wait: the receive did not complete within {timeout} s")
                    time.sleep(1e-4)
        if self._exc is not None:
            raise self._exc
        return True
