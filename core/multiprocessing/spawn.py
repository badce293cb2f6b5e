"""``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and wait for them.

As in PyTorch: when one process fails, the others are terminated (SIGTERM, then SIGKILL) and the
parent raises :class:`ProcessRaisedException` carrying the child's traceback (an exception in
``fn``) or :class:`ProcessExitedException` (a non-zero exit code or a signal).
"""
from __future__ import annotations

import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "SpawnContext", "start_processes"]

log = logging.getLogger(__name__)


class ProcessException(Exception):
    """A child process of :func:`start_processes` failed: the ``error_index``-th one, whose pid
    was ``error_pid``; ``msg`` describes the failure."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def _init_args(self) -> tuple:
        return self.msg, self.error_index, self.error_pid

    def __reduce__(self):
        # rebuilt from the constructor's arguments (the slots are not in Exception's args)
        return type(self), self._init_args()


class ProcessRaisedException(ProcessException):
    """A process failed because ``fn`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code, or was killed by a signal (``signal_name``)."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def _init_args(self) -> tuple:
        return (*super()._init_args(), self.exit_code, self.signal_name)


def _set_pdeathsig(sig) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (best effort)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, int(sig))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover
            pass


def _child(fn, i, args, error_file):
    """The body of child ``i``: run ``fn``; on an exception, leave its traceback in
    ``error_file`` for the parent and exit with status 1."""
    _set_pdeathsig(signal.SIGINT)
    try:
        fn(i, *args)
        return
    except KeyboardInterrupt:  # the parent is stopping us: not an error of ours
        return
    except Exception:
        report = traceback.format_exc()
    with open(error_file, "wb") as fh:
        pickle.dump(report, fh)
    sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call."""

    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        # the processes not joined yet, by their sentinel (what connection.wait watches)
        self.sentinels = {proc.sentinel: rank for rank, proc in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _join_procs_with_timeout(self, timeout: float):
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None):
        """Wait for the processes (up to ``timeout`` seconds). Returns True when all have exited
        successfully, False when some still run; when one failed, terminates the others (after
        ``grace_period``) and raises the failure."""
        if not self.sentinels:
            return True
        error_index = None
        for done in multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout):
            rank = self.sentinels.pop(done)
            self.processes[rank].join()
            if self.processes[rank].exitcode:
                error_index = rank
                break
        if error_index is None:
            return len(self.sentinels) == 0
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
                    name = signal.Signals(-code).name
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
    mp = multiprocessing.get_context(start_method)
    error_files, processes = [], []
    for i in range(nprocs):
        # a name the child writes its traceback to (the file exists only when it failed)
        fd, name = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(name)
        child = mp.Process(target=_child, args=(fn, i, args, name), daemon=daemon)
        child.start()
        error_files.append(name)
        processes.append(child)
    running = ProcessContext(processes, error_files)
    if join:
        while not running.join():
            pass
        return None
    return running


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
