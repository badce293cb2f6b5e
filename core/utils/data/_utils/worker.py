"""The worker process: its loop, :class:`WorkerInfo`, :func:`get_worker_info` and per-worker
seeding.

Messages from the main process (over one duplex pipe per worker):

* ``("task", epoch, idx, index)``: fetch ``index`` (a batch of indices, one index, or for an
  IterableDataset a placeholder) and reply ``("data", epoch, idx, payload, segments, descs)``,
  ``("error", epoch, idx, ExceptionWrapper)`` or, once an IterableDataset is exhausted,
  ``("stop", epoch, idx)``;
* ``("resume", epoch)``: start a new epoch (persistent workers): a new dataset iterator;
* ``("stop",)``: exit.
"""
from __future__ import annotations

import collections
import os
import random
import signal
from dataclasses import dataclass

import numpy as np

from ...._threads import set_num_threads
from ....ops.random import manual_seed
from . import shm
from .errors import ExceptionWrapper
from .fetch import _DatasetKind

#: seconds between checks that the main process is still alive while a worker waits
PARENT_CHECK_INTERVAL = 1.0


@dataclass(frozen=True)
class WorkerInfo:
    """What :func:`get_worker_info` returns inside a worker: ``id`` (0 to ``num_workers - 1``),
    ``num_workers``, ``seed`` (this worker's seed: base seed + id) and ``dataset`` (this
    process's copy of the dataset)."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    worker_method: str = "multiprocessing"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Information about the current DataLoader worker process, or None in the main process.

    Use it in an IterableDataset's ``__iter__`` to give each worker its own share of the stream,
    or in a ``worker_init_fn`` to configure each worker's copy of the dataset.
    """
    return _worker_info


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's generators as PyTorch does: ember's default generators and python's
    ``random`` with ``base_seed + worker_id``, numpy's global generator with a 128-bit state
    derived from both (so seeds of neighbouring workers do not give overlapping streams)."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([base_seed, worker_id]).generate_state(4))
    return seed


def _worker_loop(dataset_kind, dataset, conn, auto_collation, collate_fn, drop_last, base_seed, init_fn,
                 worker_id, num_workers, transport, token) -> None:
    global _worker_info
    try:
        # Ctrl-C reaches the whole process group: the main process handles it and stops us
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # pragma: no cover - not the main thread of this process
        pass
    shm.set_transport(transport, token)
    where = f"in DataLoader worker process {worker_id}"
    init_error = fetcher = None
    try:
        set_num_threads(1)  # workers run side by side: one BLAS thread each, as PyTorch
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where=where)
    parent = os.getppid()
    inbox: collections.deque = collections.deque()
    exhausted = False
    try:
        while True:
            if not inbox:
                if not conn.poll(PARENT_CHECK_INTERVAL):
                    if os.getppid() != parent:  # the main process died: nobody will stop us
                        return
                    continue
                inbox.append(conn.recv())
            while conn.poll():  # read ahead, so that a stop is seen before queued tasks run
                inbox.append(conn.recv())
            if any(m[0] == "stop" for m in inbox):
                return
            last_resume = max((k for k, m in enumerate(inbox) if m[0] == "resume"), default=0)
            for _ in range(last_resume):  # tasks of an abandoned epoch: nobody wants their replies
                inbox.popleft()
            msg = inbox.popleft()
            if msg[0] == "resume":
                exhausted = False
                if init_error is None:
                    try:
                        fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                                              drop_last)
                    except Exception:
                        init_error = ExceptionWrapper(where=where)
                continue
            _, epoch, idx, index = msg
            if init_error is not None:
                reply = ("error", epoch, idx, init_error)
            elif exhausted:
                reply = ("stop", epoch, idx)
            else:
                try:
                    data = fetcher.fetch(index)
                    reply = ("data", epoch, idx) + shm.encode(data)
                except StopIteration:
                    if dataset_kind == _DatasetKind.Iterable:
                        exhausted = True
                        reply = ("stop", epoch, idx)
                    else:
                        reply = ("error", epoch, idx, ExceptionWrapper(where=where))
                except Exception:
                    shm.release_pending()
                    reply = ("error", epoch, idx, ExceptionWrapper(where=where))
                data = None
            conn.send(reply)
            shm.sent()
            del reply, msg, index
    except (EOFError, OSError, KeyboardInterrupt):  # the main process went away
        pass
    finally:
        shm.release_pending()
        try:
            conn.close()
        except OSError:
            pass
