"""The cuda_cupy backend's own logic on the fake cupy: availability reasons, the reuse of the numpy
kernel table, ember.cuda, memory accounting, the generator, streams/events, matmul paths, pinned
memory and deferred index checks."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.backend

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fakecupy")


def _be():
    return ember.backend.backend_for("cuda")


def _run(code, **env):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([FAKE, os.environ.get("PYTHONPATH", "")]), **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


# -- availability -------------------------------------------------------------------------------------

@pytest.mark.parametrize("err,name,says", [
    ("nodevice", "cudaErrorNoDevice", "no NVIDIA GPU found (the driver is installed and reports none)"),
    ("driver", "cudaErrorInsufficientDriver", "no NVIDIA GPU/driver found (libnodriver.so.1 can't be loaded)")])
def test_runtime_errors_are_caught_and_named(err, name, says):
    # no driver library on this machine, whatever it has: the probe looks for a library that isn't there
    nodriver = "import ember_cuda_cupy._cupy as C; C.DRIVER_LIBRARY = 'libnodriver.so.1'\n"
    r = _run(nodriver + "import ember\nprint(ember.cuda.is_available(), ember.cuda.device_count())\n"
             "from ember import cli; cli.main(['info']); cli.main(['plugins'])", FAKECUPY_ERROR=err)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("False 0")
    assert f"unavailable: no CUDA device: {says} (cupy 14.0.0-fake's CUDA runtime, in getDeviceCount" \
           in r.stdout and name in r.stdout, r.stdout
    with_tensor = _run(nodriver + "import ember\nember.zeros(2, device='cuda')", FAKECUPY_ERROR=err)
    assert with_tensor.returncode != 0 and name in with_tensor.stderr and says in with_tensor.stderr


def test_an_old_driver_is_told_from_a_missing_one():
    r = _run("import ember_cuda_cupy._cupy as C; C._driver_loadable = lambda: True\n"
             "print(C.availability()[1])", FAKECUPY_ERROR="driver")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("no CUDA device: the NVIDIA driver is older than the CUDA version cupy was built for")


def test_without_cupy_import_ember_and_plugins_still_work():
    code = ("import sys; sys.modules['cupy'] = None\nimport ember\nprint(ember.cuda.is_available())\n"
            "from ember import cli; cli.main(['plugins'])")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "False" in r.stdout and "no CUDA device: cupy is not importable" in r.stdout
    # the commands that work: cupy's wheels on PyPI, or this checkout's folder (ember-cuda-cupy is on no index yet)
    assert "pip install cupy-cuda12x (CUDA 12 drivers) or cupy-cuda13x (CUDA 13)" in r.stdout
    assert "from this checkout pip install -e '" in r.stdout and "backends/cuda_cupy[cuda12]'" in r.stdout
    assert "pip install 'ember-cuda-cupy[cuda12]'" not in r.stdout


def test_import_of_the_plugin_module_does_not_import_cupy():
    r = _run("import ember, ember.backend, sys\nember.backend.backend_for('cpu')\nimport ember_cuda_cupy\n"
             "print('cupy' in sys.modules)")
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


# -- the table ------------------------------------------------------------------------------------------

def test_the_numpy_table_is_reused_with_cupy():
    import cupy
    k = _be().kernels
    add = k["add"].__wrapped__
    assert add.__module__ == "ember_cpu_numpy.kernels.elementwise"  # built by the kernel library
    cells = [c.cell_contents for c in add.__closure__]
    assert any(getattr(c, "__name__", "") == "add" and isinstance(c, cupy.ufunc) for c in cells)
    conv = k["convolution"].__wrapped__
    assert conv.__module__ == "ember_cpu_numpy.kernels.convolution" and conv.__self__.xp is cupy
    assert k["copy_"].__wrapped__.__module__ == "ember_cuda_cupy.kernels"  # an override
    from ember_cuda_cupy.kernels import CudaRandom
    from ember_cuda_cupy.optim import CudaOptim
    def group(name):
        return getattr(k[name], "__wrapped__", k[name]).__self__
    assert isinstance(group("uniform_"), CudaRandom) and isinstance(group("dropout"), CudaRandom)
    assert isinstance(group("_fused_adam_"), CudaOptim) and "lstm_layer" not in k
    x = ember.arange(6.0, device="cuda").reshape(2, 3)
    assert isinstance(x._storage._data, cupy.ndarray) and (x + 1).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_overrides_of_the_optional_capabilities_keep_the_base_signatures():
    import inspect
    from ember.backend import Backend
    from ember_cuda_cupy.backend import CupyBackend
    for name in ("pin_memory", "is_pinned", "set_num_threads", "get_num_threads", "to_dlpack", "dlpack_device",
                 "from_dlpack", "memory_stats", "empty_cache", "create_generator", "from_numpy"):
        base, own = getattr(Backend, name), getattr(CupyBackend, name)
        assert [(p.name, p.kind, p.default) for p in inspect.signature(own).parameters.values()] == \
            [(p.name, p.kind, p.default) for p in inspect.signature(base).parameters.values()], name
    assert CupyBackend.supports_pinning and _be().cuda_api is not None


def test_bfloat16_is_stored_as_bits_and_computes_in_float32():
    x = ember.tensor([1.0, 2.5, -3.0, 1e-3], dtype=ember.bfloat16, device="cuda")
    assert x._storage._data.dtype == np.uint16
    y = (x * 3).exp()
    ref = np.exp(np.array([1.0, 2.5, -3.0, 1e-3], dtype=ember.bfloat16.np).astype(np.float32) * 3)
    assert y.dtype is ember.bfloat16
    np.testing.assert_allclose(y.float().cpu().numpy(), ref, rtol=1e-2)
    assert ember.tensor([float("nan")], device="cuda").bfloat16().isnan().item()
    assert x.cat([x]).shape == (8,) if hasattr(x, "cat") else True


def test_ufunc_at_covers_dtypes_cupy_atomics_dont():
    for dt in (ember.int8, ember.uint8, ember.int16, ember.float32):
        x = ember.zeros(3, dtype=dt, device="cuda")
        r = x.scatter_add(0, ember.tensor([0, 0, 2, 0], device="cuda"), ember.ones(4, dtype=dt, device="cuda"))
        assert r.tolist() == [3, 0, 1]
    p = ember.ones(3, device="cuda").scatter_reduce(0, ember.tensor([1, 1, 1], device="cuda"),
                                                     ember.tensor([2.0, 3.0, 4.0], device="cuda"), "prod")
    assert p.tolist() == [1.0, 24.0, 1.0]


# -- ember.cuda -----------------------------------------------------------------------------------------

def test_devices_and_the_device_context():
    c = ember.cuda
    assert c.is_available() and c.device_count() == 2 and c.current_device() == 0
    with c.device(1):
        assert c.current_device() == 1
        assert ember.zeros(1, device="cuda").device == ember.device("cuda:1")
    assert c.current_device() == 0
    c.set_device(1)
    try:
        assert ember.empty(2, device="cuda").device.index == 1
    finally:
        c.set_device(0)
    with pytest.raises(RuntimeError, match="invalid device index 5"):
        c.set_device(5)
    assert c.get_device_name(0) == "Fake GPU (numpy)"
    p = c.get_device_properties(1)
    assert (p.major, p.minor) == (9, 0) and p.total_memory == 8 << 30 and c.get_device_capability() == (9, 0)
    assert isinstance(ember.zeros(2, device="cuda"), ember.cuda.FloatTensor)


def test_ops_on_the_second_gpu_and_copies_between_gpus():
    a = ember.arange(4.0, device="cuda:1")
    b = (a * 2).sum()
    assert b.device.index == 1 and b.item() == 12.0
    c = a.to("cuda:0")
    assert c.device.index == 0 and c.tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="cuda:0.*cuda:1|cuda:1.*cuda:0"):
        c + a


def test_synchronize_waits_on_the_device():
    import cupy
    before = cupy.cuda.calls["synchronize"]
    ember.cuda.synchronize()
    assert cupy.cuda.calls["synchronize"] == before + 2  # both devices
    ember.cuda.synchronize(1)
    assert cupy.cuda.calls["synchronize"] == before + 3


def test_memory_accounting():
    c = ember.cuda
    c.empty_cache()
    base = c.memory_allocated()
    x = ember.empty(1 << 20, dtype=ember.uint8, device="cuda")
    assert c.memory_allocated() - base >= 1 << 20
    c.reset_peak_memory_stats()
    y = ember.empty(4 << 20, dtype=ember.uint8, device="cuda")
    peak = c.max_memory_allocated()
    assert peak >= base + (5 << 20)
    del y
    assert c.memory_allocated() < peak and c.max_memory_allocated() == peak
    assert c.memory_reserved() >= c.memory_allocated() + (4 << 20)  # the freed block is cached
    c.empty_cache()
    assert c.memory_reserved() == c.memory_allocated()
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == c.memory_allocated()
    s = c.memory_stats()
    assert s["allocated_bytes.all.current"] == c.memory_allocated()
    del x


def test_the_accelerator_api_is_served_by_cuda():
    A = ember.accelerator
    assert A.current_accelerator() == ember.device("cuda") and A.is_available() and A.device_count() == 2
    with A.device_index(1):
        assert A.current_device_index() == 1 == ember.cuda.current_device()
    assert A.current_device_index() == 0
    x = ember.empty(1 << 20, dtype=ember.uint8, device="cuda")
    assert A.memory_allocated() == ember.cuda.memory_allocated() and A.memory_reserved() >= 1 << 20
    y = ember.empty(2 << 20, dtype=ember.uint8, device="cuda")
    del y
    A.reset_peak_memory_stats()
    assert A.max_memory_allocated() == A.memory_allocated() == ember.cuda.max_memory_allocated()
    free, total = A.get_memory_info()
    assert 0 <= free <= total
    assert A.current_stream() == ember.cuda.current_stream()
    A.synchronize("cuda:1")
    del x


def test_generator_seeding_and_state_round_trip():
    c = ember.cuda
    c.manual_seed(123)
    a = ember.rand(5, device="cuda")
    c.manual_seed(123)
    b = ember.rand(5, device="cuda")
    assert a.tolist() == b.tolist() and all(0.0 <= v < 1.0 for v in a.tolist())
    st = c.get_rng_state()
    x = ember.randn(7, device="cuda")
    y = ember.randn(3, dtype=ember.float64, device="cuda")
    c.set_rng_state(st)
    assert ember.randn(7, device="cuda").tolist() == x.tolist()
    assert ember.randn(3, dtype=ember.float64, device="cuda").tolist() == y.tolist()
    assert ember.rand(4, device="cuda").tolist() != a.tolist()[:4]  # draws never repeat
    c.manual_seed_all(7)
    with c.device(1):
        z1 = ember.rand(3, device="cuda:1")
    c.manual_seed_all(7)
    assert ember.rand(3, device="cuda:1").tolist() == z1.tolist()
    assert c.initial_seed() == 7
    g = ember.Generator("cuda").manual_seed(5)
    assert len(g.get_state().tolist()) == 16
    with pytest.raises(RuntimeError, match="16 bytes"):
        g.set_state(ember.zeros(45, dtype=ember.uint8))
    h = ember.randn(1001, device="cuda", generator=g)  # odd count: cuRAND's normal wants even
    assert abs(float(h.mean())) < 0.2 and 0.8 < float(h.std()) < 1.2


def test_streams_and_events():
    import cupy
    c = ember.cuda
    s = c.Stream()
    assert c.current_stream() == c.default_stream()
    with c.stream(s):
        assert cupy.cuda.get_current_stream() is s._s
        assert c.current_stream() == s
        start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
        start.record()
        ember.ones(10, device="cuda").sum()
        end.record()
    assert cupy.cuda.get_current_stream() is cupy.cuda.Stream.null
    end.synchronize()
    assert start.query() and end.elapsed_time(end) == 0.0 and start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        c.Event().elapsed_time(end)
    s.wait_event(end)
    s.wait_stream(c.current_stream())
    s.synchronize()
    assert s.query()


# -- matmul ---------------------------------------------------------------------------------------------

def test_tf32_flag_routes_float32_matmul_through_gemmex():
    from cupy.cuda import cublas
    a = ember.randn(5, 7, device="cuda")
    w = ember.randn(3, 7, device="cuda")
    ref = a.cpu().numpy() @ w.cpu().numpy().T
    cublas.calls.clear()
    np.testing.assert_allclose((a @ w.T).cpu().numpy(), ref, rtol=1e-5)
    assert not cublas.calls  # full float32 by default: cupy's matmul
    ember.backends.cuda.matmul.allow_tf32 = True
    try:
        r = a @ w.T  # the transposed operand goes through cuBLAS's transpose flag
        assert ("gemmEx", 0, 77) in cublas.calls
        np.testing.assert_allclose(r.cpu().numpy(), ref, rtol=1e-5)
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    cublas.calls.clear()
    ember.set_float32_matmul_precision("high")
    try:
        ember.ones(2, 2, device="cuda") @ ember.ones(2, 2, device="cuda")
        assert ("gemmEx", 0, 77) in cublas.calls
    finally:
        ember.set_float32_matmul_precision("highest")


def test_bfloat16_matmul_uses_gemmex_with_bfloat16_storage():
    from cupy.cuda import cublas
    cublas.calls.clear()
    x = ember.randn(2, 4, 6, device="cuda")
    y = ember.randn(6, 3, device="cuda")
    r = x.bfloat16() @ y.bfloat16()
    assert r.dtype is ember.bfloat16 and r.shape == (2, 4, 3)
    assert ("gemmEx", 14, 68) in cublas.calls
    np.testing.assert_allclose(r.float().cpu().numpy(), x.cpu().numpy() @ y.cpu().numpy(), rtol=5e-2, atol=5e-2)
    v = ember.randn(6, device="cuda").bfloat16()
    assert (y.bfloat16().t() @ v).shape == (3,)


# -- pinned memory and copies ------------------------------------------------------------------------------

def test_pin_memory_and_asynchronous_upload():
    t = ember.arange(6.0).reshape(2, 3)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu" and p.tolist() == t.tolist()
    g = p.to("cuda", non_blocking=True)
    assert g.tolist() == t.tolist()
    from cupy.cuda import calls
    n = calls["stream_synchronize"]
    p.to("cuda", non_blocking=True)
    p.cuda(non_blocking=True)
    assert calls["stream_synchronize"] == n  # queued, not waited for
    p.to("cuda")
    assert calls["stream_synchronize"] == n + 1  # a blocking copy from pinned memory is complete on return
    p.cuda()
    p.to("cuda", False)
    assert calls["stream_synchronize"] == n + 3
    assert g.to("cpu", non_blocking=True).tolist() == t.tolist()  # every backend takes the keyword
    from ember.utils.data import DataLoader, TensorDataset
    batches = list(DataLoader(TensorDataset(ember.arange(8.0)), batch_size=4, pin_memory=True))
    assert all(b[0].is_pinned() for b in batches)


# -- deferred index checks ------------------------------------------------------------------------------

def test_lazy_index_checks_raise_at_the_next_synchronization():
    code = ("import ember\nx = ember.arange(4.0, device='cuda')\n"
            "r = ember.gather(x, 0, ember.tensor([0, 9], device='cuda'))\nprint('queued')\n"
            "try:\n    r.tolist()\nexcept IndexError as e:\n    print('raised', e)\n"
            "print(ember.gather(x, 0, ember.tensor([3, 1], device='cuda')).tolist())")
    r = _run(code, EMBER_CUDA_INDEX_CHECKS="lazy")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "queued" and out[1].startswith("raised gather: an index was out of bounds for dimension 0 with "
                                                    "size 4")
    assert out[2] == "[3.0, 1.0]"
