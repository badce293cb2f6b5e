"""fake ``cupy.cuda.nccl``: communicators of one process's threads (one thread per rank), so a
test can run an N-rank group in-process. Buffers are read and written through their pointers;
each collective is a rendezvous of every rank (5 s timeout, so a bookkeeping bug fails instead
of hanging)."""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

available = True
NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64, NCCL_UINT64 = 0, 1, 2, 3, 4, 5
NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64, NCCL_BFLOAT16 = 6, 7, 8, 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
_NP = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64, 6: np.float16, 7: np.float32,
       8: np.float64}
TIMEOUT = 5.0
log: list = []  # (rank, op, count, datatype, extra) of every call, for bookkeeping tests


class NcclError(RuntimeError):
    pass


def get_unique_id():
    return tuple(int(b) for b in os.urandom(128))


def get_version():
    return 22105


class _Shared:
    def __init__(self, n):
        self.n = n
        self.barrier = threading.Barrier(n, timeout=TIMEOUT)
        self.slots = [None] * n
        self.mail: dict = {}
        self.cond = threading.Condition()


_comms: dict = {}
_lock = threading.Lock()


def _view(ptr, count, datatype):
    if datatype == NCCL_BFLOAT16:
        dt = np.dtype(np.uint16)
    else:
        dt = np.dtype(_NP[datatype])
    c = (ctypes.c_char * max(count * dt.itemsize, 1)).from_address(ptr)
    return np.frombuffer(c, dtype=dt, count=count)


def _as_compute(a, datatype):
    if datatype == NCCL_BFLOAT16:
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


def _from_compute(r, datatype):
    if datatype == NCCL_BFLOAT16:
        u = r.astype(np.float32).view(np.uint32)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


_REDUCE = {NCCL_SUM: np.add, NCCL_PROD: np.multiply, NCCL_MAX: np.maximum, NCCL_MIN: np.minimum}


class NcclCommunicator:
    def __init__(self, ndev, commId, rank):
        key = tuple(commId)
        with _lock:
            sh = _comms.get(key)
            if sh is None:
                sh = _comms[key] = _Shared(ndev)
        if sh.n != ndev:
            raise NcclError("ncclInvalidUsage: ranks disagree on the communicator size")
        self._sh, self._rank, self._n = sh, rank, ndev
        from . import _current_device
        self._dev = _current_device().id
        log.append((rank, "init", ndev, None, self._dev))

    def rank_id(self):
        return self._rank

    def size(self):
        return self._n

    def device_id(self):
        return self._dev

    def destroy(self):
        log.append((self._rank, "destroy", 0, None, None))

    abort = destroy

    def _exchange(self, value):
        sh = self._sh
        sh.slots[self._rank] = value
        sh.barrier.wait()
        vals = list(sh.slots)
        sh.barrier.wait()
        return vals

    def _reduce(self, vals, op, datatype):
        comp = [_as_compute(v, datatype) for v in vals]
        if op == NCCL_AVG:
            r = comp[0].astype(np.float64) if datatype != NCCL_BFLOAT16 else comp[0].astype(np.float32)
            for v in comp[1:]:
                r = r + v
            r = (r / self._n).astype(comp[0].dtype)
        else:
            r = comp[0].copy()
            for v in comp[1:]:
                r = _REDUCE[op](r, v)
        return _from_compute(r, datatype)

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        log.append((self._rank, "allReduce", count, datatype, op))
        vals = self._exchange(_view(sendbuf, count, datatype).copy())
        _view(recvbuf, count, datatype)[...] = self._reduce(vals, op, datatype)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        log.append((self._rank, "reduce", count, datatype, (op, root)))
        vals = self._exchange(_view(sendbuf, count, datatype).copy())
        if self._rank == root:
            _view(recvbuf, count, datatype)[...] = self._reduce(vals, op, datatype)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        log.append((self._rank, "broadcast", count, datatype, root))
        vals = self._exchange(_view(sendbuf, count, datatype).copy() if self._rank == root else None)
        _view(recvbuf, count, datatype)[...] = vals[root]

    def bcast(self, buff, count, datatype, root, stream):
        self.broadcast(buff, buff, count, datatype, root, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        log.append((self._rank, "allGather", count, datatype, None))
        vals = self._exchange(_view(sendbuf, count, datatype).copy())
        _view(recvbuf, count * self._n, datatype)[...] = np.concatenate(vals)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        log.append((self._rank, "reduceScatter", recvcount, datatype, op))
        vals = self._exchange(_view(sendbuf, recvcount * self._n, datatype).copy())
        r = self._reduce(vals, op, datatype)
        _view(recvbuf, recvcount, datatype)[...] = r[self._rank * recvcount:(self._rank + 1) * recvcount]

    def send(self, sendbuf, count, datatype, peer, stream):
        log.append((self._rank, "send", count, datatype, peer))
        sh = self._sh
        with sh.cond:
            sh.mail.setdefault((self._rank, peer), []).append(_view(sendbuf, count, datatype).copy())
            sh.cond.notify_all()

    def recv(self, recvbuf, count, datatype, peer, stream):
        log.append((self._rank, "recv", count, datatype, peer))
        sh = self._sh
        with sh.cond:
            if not sh.cond.wait_for(lambda: sh.mail.get((peer, self._rank)), timeout=TIMEOUT):
                raise NcclError("fake nccl: recv timed out")
            data = sh.mail[(peer, self._rank)].pop(0)
        _view(recvbuf, count, datatype)[...] = data


def groupStart():
    pass


def groupEnd():
    pass
