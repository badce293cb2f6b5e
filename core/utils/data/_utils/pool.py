"""The worker processes of one DataLoader iterator, seen from the main process: starting them,
sending tasks, waiting for replies, noticing a worker that died, and shutting them all down.

Each worker has one duplex pipe. Waiting uses ``multiprocessing.connection.wait`` on every pipe
*and* every process sentinel at once, so a reply and a worker's death are both noticed at the
moment they happen: no polling interval, no hang. The pool holds no reference to the iterator
that owns it, so ``weakref.finalize`` on the iterator shuts it down when the iterator is
collected (or at interpreter exit).
"""
from __future__ import annotations

import signal
import time
from multiprocessing import connection as mp_connection

from ...._compat import add_note
from . import shm
from .worker import _worker_loop

#: exit statuses worth explaining
_SIGNAL_HINTS = {
    "SIGKILL": " It was killed: often by the out-of-memory killer (try fewer workers or smaller batches).",
    "SIGBUS": " A bus error in a worker usually means shared memory ran out (/dev/shm; docker: --shm-size).",
    "SIGSEGV": " A segmentation fault: a bug in native code the dataset calls.",
}


class _TimedOut(Exception):
    pass


def _describe_exit(code) -> str:
    if code is None:
        return "an unknown exit status"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"exit code {code} (killed by signal {name}).{_SIGNAL_HINTS.get(name, '')}"
    return f"exit code {code}."


class WorkerPool:
    """``num_workers`` processes running :func:`~.worker._worker_loop`."""

    def __init__(self, ctx, num_workers: int, *, dataset_kind, dataset, auto_collation, collate_fn, drop_last,
                 base_seed, worker_init_fn, transport, grace: float) -> None:
        self.procs: list = []
        self.conns: list = []
        self._owner: dict = {}  # pipe or sentinel -> worker id
        self.closed = False
        self.grace = grace
        self.token = shm.new_token()
        shm.prepare()
        try:
            for i in range(num_workers):
                parent, child = ctx.Pipe(duplex=True)
                p = ctx.Process(
                    target=_worker_loop, name=f"ember-data-worker-{i}", daemon=True,
                    args=(dataset_kind, dataset, child, auto_collation, collate_fn, drop_last, base_seed,
                          worker_init_fn, i, num_workers, transport, self.token))
                try:
                    p.start()
                except Exception as e:
                    if ctx.get_start_method() != "fork":
                        add_note(e, f"DataLoader: starting worker {i} with the {ctx.get_start_method()!r} start method "
                                   "pickles the dataset, collate_fn and worker_init_fn: define them at module level "
                                   "(no lambdas or local classes), or use multiprocessing_context='fork'.")
                    raise
                finally:
                    child.close()  # the worker holds its end; EOF then means the worker is gone
                self.procs.append(p)
                self.conns.append(parent)
                self._owner[parent] = i
                self._owner[p.sentinel] = i
        except BaseException:
            self.shutdown()
            raise

    @property
    def pids(self) -> list:
        return [p.pid for p in self.procs]

    def send(self, worker_id: int, msg) -> None:
        try:
            self.conns[worker_id].send(msg)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            self._died(worker_id)

    def recv(self, timeout: float):
        """``(worker_id, message)`` of the next reply; RuntimeError when ``timeout`` (seconds,
        0 = forever) passes first or when a worker exits. Any interrupt (Ctrl-C) shuts the pool
        down before it propagates, so no worker outlives it."""
        if self.closed:
            raise RuntimeError("DataLoader worker pool was already shut down")
        deadline = time.monotonic() + timeout if timeout > 0 else None
        try:
            while True:
                waitables = self.conns + [p.sentinel for p in self.procs]
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready = mp_connection.wait(waitables, remaining)
                if not ready:
                    raise _TimedOut
                dead = None
                for obj in ready:
                    i = self._owner[obj]
                    if obj is self.conns[i]:
                        try:
                            return i, obj.recv()
                        except (EOFError, OSError):
                            dead = i
                        except Exception as e:  # a reply that cannot be unpickled here
                            raise RuntimeError(f"DataLoader: could not read the reply of worker {i} (pid "
                                               f"{self.procs[i].pid}): {type(e).__name__}: {e}") from e
                    else:
                        dead = i
                if dead is not None:
                    self._died(dead)
        except _TimedOut:
            # the workers keep going: a caller that catches this may still get the batch later
            raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
        except BaseException:
            self.shutdown()
            raise

    def _died(self, i: int):
        p = self.procs[i]
        p.join(1.0)
        msg = f"DataLoader worker {i} (pid {p.pid}) exited unexpectedly with {_describe_exit(p.exitcode)}"
        self.shutdown()
        raise RuntimeError(msg)

    def shutdown(self) -> None:
        """Stop every worker: ask, give each ``grace`` seconds to finish its current item, then
        terminate and kill. Replies still in flight are discarded and their shared memory freed."""
        if self.closed:
            return
        self.closed = True
        try:
            self._stop_all()
        except Exception:  # pragma: no cover - interpreter shutdown: fall back to killing
            for p in self.procs:
                try:
                    p.kill()
                except Exception:
                    pass

    def _stop_all(self) -> None:
        for c in self.conns:
            try:
                c.send(("stop",))
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + self.grace
        alive = {i for i, p in enumerate(self.procs) if p.is_alive()}
        readable = dict(enumerate(self.conns))
        while alive and time.monotonic() < deadline:
            objs = [readable[i] for i in readable] + [self.procs[i].sentinel for i in alive]
            for obj in mp_connection.wait(objs, max(0.0, deadline - time.monotonic())):
                i = self._owner[obj]
                if obj is self.conns[i]:
                    if not self._drain_one(obj):
                        readable.pop(i, None)
                else:
                    alive.discard(i)
        for i in alive:
            self.procs[i].terminate()
        for p in self.procs:
            p.join(1.0)
            if p.exitcode is None:
                p.kill()
                p.join()
        for c in self.conns:
            while self._drain_one(c, block=False):
                pass
            c.close()
        shm.release_orphans(self.pids, self.token)

    @staticmethod
    def _drain_one(conn, block: bool = True) -> bool:
        """Read and discard one reply; False when there is none (or the pipe is closed)."""
        try:
            if not block and not conn.poll():
                return False
            msg = conn.recv()
        except Exception:
            return False
        if msg and msg[0] == "data":
            shm.discard(msg[4])
        return True
