"""ember.distributed without MPI: the plugin seam (a collective backend registered through
``ember_register_collectives``), the front ends' validation and staging, the cross-rank
verdicts, the ProcessGroup base class defaults, the launcher's command line and the errors
that explain how to install and launch. Multi-process runs are in ``tests/distributed/``."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.distributed as dist
from ember import _plugins
from ember.autograd import no_grad
from ember.distributed import _check, _meta, _mpi_env, _world
from ember.distributed import run as launcher


class Loopback(dist.ProcessGroup):
    """A one-process collective backend for cpu; ``factor`` scales all_reduce results so that
    tests can see where results are written."""

    name = "loopback"
    device_types = ("cpu",)
    factor = 1.0
    calls: list = []

    @classmethod
    def create(cls, store, ranks):
        assert store.size == 1 and store.allgather_object("x") == ["x"]
        return cls(0, 1, ranks)

    def _done(self, what, outputs=()):
        self.calls.append(what)
        return dist.CompletedWork(outputs)

    def allreduce(self, tensor, op, async_op=False):
        assert tensor.is_contiguous(), "the front end stages strided tensors for this backend"
        with no_grad():
            tensor.mul_(self.factor)
        return self._done("allreduce", [tensor])

    def broadcast(self, tensor, root, async_op=False):
        return self._done("broadcast", [tensor])

    def reduce(self, tensor, root, op, async_op=False):
        return self._done("reduce", [tensor])

    def allgather(self, outputs, tensor, async_op=False):
        with no_grad():
            outputs[0].copy_(tensor)
        return self._done("allgather", outputs)

    def allgather_into_tensor(self, output, tensor, async_op=False):
        with no_grad():
            output.view(-1).copy_(tensor.reshape(-1))
        return self._done("allgather_into_tensor", [output])

    def reduce_scatter_tensor(self, output, tensor, op, async_op=False):
        with no_grad():
            output.view(-1).copy_(tensor.reshape(-1))
        return self._done("reduce_scatter_tensor", [output])

    def gather(self, outputs, tensor, root, async_op=False):
        with no_grad():
            outputs[0].copy_(tensor)
        return self._done("gather", outputs)

    def scatter(self, output, inputs, root, async_op=False):
        with no_grad():
            output.copy_(inputs[0])
        return self._done("scatter", [output])

    def barrier(self, async_op=False):
        return self._done("barrier")


class LoopbackPrim(Loopback):
    name = "loopprim"
    device_types = ("prim",)


class CollectivesPlugin:
    @ember.hookimpl
    def ember_register_collectives(self, register):
        register("loopback", "test_distributed_api:Loopback", ("cpu",))
        register("loopprim", "test_distributed_api:LoopbackPrim", ("prim",))


@pytest.fixture
def no_mpi(monkeypatch):
    """A machine without mpi4py, whatever this environment has installed."""
    monkeypatch.setattr(_mpi_env, "mpi4py_installed", lambda: False)
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "WORLD_SIZE", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def loopback(no_mpi):
    name = _plugins.register_plugin(CollectivesPlugin(), name="loopback-collectives")
    Loopback.calls = []
    Loopback.factor = 1.0
    try:
        yield
    finally:
        dist.set_collective_checks(True)
        if dist.is_initialized():
            dist.destroy_process_group()
        _plugins.unregister_plugin(name)


def run_py(code, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                          timeout=120)


# -- importing, availability, errors that explain ---------------------------------------------------
def test_import_starts_no_mpi_and_the_builtin_plugin_registers_through_the_hook():
    r = run_py("""
        import sys, ember
        import ember.distributed as dist
        ember.zeros(1)
        from ember import _plugins
        print('mpi4py.MPI' in sys.modules, _plugins.collectives['mpi']['device_types'], _plugins.plugins['mpi'].hooks)
        print(dist.is_initialized())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["False ('cpu', 'opencl') ['ember_register_collectives']", "False"]


def test_cli_lists_the_builtin_collectives(capsys):
    from ember import cli
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "mpi: ember (built in)" in out and "collective mpi: " in out
    line = next(x for x in out.splitlines() if "collective mpi: " in x)
    if importlib.util.find_spec("mpi4py") is None:
        assert line.endswith("unavailable: mpi4py is not installed; pip install 'ember[mpi]'  (that is: pip install "
                             "mpi4py mpich, which also installs an mpiexec next to python)"), line
    else:
        assert line.endswith("collective mpi: available"), line


def test_cli_says_whether_mpi4py_is_there():
    code = "import sys; sys.modules['mpi4py'] = None\nfrom ember import cli; cli.main(['plugins'])"
    r = run_py(code)
    assert r.returncode == 0, r.stderr
    assert "collective mpi: unavailable: mpi4py is not installed; pip install 'ember[mpi]'" in r.stdout


def test_without_mpi4py_init_explains_how_to_install_and_launch():
    r = run_py("""
        import sys
        sys.modules['mpi4py'] = None   # as if it were not installed
        import ember.distributed as dist
        print(dist.is_available(), dist.is_mpi_available())
        for backend in (None, 'mpi'):
            try:
                dist.init_process_group(backend)
            except RuntimeError as e:
                print(e)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False False"
    for line in lines[1:]:
        assert "mpi4py is not installed" in line and "pip install 'ember[mpi]'" in line, line
        assert "python -m ember.distributed.run --nproc N train.py" in line and "mpiexec -n N" in line, line


def test_blocking_the_builtin_plugin_leaves_no_backend():
    r = run_py("""
        import ember.distributed as dist
        try:
            dist.init_process_group()
        except RuntimeError as e:
            print(e)
    """, env={"EMBER_DISABLE_PLUGINS": "mpi,cuda_cupy"})  # cuda_cupy's NCCL group, where installed
    assert r.returncode == 0, r.stderr
    assert "no collective backend is available (none registered)" in r.stdout


def test_queries_before_init_raise_pytorch_s_error(no_mpi):
    assert not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier, dist.destroy_process_group):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.all_reduce(ember.ones(2))


# -- a third-party collective backend ----------------------------------------------------------------
def test_plugin_backend_serves_every_collective(loopback):
    dist.init_process_group(backend="loopback")
    dist.all_reduce(ember.ones(1))
    assert Loopback.calls == ["allgather", "allreduce"]  # the agreement check first (base allgather_ints)
    Loopback.calls = []
    dist.set_collective_checks(False)
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "loopback")
    assert isinstance(dist.group.WORLD, Loopback)
    t = ember.arange(3.0)
    assert dist.all_reduce(t) is None
    w = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert w.wait() and w.is_completed() and w.result() == [t]
    dist.broadcast(t, src=0)
    dist.reduce(t, dst=0)
    outs = [ember.zeros(3)]
    dist.all_gather(outs, t)
    assert outs[0].tolist() == [0.0, 1.0, 2.0]
    o = ember.zeros(1, 3)
    dist.all_gather_into_tensor(o, t)
    assert o.tolist() == [[0.0, 1.0, 2.0]]
    dist.reduce_scatter(o[0], [t * 2])
    assert o.tolist() == [[0.0, 2.0, 4.0]]
    g = [ember.zeros(3)]
    dist.gather(t, g)
    s = ember.zeros(3)
    dist.scatter(s, [t + 1])
    assert g[0].tolist() == [0.0, 1.0, 2.0] and s.tolist() == [1.0, 2.0, 3.0]
    dist.barrier()
    assert Loopback.calls == ["allreduce", "allreduce", "broadcast", "reduce", "allgather", "allgather_into_tensor",
                              "reduce_scatter_tensor", "gather", "scatter", "barrier"]


def test_object_collectives_use_the_base_class_defaults(loopback):
    dist.init_process_group(backend="loopback")
    objs = [None]
    dist.all_gather_object(objs, {"a": [1, 2], "b": "x"})
    assert objs == [{"a": [1, 2], "b": "x"}]
    lst = ["keep", 3]
    dist.broadcast_object_list(lst, src=0)
    assert lst == ["keep", 3]
    g = [None]
    dist.gather_object(("me", 0), g)
    out = [None]
    dist.scatter_object_list(out, [{"mine": True}])
    assert g == [("me", 0)] and out == [{"mine": True}]
    assert dist.group.WORLD.allgather_ints([3, -4]) == [[3, -4]]
    with pytest.raises(ValueError, match="object_list must be a list of 1 entries"):
        dist.all_gather_object([None, None], 1)


def test_strided_tensors_are_staged_for_backends_that_need_contiguous_memory(loopback):
    dist.init_process_group(backend="loopback")
    Loopback.factor = 3.0
    base = ember.arange(6.0).reshape(2, 3)
    col = base[:, 1]
    dist.all_reduce(col)
    assert base.tolist() == [[0.0, 3.0, 2.0], [3.0, 12.0, 5.0]]
    w = dist.all_reduce(base.t()[0], async_op=True)
    assert w.wait()
    assert base.tolist() == [[0.0, 3.0, 2.0], [9.0, 12.0, 5.0]]


def test_argument_errors_name_the_op(loopback):
    dist.init_process_group(backend="loopback")
    with pytest.raises(TypeError, match="all_reduce: tensor must be a Tensor, got list"):
        dist.all_reduce([1.0])
    with pytest.raises(TypeError, match="ReduceOp.AVG needs a floating-point tensor, got int64"):
        dist.all_reduce(ember.ones(2, dtype=ember.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="src=3 is not a member of the group"):
        dist.broadcast(ember.ones(1), src=3)
    with pytest.raises(ValueError, match="give either src or group_src"):
        dist.broadcast(ember.ones(1), src=0, group_src=0)
    with pytest.raises(ValueError, match="broadcast: src .* must be given"):
        dist.broadcast(ember.ones(1))
    with pytest.raises(ValueError, match="world_size times input tensor size"):
        dist.all_gather_into_tensor(ember.zeros(3), ember.ones(2))
    with pytest.raises(ValueError, match="input_list\\[0\\] is float32\\[3\\] but output is float32\\[2\\]"):
        dist.reduce_scatter(ember.zeros(2), [ember.ones(3)])
    with pytest.raises(TypeError, match="same dtype"):
        dist.all_gather([ember.zeros(2, dtype=ember.float64)], ember.ones(2))
    with pytest.raises(ValueError, match="should not be the same as the rank of the current process"):
        dist.send(ember.ones(1), dst=0)
    with pytest.raises(ValueError, match="tag must be a non-negative int"):
        dist.isend(ember.ones(1), dst=0, tag=-1)
    with pytest.raises(RuntimeError, match="initialize the default process group twice"):
        dist.init_process_group(backend="loopback")
    with pytest.raises(ValueError, match="world_size=4 but the launcher started 1 process"):
        dist.destroy_process_group()
        dist.init_process_group(backend="loopback", world_size=4)


def test_unknown_and_unavailable_backends(loopback):
    with pytest.raises(ValueError, match="unknown backend 'nosuch'.*loopback"):
        dist.init_process_group(backend="nosuch")
    with pytest.raises(RuntimeError, match="backend 'mpi' is unavailable: mpi4py is not installed"):
        dist.init_process_group(backend="mpi")
    with pytest.raises(TypeError, match="backend must be a string"):
        dist.init_process_group(backend=3)


def test_a_group_dispatches_each_device_type_to_its_backend(loopback, prim_backend):
    dist.init_process_group()  # None: every available backend, each for its device types
    assert dist.get_backend() == "cpu:loopback, prim:loopprim"
    dist.set_collective_checks(False)
    dist.all_reduce(ember.ones(2))
    dist.all_reduce(ember.ones(2, device=prim_backend))
    assert Loopback.calls == ["allreduce", "allreduce"]
    dist.destroy_process_group()
    dist.init_process_group(backend="cpu:loopback")
    with pytest.raises(RuntimeError, match="moves tensors of device types cpu, not 'prim'"):
        dist.all_reduce(ember.ones(2, device=prim_backend))
    with pytest.raises(RuntimeError, match="must be on the same device"):
        dist.all_gather([ember.zeros(2, device=prim_backend)], ember.ones(2))


def test_subgroups_and_destroy(loopback):
    dist.init_process_group(backend="loopback")
    g = dist.new_group([0])
    assert dist.get_world_size(g) == 1 and dist.get_process_group_ranks(g) == [0]
    assert dist.get_global_rank(g, 0) == 0 and dist.get_group_rank(g, 0) == 0
    dist.all_reduce(ember.ones(1), group=g)
    with pytest.raises(ValueError, match="distinct global ranks in \\[0, 1\\)"):
        dist.new_group([0, 1])
    dist.destroy_process_group(g)
    with pytest.raises(ValueError, match="destroyed"):
        dist.all_reduce(ember.ones(1), group=g)
    assert dist.all_reduce(ember.ones(1), group=dist.GroupMember.NON_GROUP_MEMBER) is None
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.group.WORLD is None


# -- the cross-rank verdicts (as every rank computes them from the exchanged rows) ------------------------
class TwoRanks(dist.ProcessGroup):
    """Rank 0 of a pretend group of two, whose peer's row is given."""

    name = "fake"
    device_types = ("cpu",)

    def __init__(self, peer_call):
        super().__init__(0, 2, (0, 1))
        self.peer_call = peer_call

    def allgather_ints(self, values):
        return [list(values), self.peer_call.vector(self._ember_seq)]


def _verdict(mine, peer, part="a", what="tensors"):
    pg = TwoRanks(peer)
    rows = _check.exchange(pg, mine)
    _check.same(pg, mine, rows, part, what)


def test_verdicts_name_every_rank():
    sig = _meta.signature
    a, b = ember.zeros(4, 3), ember.zeros(4)
    with pytest.raises(RuntimeError, match=r"rank 0: float32\[4, 3\], rank 1: float32\[4\]"):
        _verdict(_check.Call("all_reduce", a=sig(a)), _check.Call("all_reduce", a=sig(b)))
    with pytest.raises(RuntimeError, match="rank 0: all_reduce .*rank 1: broadcast"):
        _verdict(_check.Call("all_reduce", a=sig(a)), _check.Call("broadcast", a=sig(a)))
    with pytest.raises(RuntimeError, match="disagree on the op .*SUM.*MAX"):
        _verdict(_check.Call("all_reduce", op=dist.ReduceOp.SUM, a=sig(a)),
                 _check.Call("all_reduce", op=dist.ReduceOp.MAX, a=sig(a)))
    with pytest.raises(RuntimeError, match="rank 1 of the group passed invalid arguments"):
        _verdict(_check.Call("all_reduce", a=sig(a)), _check.Call("all_reduce", a=sig(a), local_error=ValueError()))
    _verdict(_check.Call("all_reduce", a=sig(a)), _check.Call("all_reduce", a=sig(a)))  # agreement passes
    long = ember.zeros(*([1] * 8))
    assert _meta.describe(sig(long)).startswith("float32[1, 1, 1, 1, 1, 1, ... (8 dims")


# -- the launcher's command line ---------------------------------------------------------------------
def test_launcher_builds_the_mpiexec_command(monkeypatch):
    monkeypatch.setattr(_mpi_env, "mpi4py_installed", lambda: True)
    monkeypatch.setenv("EMBER_MPIEXEC", sys.executable)  # any existing file stands in for mpiexec
    cmd = launcher.command(["--nproc", "3", "train.py", "--lr", "0.1", "--nproc", "9"])
    assert cmd == [sys.executable, "-n", "3", sys.executable, "-m", "ember.distributed._launch", "train.py", "--lr",
                   "0.1", "--nproc", "9"]
    cmd = launcher.command(["--nproc_per_node=2", "--mpi-arg=-bind-to", "--mpi-arg", "core", "-m", "pkg.train", "-x"])
    assert cmd[1:5] == ["-n", "2", "-bind-to", "core"] and cmd[-3:] == ["-m", "pkg.train", "-x"]


@pytest.mark.parametrize("argv,message", [
    ([], "a script (or -m module) to run is required"),
    (["--nproc", "0", "t.py"], "--nproc must be at least 1"),
    (["--nnodes", "2", "t.py"], "--nnodes > 1 is not supported"),
])
def test_launcher_usage_errors(argv, message, monkeypatch, capsys):
    monkeypatch.setattr(_mpi_env, "mpi4py_installed", lambda: True)
    with pytest.raises(SystemExit) as e:
        launcher.command(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_launcher_without_mpi_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(_mpi_env, "mpi4py_installed", lambda: False)
    with pytest.raises(SystemExit):
        launcher.command(["t.py"])
    assert "mpi4py is not installed; pip install 'ember[mpi]'" in capsys.readouterr().err
    monkeypatch.setattr(_mpi_env, "mpi4py_installed", lambda: True)
    monkeypatch.setenv("EMBER_MPIEXEC", "/nonexistent/mpiexec")
    with pytest.raises(SystemExit):
        launcher.command(["t.py"])
    assert "no mpiexec found (/nonexistent/mpiexec)" in capsys.readouterr().err


def test_the_abort_hook_can_be_switched_off(monkeypatch):
    from ember.distributed import _faults
    monkeypatch.setattr(_faults, "_installed", False)
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    monkeypatch.setenv("EMBER_DISTRIBUTED_ABORT_ON_ERROR", "0")
    _faults.install()
    assert sys.excepthook is sys.__excepthook__
    monkeypatch.setenv("EMBER_DISTRIBUTED_ABORT_ON_ERROR", "1")
    _faults.install()
    assert sys.excepthook is _faults._excepthook


def test_pytorch_names():
    assert dist.Backend("MPI") == dist.Backend.MPI == "mpi"
    assert dist.all_gather_base is dist.all_gather_into_tensor
    assert set(dist.ReduceOp.__members__) == {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"}
    assert not dist.is_gloo_available() and "init_process_group" in dir(dist)
    assert _world.collective_checks_enabled() in (True, False)
