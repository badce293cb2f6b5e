"""``ember.accelerator`` (PyTorch's device-neutral accelerator API), the device predicates of
``Tensor`` and the ``ember.backends.<library>`` queries.

The accelerator depends on the installed backends, so most checks run in a subprocess with the
cuda and opencl plugins blocked (``EMBER_DISABLE_PLUGINS``): on their own (a CPU-only machine)
and with test backends (tests/accelerator_backend.py) registered."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import ember
from opencl_probe import opencl_available as _opencl_available

TESTS = pathlib.Path(__file__).resolve().parent


def _run(body: str, plugins: tuple = ()) -> None:
    """Run ``body`` in a fresh interpreter with only the cpu backend (and ``plugins``, classes of
    tests/accelerator_backend.py, registered); it must print ok."""
    setup = "import ember\nimport accelerator_backend as AB\n"
    setup += "".join(f"ember._plugins.register_plugin(AB.{p}(), name={p!r})\n" for p in plugins)
    code = setup + textwrap.dedent(body) + "\nprint('ok')\n"
    env = {**os.environ, "EMBER_DISABLE_PLUGINS": "cuda_cupy,opencl",
           "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok"), r.stdout


def test_without_an_accelerator_it_answers_like_a_cpu_only_pytorch():
    _run("""
        import pytest
        A = ember.accelerator
        assert A.current_accelerator() is None and A.current_accelerator(check_available=True) is None
        assert A.is_available() is False and A.device_count() == 0
        msg = "Cannot access accelerator device when none is available."
        for f in (A.current_device_index, A.current_device_idx, A.synchronize, A.empty_cache, A.memory_stats,
                  A.memory_allocated, A.max_memory_allocated, A.memory_reserved, A.max_memory_reserved,
                  A.reset_peak_memory_stats, A.reset_accumulated_memory_stats, A.get_memory_info,
                  A.current_stream, A.get_device_capability, A.empty_host_cache):
            with pytest.raises(RuntimeError, match=msg):
                f()
        with pytest.raises(RuntimeError, match=msg):
            A.set_device_index(0)
        A.set_device_index(-1)  # a negative index is a no-op, as in PyTorch
        for d in ("cpu", "cuda:0", ember.device("cpu")):
            with pytest.raises(RuntimeError, match="Accelerator expected"):
                A.set_device_index(d)
        with A.device_index(None):
            pass
        with pytest.raises(RuntimeError, match=msg):
            with A.device_index(0):
                pass
        import ember.accelerator.memory as M
        assert M.memory_allocated is A.memory_allocated
    """)


def test_an_installed_accelerator_serves_every_call():
    _run("""
        import pytest
        A = ember.accelerator
        be = ember._plugins.backend_for("fakeacc")
        acc = A.current_accelerator()
        assert acc == ember.device("fakeacc") and acc.index is None and isinstance(acc, ember.device)
        assert A.current_accelerator(check_available=True) == acc
        assert A.is_available() and A.device_count() == 2 and A.current_device_index() == 0
        x = ember.ones(3, device=acc)
        assert x.device == ember.device("fakeacc:0") and x.sum().item() == 3.0
        A.set_device_index(1)
        assert A.current_device_index() == 1 and A.current_device_idx() == 1
        assert ember.zeros(1, device=acc).device.index == 1
        A.set_device_index("fakeacc:0")
        with A.device_index(1):
            assert A.current_device_index() == 1
        assert A.current_device_index() == 0
        with A.device_index(None):
            assert A.current_device_index() == 0
        A.set_device_idx(ember.device("fakeacc", 1))
        assert A.current_device_index() == 1
        A.set_device_index(-5)  # no-op
        assert A.current_device_index() == 1
        with pytest.raises(ValueError, match="Expected a torch.device with a specified index"):
            A.set_device_index("fakeacc")
        with pytest.raises(ValueError, match="cpu doesn't match the current accelerator fakeacc"):
            A.set_device_index("cpu:0")
        with pytest.raises(RuntimeError, match="invalid device index 2"):
            A.set_device_index(2)
        A.set_device_index(0)
        A.synchronize()
        A.synchronize(1)
        A.synchronize("fakeacc:1")
        assert be.calls == [("synchronize", "fakeacc:0"), ("synchronize", "fakeacc:1"),
                            ("synchronize", "fakeacc:1")]
        with pytest.raises(ValueError, match="doesn't match"):
            A.synchronize("cpu")
        assert list(A.memory_stats()) == sorted(A.memory_stats())  # an OrderedDict sorted by key
        assert A.memory_allocated() == 5 and A.memory_allocated(1) == 6 and A.memory_allocated("fakeacc:1") == 6
        assert A.max_memory_allocated() == 100 and A.max_memory_allocated(1) == 7
        assert A.memory_reserved() == 64 and A.max_memory_reserved() == 0  # a figure the backend does not keep
        A.reset_peak_memory_stats()
        assert A.max_memory_allocated() == 5 and A.max_memory_allocated(1) == 7
        A.reset_accumulated_memory_stats()
        A.empty_cache()
        A.empty_host_cache()
        assert be.calls[-1] == ("empty_cache", None)
        with pytest.raises(NotImplementedError, match="does not report its free and total memory"):
            A.get_memory_info()
        with pytest.raises(NotImplementedError, match="has no stream API"):
            A.current_stream()
        caps = A.get_device_capability()
        assert ember.float32 in caps["supported_dtypes"] and ember.int64 in caps["supported_dtypes"]
    """, plugins=("FakeAccelPlugin",))


def test_an_accelerator_without_a_device_is_named_but_not_available():
    # as PyTorch built for CUDA on a machine without a GPU
    _run("""
        import pytest
        A = ember.accelerator
        assert A.current_accelerator() == ember.device("deadacc")
        assert A.current_accelerator(check_available=True) is None
        assert not A.is_available() and A.device_count() == 0
        with pytest.raises(RuntimeError, match="none is available.*the fake driver is not installed"):
            A.current_device_index()
        with pytest.raises(ValueError, match="doesn't match the current accelerator deadacc"):
            A.synchronize("cpu")
    """, plugins=("FakeDownPlugin",))


def test_an_accelerator_that_sees_a_device_is_chosen_over_one_that_does_not():
    _run("""
        A = ember.accelerator
        assert A.current_accelerator() == ember.device("fakeacc")  # deadacc sorts first but has no device
        assert A.is_available() and A.device_count() == 2
    """, plugins=("FakeDownPlugin", "FakeAccelPlugin"))


@pytest.mark.skipif(not _opencl_available(), reason="needs the opencl backend with pyopencl and an OpenCL device")
def test_opencl_is_the_accelerator_where_cuda_is_not_available():
    if ember.cuda.is_available():
        pytest.skip("cuda is available here and is preferred")
    A = ember.accelerator
    assert A.current_accelerator() == ember.device("opencl")
    assert A.device_count() == ember._plugins.backend_for("opencl").device_count()
    x = ember.ones(256, device=A.current_accelerator())
    assert x.device.type == "opencl"
    A.synchronize()
    A.reset_peak_memory_stats()
    assert A.max_memory_allocated() == A.memory_allocated() >= 1024
    del x


# -- Tensor predicates ---------------------------------------------------------------------------

def test_device_and_layout_predicates_of_a_cpu_tensor():
    t = ember.zeros(2)
    assert t.is_cpu and not t.is_cuda
    for name in ("is_meta", "is_xpu", "is_mps", "is_ipu", "is_maia", "is_mtia", "is_vulkan", "is_xla",
                 "is_sparse", "is_sparse_csr", "is_mkldnn", "is_quantized", "is_nested"):
        assert getattr(t, name) is False, name
    assert t.is_conj() is False and t.is_neg() is False and t.is_distributed() is False
    assert t.is_same_size(ember.ones(2)) and not t.is_same_size(ember.ones(3))
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        t.is_same_size(3)


def test_device_predicates_follow_the_device_type(prim_backend):
    t = ember.zeros(2, device=prim_backend)
    assert not t.is_cpu and not t.is_cuda and not t.is_meta and not t.is_xpu


# -- ember.backends ------------------------------------------------------------------------------

def test_library_queries_answer_instead_of_raising():
    import ember.backends.mps as mps
    B = ember.backends
    assert mps is B.mps
    assert B.mps.is_available() is False and B.mps.is_built() is False
    assert B.mps.is_macos13_or_newer() is False and B.mps.is_macos_or_newer(14, 0) is False
    assert B.cudnn.is_available() is False and B.cudnn.version() is None
    assert B.cudnn.is_acceptable(ember.zeros(1)) is False
    for name in ("mkldnn", "openmp", "mkl", "opt_einsum", "nnpack", "cusparselt", "kleidiai"):
        assert getattr(B, name).is_available() is False, name
    assert B.opt_einsum.enabled is False and B.opt_einsum.strategy is None and B.opt_einsum.get_opt_einsum() is None
    assert B.cusparselt.version() is None
    assert B.cpu.get_cpu_capability() == "DEFAULT"
    with B.mkl.verbose(B.mkl.VERBOSE_ON):
        pass
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        B.nope


def test_library_flags_are_kept():
    B = ember.backends
    assert B.mha.get_fastpath_enabled() is True
    B.mha.set_fastpath_enabled(False)
    try:
        assert B.mha.get_fastpath_enabled() is False
    finally:
        B.mha.set_fastpath_enabled(True)
    prev = B.nnpack.set_flags(True)
    assert prev == (False,)
    with B.nnpack.flags(enabled=False):
        assert B.nnpack.set_flags(False) == (False,)
    assert B.nnpack.set_flags(False) == (True,)
