"""Multi-process tests: each spawns ``mpiexec -n 2 python jobs/<script>.py``. They need mpi4py and
an mpiexec (``pip install mpi4py mpich``); the opencl ones also need ember-opencl and an OpenCL
platform (``pip install -e backends/opencl pocl-binary-distribution``). ``tox -e distributed``
installs all of them and sets ``EMBER_REQUIRE_MPI=1``, which turns anything missing into an
error. Elsewhere, tests whose requirements are missing are not collected, as the torch-oracle
tests without torch; the MPI-free parts of ember.distributed and nn.parallel are tested in
``tests/test_distributed_*.py``."""
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
_missing_opencl = importlib.util.find_spec("ember_opencl") is None
if os.environ.get("EMBER_REQUIRE_MPI") == "1" and (_missing or _missing_opencl):
    raise RuntimeError(f"EMBER_REQUIRE_MPI=1 but {', '.join(_missing + ['ember_opencl'] * _missing_opencl)} not "
                       "installed: pip install mpi4py mpich pocl-binary-distribution -e backends/opencl")
if _missing:
    collect_ignore_glob = ["test_*.py"]
elif _missing_opencl:
    collect_ignore_glob = ["test_*opencl*.py"]
