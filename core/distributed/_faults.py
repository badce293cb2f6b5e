"""One failing rank ends the whole job: an uncaught exception aborts every process (MPI_Abort).

Without this, the other ranks would wait forever in their next collective for a process that
is gone (MPI has no timeouts). ``EMBER_DISTRIBUTED_ABORT_ON_ERROR=0`` keeps Python's behaviour.
"""
from __future__ import annotations

import os
import sys
import traceback
from ._mpi_env import mpi

_installed = False
_previous = sys.__excepthook__


def _enabled() -> bool:
    return os.environ.get("EMBER_DISTRIBUTED_ABORT_ON_ERROR", "1").strip().lower() not in ("0", "false", "off", "no")


def abort(code: int = 1, reason: str = "") -> None:
    """Print ``reason`` and end every process of the job with exit status ``code``."""
    try:
        sys.stdout.flush()
    except Exception:  # a closed stdout must not prevent the abort
        pass
    MPI = mpi()
    comm = MPI.COMM_WORLD
    if reason:
        sys.stderr.write(f"ember.distributed: rank {comm.Get_rank()} of {comm.Get_size()}: {reason}; aborting the job "
                         f"(MPI_Abort, exit status {code})\n")
    try:
        sys.stderr.flush()
    except Exception:
        pass
    comm.Abort(code)


def _excepthook(tp, value, tb) -> None:
    try:
        _previous(tp, value, tb)  # the traceback, printed the way this process prints them
    except Exception:
        traceback.print_exception(tp, value, tb)
    finally:
        abort(1, f"uncaught {tp.__name__}")


def install() -> None:
    """Abort the job on an uncaught exception in this process (once); the hook that was in place
    still prints the traceback first."""
    global _installed, _previous
    if _installed or not _enabled():
        return
    _installed = True
    _previous = sys.excepthook
    sys.excepthook = _excepthook
