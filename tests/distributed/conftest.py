"""Multi-process tests: each spawns ``mpiexec -n 2 python jobs/<script>.py``. They need mpi4py and
an mpiexec (``pip install mpi4py mpich``; ``tox -e distributed`` installs them and sets
``EMBER_REQUIRE_MPI=1``, which turns a missing MPI into an error). Without MPI they are not
collected, as the torch-oracle tests without torch; the MPI-free parts of ember.distributed are
tested in ``tests/test_distributed_*.py``."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mpirun import find_mpiexec  # noqa: E402

_missing = []
if importlib.util.find_spec("mpi4py") is None:
    _missing.append("mpi4py")
if find_mpiexec() is None:
    _missing.append("mpiexec")
if _missing:
    if os.environ.get("EMBER_REQUIRE_MPI") == "1":
        raise RuntimeError(f"EMBER_REQUIRE_MPI=1 but {', '.join(_missing)} not installed: pip install mpi4py mpich")
    collect_ignore_glob = ["test_*.py"]
