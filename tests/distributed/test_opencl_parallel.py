"""nn.DataParallel on two PoCL devices in one process, and DDP with opencl tensors on two ranks
(MPI moves them through host buffers). Needs ember-opencl with a CPU OpenCL platform
(``pip install -e backends/opencl pocl-binary-distribution``)."""
from mpirun import mpiexec, python


def test_data_parallel_on_two_opencl_devices():
    r = python("dp_opencl.py", env={"POCL_DEVICES": "pthread pthread"}, timeout=300)
    assert r.returncode == 0, r
    assert "data parallel opencl ok" in r.stdout, r


def test_ddp_and_collectives_on_opencl_tensors():
    r = mpiexec("ddp_opencl.py", env={"POCL_DEVICES": "pthread"}, timeout=300)
    assert r.returncode == 0, r
    assert r.stdout.count("ddp opencl ok") == 2, r
