"""Finding MPI (mpi4py) and the launcher, with errors that say how to install and launch.

Importing ``mpi4py.MPI`` initialises MPI, so it happens only here, on first need (never at
``import ember`` or ``import ember.distributed``).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys

INSTALL_HINT = ("pip install 'ember[mpi]'  (that is: pip install mpi4py mpich, which also installs an "
                "mpiexec next to python)")
LAUNCH_HINT = ("launch N processes with: python -m ember.distributed.run --nproc N train.py [args]  "
               "(or directly: mpiexec -n N python train.py [args])")

_MPI = None
_error: str | None = None


def mpi4py_installed() -> bool:
    """Whether mpi4py can be imported (cheap: does not initialise MPI)."""
    if "mpi4py" in sys.modules:
        return sys.modules["mpi4py"] is not None  # None: imports of it are blocked
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


def mpi():
    """The ``mpi4py.MPI`` module (initialises MPI on first call) or a RuntimeError that says how
    to install it."""
    global _MPI, _error
    if _MPI is not None:
        return _MPI
    if _error is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            _error = (f"ember.distributed needs MPI through mpi4py, which is not installed ({e}). Install it with: "
                      f"{INSTALL_HINT}; then {LAUNCH_HINT}")
        except Exception as e:  # a broken MPI library (wrong ABI, missing libmpi)
            _error = (f"ember.distributed could not initialise MPI: {type(e).__name__}: {e}. Reinstall with: "
                      f"{INSTALL_HINT}")
        else:
            _MPI = MPI
            return MPI
    raise RuntimeError(_error)


def availability() -> tuple:
    if _MPI is not None:
        return True, ""
    if _error is not None:
        return False, _error
    if not mpi4py_installed():
        return False, "mpi4py is not installed"
    return True, ""


def launcher_world_size() -> tuple:
    """``(size, variable)`` announced by a launcher through the environment, or ``(None, None)``."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "WORLD_SIZE", "SLURM_NTASKS"):
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v), var
    return None, None


def find_mpiexec() -> str | None:
    """The ``mpiexec`` installed next to this python (the mpich wheel puts it there) or on PATH."""
    override = os.environ.get("EMBER_MPIEXEC")
    if override:
        return override
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec") or shutil.which("mpirun")
