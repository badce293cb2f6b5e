"""The NCCL collective backend for cuda tensors (``init_process_group("nccl")``), through
``cupy.cuda.nccl``.

Rendezvous: rank 0 of the group makes the NCCL unique id and ``ProcessGroup.create``'s store
broadcasts it (the store runs over MPI in an MPI job, or is trivial in a one-process job). The
communicator itself is opened at the first collective, on the device of its tensor (call
``ember.cuda.set_device(local_rank)`` first, as with PyTorch), so creating a group stays cheap.

Collectives run on the current stream, in order with the kernels that produced their inputs; an
``async_op=True`` call returns a :class:`NCCLWork` whose ``wait`` waits for an event recorded
after it. NCCL has no int16 or bool and no bitwise reductions: int16 travels as int32, bool as
uint8 (SUM/MAX/BOR mean or, PRODUCT/MIN/BAND mean and, as MPI's backend does), and BAND/BOR/BXOR
on integers are refused with a message.
"""
from __future__ import annotations

import threading
from typing import Sequence

from ember.backend import dtypes as D
from ember.backend import mark_written
from ember.distributed.process_group import CompletedWork, ProcessGroup, ReduceOp, Work

from . import _cupy


def _nccl():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from cupy.cuda import nccl
    return nccl


# ember dtype -> (nccl dtype name, the dtype it travels as, if another)
_TYPES = {D.int8: ("NCCL_INT8", None), D.uint8: ("NCCL_UINT8", None), D.int32: ("NCCL_INT32", None),
          D.int64: ("NCCL_INT64", None), D.float16: ("NCCL_FLOAT16", None), D.float32: ("NCCL_FLOAT32", None),
          D.float64: ("NCCL_FLOAT64", None), D.bfloat16: ("NCCL_BFLOAT16", None), D.int16: ("NCCL_INT32", D.int32),
          D.bool: ("NCCL_UINT8", D.uint8)}
_OPS = {ReduceOp.SUM: "NCCL_SUM", ReduceOp.PRODUCT: "NCCL_PROD", ReduceOp.MAX: "NCCL_MAX", ReduceOp.MIN: "NCCL_MIN",
        ReduceOp.AVG: "NCCL_AVG"}
_BOOL_OPS = {ReduceOp.SUM: "NCCL_MAX", ReduceOp.MAX: "NCCL_MAX", ReduceOp.BOR: "NCCL_MAX",
             ReduceOp.PRODUCT: "NCCL_MIN", ReduceOp.MIN: "NCCL_MIN", ReduceOp.BAND: "NCCL_MIN"}


class NCCLWork(Work):
    """A collective queued on a stream: done once the event recorded after it has fired."""

    def __init__(self, event, outputs=(), finish=None) -> None:
        self._event, self._outputs, self._finish = event, tuple(outputs), finish
        self._done = False

    def wait(self, timeout: float | None = None) -> bool:
        if not self._done:
            self._event.synchronize()
            self._done = True
            if self._finish is not None:
                self._finish()
        return True

    def is_completed(self) -> bool:
        if not self._done and self._event.done:
            self.wait()
        return self._done


class _Buf:
    """The contiguous device buffer NCCL reads and writes for a tensor, in a dtype NCCL has."""

    def __init__(self, t, nccl) -> None:
        from .arrays import nd
        name, travel = _TYPES[t._dtype]
        self.tensor = t
        self.dtype = getattr(nccl, name)
        a = nd(t)
        self.array = a if travel is None else a.astype(travel.np)
        self.copied = travel is not None

    @property
    def ptr(self) -> int:
        return self.array.data.ptr

    @property
    def count(self) -> int:
        return self.array.size

    def commit(self) -> None:
        from .arrays import cp, nd
        if self.copied:
            cp.copyto(nd(self.tensor), self.array, casting="unsafe")
        mark_written(self.tensor)


class NCCLProcessGroup(ProcessGroup):
    name = "nccl"
    device_types = ("cuda",)

    def __init__(self, rank: int, size: int, ranks: Sequence[int], uid) -> None:
        super().__init__(rank, size, ranks)
        self._uid = uid
        self._comms: dict = {}  # device index -> NcclCommunicator
        self._lock = threading.Lock()

    @classmethod
    def availability(cls) -> tuple:
        ok, reason = _cupy.availability()
        if not ok:
            return False, reason
        try:
            nccl = _nccl()
        except Exception as e:
            return False, f"cupy.cuda.nccl can't be imported ({type(e).__name__}: {e}); pip install nvidia-nccl-cu12"
        if not getattr(nccl, "available", True):
            return False, "cupy was built without NCCL, or libnccl.so.2 is missing (pip install nvidia-nccl-cu12)"
        return True, ""

    @classmethod
    def create(cls, store, ranks: Sequence[int]) -> "NCCLProcessGroup":
        ok, reason = cls.availability()
        if not ok:
            raise RuntimeError(f"init_process_group: backend 'nccl' is unavailable: {reason}")
        uid = _nccl().get_unique_id() if store.rank == 0 else None
        uid = store.broadcast_object(uid, 0)
        return cls(store.rank, store.size, ranks, uid)

    def _comm(self, t):
        idx = t._device._index
        c = self._comms.get(idx)
        if c is None:
            with self._lock:
                c = self._comms.get(idx)
                if c is None:
                    if self._comms:
                        raise RuntimeError(f"nccl: this process group already runs on cuda:{next(iter(self._comms))}; "
                                           f"a tensor on cuda:{idx} needs its own group (one GPU per rank)")
                    cp = _cupy.module()
                    with cp.cuda.Device(idx):
                        c = _nccl().NcclCommunicator(self._size, self._uid, self._rank)
                    self._comms[idx] = c
        return c

    def destroy(self) -> None:
        for c in self._comms.values():
            c.destroy()
        self._comms.clear()

    # -- helpers -----------------------------------------------------------------------------
    def _run(self, t, fn, outputs, async_op, finish=None) -> Work:
        """Run ``fn(comm, stream_ptr)`` with ``t``'s device current, then ``finish``."""
        cp = _cupy.module()
        with cp.cuda.Device(t._device._index):
            stream = cp.cuda.get_current_stream()
            fn(self._comm(t), stream.ptr)
            if async_op:
                ev = cp.cuda.Event(disable_timing=True)
                ev.record(stream)
                return NCCLWork(ev, outputs, finish)
        if finish is not None:
            finish()
        return CompletedWork(outputs)

    def _op(self, t, op, nccl) -> int:
        if t._dtype is D.bool:
            name = _BOOL_OPS.get(op)
        else:
            name = _OPS.get(op)
        if name is None:
            raise RuntimeError(f"nccl: reduction {op.name} is not supported for {t._dtype} (NCCL has sum, prod, max, "
                               "min, avg; bitwise reductions only on bool tensors)")
        return getattr(nccl, name)

    # -- collectives -----------------------------------------------------------------------------
    def allreduce(self, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        nccl = _nccl()
        b = _Buf(tensor, nccl)
        o = self._op(tensor, op, nccl)
        return self._run(tensor, lambda c, s: c.allReduce(b.ptr, b.ptr, b.count, b.dtype, o, s), (tensor,), async_op,
                         b.commit)

    def reduce(self, tensor, root: int, op: ReduceOp, async_op: bool = False) -> Work:
        nccl = _nccl()
        b = _Buf(tensor, nccl)
        o = self._op(tensor, op, nccl)
        fin = b.commit if self._rank == root else None
        return self._run(tensor, lambda c, s: c.reduce(b.ptr, b.ptr, b.count, b.dtype, o, root, s), (tensor,),
                         async_op, fin)

    def broadcast(self, tensor, root: int, async_op: bool = False) -> Work:
        b = _Buf(tensor, _nccl())
        return self._run(tensor, lambda c, s: c.broadcast(b.ptr, b.ptr, b.count, b.dtype, root, s), (tensor,),
                         async_op, b.commit)

    def allgather_into_tensor(self, output, tensor, async_op: bool = False) -> Work:
        nccl = _nccl()
        src, dst = _Buf(tensor, nccl), _Buf(output, nccl)
        return self._run(tensor, lambda c, s: c.allGather(src.ptr, dst.ptr, src.count, src.dtype, s), (output,),
                         async_op, dst.commit)

    def allgather(self, outputs: list, tensor, async_op: bool = False) -> Work:
        from .arrays import cp, nd
        n = tensor.numel()
        if any(o.numel() != n for o in outputs):  # sizes differ per rank: one broadcast each
            outputs[self._rank].copy_(tensor)
            for r in range(self._size):
                self.broadcast(outputs[r], r)
            return CompletedWork(outputs)
        import ember
        flat = ember.empty(self._size * n, dtype=tensor._dtype, device=tensor._device)
        w = self.allgather_into_tensor(flat, tensor.reshape(-1), async_op)

        def scatter_back():
            for r, o in enumerate(outputs):
                cp.copyto(nd(o), nd(flat)[r * n:(r + 1) * n].reshape(o._shape))
                mark_written(o)
        if async_op:
            w._finish = (lambda f=w._finish: (f() if f else None, scatter_back()))
            w._outputs = tuple(outputs)
            return w
        scatter_back()
        return CompletedWork(outputs)

    def reduce_scatter_tensor(self, output, tensor, op: ReduceOp, async_op: bool = False) -> Work:
        nccl = _nccl()
        src, dst = _Buf(tensor, nccl), _Buf(output, nccl)
        o = self._op(tensor, op, nccl)
        return self._run(tensor, lambda c, s: c.reduceScatter(src.ptr, dst.ptr, dst.count, src.dtype, o, s),
                         (output,), async_op, dst.commit)

    def gather(self, outputs, tensor, root: int, async_op: bool = False) -> Work:
        import ember
        tmp = [ember.empty_like(tensor) for _ in range(self._size)]
        self.allgather(tmp, tensor)
        if self._rank == root:
            for o, t in zip(outputs, tmp):
                o.copy_(t)
        return CompletedWork(outputs or ())

    def scatter(self, output, inputs, root: int, async_op: bool = False) -> Work:
        nccl = _nccl()
        dst = _Buf(output, nccl)
        if self._rank == root:
            for r, t in enumerate(inputs):
                if r != root:
                    b = _Buf(t.contiguous(), nccl)
                    self._run(output, lambda c, s, b=b, r=r: c.send(b.ptr, b.count, b.dtype, r, s), (), False)
            output.copy_(inputs[root])
            return CompletedWork((output,))
        return self._run(output, lambda c, s: c.recv(dst.ptr, dst.count, dst.dtype, root, s), (output,), async_op,
                         dst.commit)

    def send(self, tensor, peer: int, tag: int = 0, async_op: bool = False) -> Work:
        b = _Buf(tensor, _nccl())
        return self._run(tensor, lambda c, s: c.send(b.ptr, b.count, b.dtype, peer, s), (tensor,), async_op)

    def recv(self, tensor, peer: int | None, tag: int = 0, async_op: bool = False) -> Work:
        if peer is None:
            raise RuntimeError("nccl: recv needs a source rank (NCCL has no receive from any rank)")
        b = _Buf(tensor, _nccl())
        w = self._run(tensor, lambda c, s: c.recv(b.ptr, b.count, b.dtype, peer, s), (tensor,), async_op, b.commit)
        w.source = peer
        return w

    def barrier(self, async_op: bool = False) -> Work:
        import ember
        dev = next(iter(self._comms), None)
        dev = ember.cuda.current_device() if dev is None else dev
        t = ember.zeros(1, device=f"cuda:{dev}")
        w = self.allreduce(t, ReduceOp.SUM, async_op)
        if not async_op:
            _cupy.module().cuda.Device(dev).synchronize()
        return w

    def object_device(self):
        import ember
        dev = next(iter(self._comms), None)
        return ember.device("cuda", ember.cuda.current_device() if dev is None else dev)
