"""ember-cuda-cupy against the real cupy (no fake here: run this folder in its own pytest process).

Without a GPU (CI) the availability test checks the reason names what failed, and every test that
needs a GPU skips with "no CUDA device". With one (gpu_check.sh) they run for real."""
import numpy as np
import pytest

import ember
import ember.backend

be = ember.backend.backend_for("cuda")
OK, REASON = be.availability()
gpu = pytest.mark.skipif(not OK, reason="no CUDA device")


def test_availability_names_what_failed():
    if OK:
        assert ember.cuda.is_available() and ember.cuda.device_count() >= 1 and REASON == ""
        return
    assert REASON.startswith("no CUDA device")
    try:
        import cupy  # noqa: F401
    except Exception:
        assert "cupy is not importable" in REASON and "ember-cuda-cupy[cuda12]" in REASON
    else:  # cupy installed, no driver or no GPU: the runtime's error is named
        assert "getDeviceCount" in REASON and "cudaError" in REASON, REASON
    assert not ember.cuda.is_available() and ember.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="no CUDA device"):
        ember.zeros(1, device="cuda")


@gpu
def test_round_trip_and_arithmetic():
    x = ember.arange(12.0, device="cuda").reshape(3, 4)
    assert ((x * 2).sum(1)).tolist() == [12.0, 44.0, 76.0]
    assert x.t().contiguous().cpu().numpy().tolist() == np.arange(12.0).reshape(3, 4).T.tolist()


@gpu
def test_bfloat16_and_tf32_matmul_match_float32():
    a, b = ember.randn(64, 96, device="cuda"), ember.randn(96, 32, device="cuda")
    ref = a.cpu().numpy().astype(np.float64) @ b.cpu().numpy()
    np.testing.assert_allclose((a.bfloat16() @ b.bfloat16()).float().cpu().numpy(), ref, rtol=5e-2, atol=0.5)
    ember.backends.cuda.matmul.allow_tf32 = True
    try:
        np.testing.assert_allclose((a @ b).cpu().numpy(), ref, rtol=1e-2, atol=5e-2)
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    np.testing.assert_allclose((a @ b).cpu().numpy(), ref, rtol=1e-4, atol=1e-4)


@gpu
def test_rng_state_round_trip_on_curand():
    g = ember.Generator("cuda").manual_seed(1)
    s = g.get_state()
    x = ember.randn(1001, device="cuda", generator=g)
    g.set_state(s)
    assert ember.randn(1001, device="cuda", generator=g).tolist() == x.tolist()


@gpu
def test_events_time_real_work():
    s, e = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    x = ember.randn(2048, 2048, device="cuda")
    s.record()
    for _ in range(5):
        x = x @ x / 2048
    e.record()
    e.synchronize()
    assert s.elapsed_time(e) > 0
    assert ember.cuda.memory_allocated() > 0 and ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()


@gpu
def test_index_errors_are_raised_before_writing():
    x = ember.zeros(4, device="cuda")
    with pytest.raises(IndexError, match="out of bounds"):
        x.scatter_(0, ember.tensor([1, 7], device="cuda"), ember.ones(2, device="cuda"))
    assert x.tolist() == [0.0] * 4


@gpu
@pytest.mark.parametrize("dtype, tol", [(ember.float32, 1e-5), (ember.float16, 2e-3)])
def test_compiled_elementwise_chain_is_one_cuda_kernel(dtype, tol):
    def f(x, y):
        z = ember.relu(ember.maximum(x, y) * 0.5 - ember.sigmoid(y))
        return ember.tanh(z / (ember.abs(x) + 1.0)) + ember.sqrt(ember.exp(-(y * y)))

    g = ember.Generator(device="cuda").manual_seed(0)
    x = ember.randn(257, 129, device="cuda", generator=g).to(dtype)
    y = ember.randn(129, device="cuda", generator=g).to(dtype)     # broadcast
    x[0, 0] = float("nan")
    cf = ember.compile(f)
    cf(x, y)
    prog = cf.programs()[0]
    assert prog.n_fused >= 1, prog.source
    r, e = cf(x, y), f(x, y)
    assert r.dtype == dtype and r.shape == e.shape
    assert bool(r[0, 0].isnan()) and bool(e[0, 0].isnan())
    assert ember.allclose(r.float(), e.float(), rtol=tol, atol=tol, equal_nan=True)
    xt = x.t().contiguous().t()                                      # a strided input
    assert ember.allclose(cf(xt, y).float(), f(xt, y).float(), rtol=tol, atol=tol, equal_nan=True)
