"""``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and wait for them.

As in PyTorch: when one process fails, the others are terminated (SIGTERM, then SIGKILL) and the
parent raises :class:`ProcessRaisedException` carrying the child's traceback (an exception in
``fn``) or :class:`ProcessExitedException` (a non-zero exit code or a signal).
"""
from __future__ import annotations

import ctypes
import logging
import os
import pickle
import sys
import traceback
import warnings
from multiprocessing import connection as _connection
from multiprocessing import get_context as _get_context
from signal import SIGINT, Signals
from tempfile import mkstemp
from time import monotonic as _now

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "SpawnContext", "start_processes"]

log = logging.getLogger(__name__)


class ProcessException(Exception):
    """A process started by :func:`start_processes` failed: which one (``error_index``, its
    position; ``error_pid``) and ``msg``. Picklable, so that it crosses process boundaries."""

    __slots__ = ("error_index", "error_pid")

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def _rebuild_args(self) -> tuple:
        return self.msg, self.error_index, self.error_pid

    def __reduce__(self):
        return self.__class__, self._rebuild_args()


class ProcessRaisedException(ProcessException):
    """A process failed because ``fn`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code or was killed by a signal (``signal_name``)."""

    __slots__ = ("exit_code",)

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def _rebuild_args(self) -> tuple:
        return (*super()._rebuild_args(), self.exit_code, self.signal_name)


def _set_pdeathsig(sig) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (best effort)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, int(sig))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover
            pass


def _wrap(fn, i, args, error_file):
    _set_pdeathsig(SIGINT)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted us
    except Exception:
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _join_procs_with_timeout(self, timeout: float):
        end = _now() + timeout
        for p in self.processes:
            p.join(max(0, end - _now()))

    def join(self, timeout: float | None = None, grace_period: float | None = None):
        """Wait for the processes (up to ``timeout`` seconds). Returns True when all have exited
        successfully, False when some still run; when one failed, terminates the others (after
        ``grace_period``) and raises the failure."""
        if not self.sentinels:
            return True
        ready = _connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            p = self.processes[index]
            p.join()
            if p.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for p in self.processes:
            if p.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", p.pid)
                p.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting via SIGKILL", p.pid)
                p.kill()
            p.join()
        failed = self.processes[error_index]
        err = self.error_files[error_index]
        if not os.access(err, os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {error_index:d} terminated with signal {name}",
                                             error_index=error_index, error_pid=failed.pid, exit_code=code,
                                             signal_name=name)
            raise ProcessExitedException(f"process {error_index:d} terminated with exit code {code:d}",
                                         error_index=error_index, error_pid=failed.pid, exit_code=code)
        with open(err, "rb") as fh:
            original_trace = pickle.load(fh)
        for f in self.error_files:  # the failed processes' files: nothing left in the temp folder
            if os.path.exists(f):
                os.unlink(f)
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n" + original_trace
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``. Returns None
    after joining them (``join=True``), else their :class:`ProcessContext`."""
    mp = _get_context(start_method)
    error_files, processes = [], []
    for i in range(nprocs):
        # a name the child writes its traceback to (the file exists only when it failed)
        fd, name = mkstemp(prefix="ember-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(name)
        p = mp.Process(target=_wrap, args=(fn, i, args, name), daemon=daemon)
        p.start()
        error_files.append(name)
        processes.append(p)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawn ``nprocs`` processes running ``fn(i, *args)`` (``fn`` must be picklable: defined at
    the top level of a module). A failure in one terminates the others and is raised here
    (:class:`ProcessRaisedException` with the child's traceback). Returns None when ``join``,
    else a :class:`ProcessContext`. ``start_method`` other than ``"spawn"`` is deprecated (use
    :func:`start_processes`)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
