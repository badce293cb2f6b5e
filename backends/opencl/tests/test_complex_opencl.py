"""complex64/complex128 on opencl (float2/double2 kernels) against numpy's complex128 results:
the elementwise functions on every path the kernels take (contiguous, strided, broadcast, python
complex scalars), casts and copies, reductions in both of their modes, scans, the complex GEMM,
the indexing kernels, random fills, and the real-only fast paths that hand complex tensors to
the core's decompositions. The conformance suite's complex tier (test_04f_complex) covers the
op-level behaviour; these tests aim at the kernels' own branches."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backend import dtypes as D

CX = [ember.complex64, ember.complex128]
TOL = {ember.complex64: (2e-5, 2e-6), ember.complex128: (1e-12, 1e-14)}


def _z(shape, seed=0, scale=2.0):
    r = np.random.default_rng(seed)
    return (r.uniform(-scale, scale, shape) + 1j * r.uniform(-scale, scale, shape)).astype(np.complex128)


def _on(a, dt, dev):
    return ember.tensor(np.ascontiguousarray(a).astype(dt.np), device=dev)


def _check(t, ref, dt, **kw):
    rtol, atol = TOL[dt]
    got = t.numpy(force=True)
    np.testing.assert_allclose(got, ref, rtol=kw.get("rtol", rtol), atol=kw.get("atol", atol), equal_nan=True)


def test_the_backend_declares_both_complex_dtypes(backend):
    assert {"complex64", "complex128"} <= set(backend.dtypes)  # PoCL has cl_khr_fp64


def test_complex128_is_refused_on_a_device_without_fp64(backend):
    class NoFp64:
        fp64 = False
        index = 3
        name = "toy"
    with pytest.raises(TypeError, match=r"^empty: dtype complex128 is not supported by opencl:3 \(toy\): the device "
                                        "has no cl_khr_fp64"):
        backend._check_device_dtype(D.complex128, NoFp64(), "empty")


UNARY = [
    ("neg", np.negative), ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos),
    ("tan", np.tan), ("sinh", np.sinh), ("cosh", np.cosh), ("tanh", np.tanh), ("asin", np.arcsin),
    ("acos", np.arccos), ("atan", np.arctan), ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
    ("exp2", np.exp2), ("expm1", np.expm1), ("log2", np.log2), ("log10", np.log10), ("log1p", np.log1p),
    ("rsqrt", lambda a: 1 / np.sqrt(a)), ("sigmoid", lambda a: 1 / (1 + np.exp(-a))), ("square", np.square),
    ("reciprocal", np.reciprocal), ("abs", np.abs), ("conj", np.conj),
]


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
@pytest.mark.parametrize("name,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_functions_on_contiguous_and_strided_inputs(dev, dt, name, ref):
    a = _z((5, 6), seed=1)
    a[0, :3] = [1e-4 + 2e-4j, -3e-5 + 1e-5j, 0.5 - 0.25j]  # small arguments: log1p/expm1's own formulas
    x = _on(a, dt, dev)
    want = ref(a.astype(dt.np).astype(np.complex128))
    got = getattr(ember, name)(x)
    assert got.dtype is (D.to_real(dt) if name == "abs" else dt)
    _check(got, want, dt, rtol=TOL[dt][0] * (5 if name in ("tan", "atanh", "acos") else 1))
    _check(getattr(ember, name)(x.t()), want.T, dt, rtol=TOL[dt][0] * (5 if name in ("tan", "atanh", "acos") else 1))


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_tanh_and_tan_stay_finite_for_large_arguments(dev, dt):
    a = np.array([40 + 1j, -40 - 2j, 1 + 40j, 0.3 - 800j])
    got_tanh = ember.tanh(_on(a, dt, dev))
    _check(got_tanh[:2], np.tanh(a[:2]), dt)
    _check(ember.tan(_on(a[2:], dt, dev)), np.tan(a[2:]), dt)


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_binary_arithmetic_with_tensors_broadcasts_and_complex_scalars(dev, dt):
    a, b = _z((4, 5), seed=2), _z((5,), seed=3)
    x, y = _on(a, dt, dev), _on(b, dt, dev)
    a, b = a.astype(dt.np).astype(complex), b.astype(dt.np).astype(complex)
    for f in (lambda p, q: p + q, lambda p, q: p - q, lambda p, q: p * q, lambda p, q: p / q, lambda p, q: p ** q):
        _check(f(x, y), f(a, b), dt, rtol=TOL[dt][0] * 10)
        _check(f(x.t(), 0.5 - 1.5j), f(a.T, 0.5 - 1.5j), dt, rtol=TOL[dt][0] * 10)
        _check(f(2 + 1j, x), f(2 + 1j, a), dt, rtol=TOL[dt][0] * 10)


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_integer_powers_are_products_and_zero_bases_follow_numpy(dev, dt):
    a = _z((6,), seed=4)
    x = _on(a, dt, dev)
    a = a.astype(dt.np)
    # the same product, not exp/log
    np.testing.assert_array_equal((x ** 2).numpy(force=True), (x * x).numpy(force=True))
    _check(x ** 2, a.astype(complex) ** 2, dt)
    _check(x ** 3, a.astype(complex) ** 3, dt)
    _check(x ** -2, 1 / (a.astype(complex) ** 2), dt)
    z = ember.zeros(3, dtype=dt, device=dev)
    got = (z ** ember.tensor([2 + 0j, 0j, 1j], dtype=dt, device=dev)).numpy(force=True)
    assert got[0] == 0 and got[1] == 1 and np.isnan(got[2].real)


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_division_by_zero_gives_numpy_s_infinities(dev, dt):
    x = ember.tensor([1 + 0j, 1 + 1j], dtype=dt, device=dev)
    got = (x / ember.zeros(2, dtype=dt, device=dev)).numpy(force=True)
    with np.errstate(all="ignore"):
        want = np.array([1 + 0j, 1 + 1j], dtype=dt.np) / np.zeros(2, dtype=dt.np)
    np.testing.assert_array_equal(got, want)


def test_comparisons_logical_ops_nonzero_and_where(dev):
    a = np.array([[1 + 1j, 0j, 2j], [0j, 3 + 0j, 1 - 1j]])
    b = np.array([[1 + 1j, 1j, 2j], [0j, 3 + 1j, 1 + 1j]])
    x, y = _on(a, ember.complex64, dev), _on(b, ember.complex64, dev)
    np.testing.assert_array_equal((x == y).numpy(force=True), a == b)
    np.testing.assert_array_equal((x != y).numpy(force=True), a != b)
    np.testing.assert_array_equal((x == (1 + 1j)).numpy(force=True), a == 1 + 1j)
    np.testing.assert_array_equal(ember.logical_not(x).numpy(force=True), a == 0)
    np.testing.assert_array_equal(ember.logical_and(x, y).numpy(force=True), (a != 0) & (b != 0))
    np.testing.assert_array_equal(ember.logical_or(x, y).numpy(force=True), (a != 0) | (b != 0))
    np.testing.assert_array_equal(ember.logical_xor(x, y).numpy(force=True), (a != 0) ^ (b != 0))
    np.testing.assert_array_equal(x.nonzero().numpy(force=True), np.argwhere(a))
    w = ember.where(x.real > 0.5, x, 5 - 2j)
    np.testing.assert_array_equal(w.numpy(force=True), np.where(a.real > 0.5, a, 5 - 2j))


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_host_round_trip_and_transfers_between_devices(backend, dev, dt):
    a = _z((3, 4), seed=5).astype(dt.np)
    x = ember.tensor(a, device=dev)
    assert x.dtype is dt and x.device == dev
    np.testing.assert_array_equal(x.numpy(force=True), a)
    np.testing.assert_array_equal(x.numpy(force=True), a)
    assert x[1, 2].item() == complex(a[1, 2])
    assert x.tolist() == a.tolist()
    if backend.device_count() > 1:
        y = x.t().to("opencl:1")
        assert y.device == ember.device("opencl:1")
        np.testing.assert_array_equal(y.numpy(force=True), a.T)


def test_casts_between_real_and_complex_and_strided_copies(dev):
    a = _z((4, 6), seed=6)
    x = _on(a, ember.complex128, dev)
    np.testing.assert_array_equal(x.to(ember.complex64).numpy(force=True), a.astype(np.complex64))
    np.testing.assert_array_equal(x.to(ember.complex64).to(ember.complex128).numpy(force=True),
                                  a.astype(np.complex64).astype(np.complex128))
    f = ember.tensor([[1.5, -2.0], [0.0, 3.25]], device=dev)
    np.testing.assert_array_equal(f.to(ember.complex64).numpy(force=True), np.array([[1.5, -2.0], [0.0, 3.25]]) + 0j)
    i = ember.tensor([3, -4], device=dev)
    np.testing.assert_array_equal(i.to(ember.complex128).numpy(force=True), np.array([3 + 0j, -4 + 0j]))
    np.testing.assert_array_equal(ember.tensor([True, False], device=dev).to(ember.complex64).numpy(force=True),
                                  [1 + 0j, 0j])
    # complex -> bool: nonzero; copy_ into a real tensor keeps the real part, as numpy's cast
    np.testing.assert_array_equal(ember.tensor([0j, 1j, 2 + 0j], device=dev).to(ember.bool).numpy(force=True),
                                  [False, True, True])
    r = ember.empty(4, 6, dtype=ember.float32, device=dev)
    r.copy_(x.to(ember.complex64))
    np.testing.assert_array_equal(r.numpy(force=True), a.astype(np.complex64).real)
    # strided complex -> complex, and a broadcast source
    d = ember.zeros(6, 4, dtype=ember.complex64, device=dev)
    d.t().copy_(x[:, ::1])
    np.testing.assert_array_equal(d.numpy(force=True), a.astype(np.complex64).T)
    d[:, 1:3].copy_(ember.tensor([1 - 1j, 2 + 2j], device=dev))
    ref = a.astype(np.complex64).T.copy()
    ref[:, 1:3] = [1 - 1j, 2 + 2j]
    np.testing.assert_array_equal(d.numpy(force=True), ref)


def test_fill_and_writes_through_the_parts(dev):
    z = ember.zeros(3, 4, dtype=ember.complex128, device=dev)
    z[:, ::2].fill_(2 - 3j)
    z.imag[1].fill_(7.0)
    z.real[2, 3] = -1.0
    want = np.zeros((3, 4), complex)
    want[:, ::2] = 2 - 3j
    want[1].imag = 7.0
    want[2, 3] = -1 + want[2, 3].imag * 1j
    np.testing.assert_array_equal(z.numpy(force=True), want)
    np.testing.assert_array_equal(ember.view_as_real(z).numpy(force=True), np.stack([want.real, want.imag], -1))
    np.testing.assert_array_equal(ember.full((2,), 1 + 2j, device=dev).numpy(force=True), [1 + 2j, 1 + 2j])


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_reductions_in_serial_and_tree_modes(dev, dt):
    a = _z((7, 9, 5), seed=7, scale=1.0)
    x = _on(a, dt, dev)
    a = a.astype(dt.np).astype(complex)
    _check(x.sum((0, 2)), a.sum((0, 2)), dt, rtol=1e-4 if dt is ember.complex64 else 1e-12)
    _check(x.mean(1), a.mean(1), dt, rtol=1e-4 if dt is ember.complex64 else 1e-12)
    _check(x.prod(2), a.prod(2), dt, rtol=1e-4 if dt is ember.complex64 else 1e-12)
    big = _z((200000,), seed=8, scale=1.0)  # one output of many elements: work-groups and a second pass
    xb = _on(big, dt, dev)
    big = big.astype(dt.np).astype(complex)
    _check(xb.sum(), big.sum(), dt, rtol=1e-4 if dt is ember.complex64 else 1e-10, atol=1e-2)
    _check(xb.mean(), big.mean(), dt, rtol=1e-4 if dt is ember.complex64 else 1e-10, atol=1e-6)
    unit = np.exp(1j * np.linspace(0, 1, 5000))  # |z| = 1: the product stays finite
    _check(_on(unit, dt, dev).prod(), np.prod(unit.astype(dt.np).astype(complex)), dt, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_cumsum_and_cumprod_per_row_and_for_long_rows(dev, dt):
    a = _z((3, 8), seed=9, scale=1.0)
    x = _on(a, dt, dev)
    a = a.astype(dt.np).astype(complex)
    _check(x.cumsum(1), a.cumsum(1), dt, rtol=1e-5 if dt is ember.complex64 else 1e-12)
    _check(x.cumprod(1), a.cumprod(1), dt, rtol=1e-5 if dt is ember.complex64 else 1e-12)
    _check(x.t().cumsum(0), a.T.cumsum(0), dt, rtol=1e-5 if dt is ember.complex64 else 1e-12)
    long = np.exp(1j * np.linspace(0, 0.01, 3000))  # few rows, long ones: a work-group per row
    xl = _on(long, dt, dev)
    long = long.astype(dt.np).astype(complex)
    _check(xl.cumsum(0), long.cumsum(), dt, rtol=1e-4 if dt is ember.complex64 else 1e-11)
    _check(xl.cumprod(0), long.cumprod(), dt, rtol=1e-3 if dt is ember.complex64 else 1e-11)


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_complex_gemm_batched_broadcast_and_transposed(dev, dt):
    a, b = _z((2, 5, 7), seed=10), _z((7, 3), seed=11)
    x, y = _on(a, dt, dev), _on(b, dt, dev)
    a, b = a.astype(dt.np).astype(complex), b.astype(dt.np).astype(complex)
    tol = 1e-4 if dt is ember.complex64 else 1e-12
    _check(x @ y, a @ b, dt, rtol=tol, atol=tol)
    _check(x.transpose(1, 2).transpose(1, 2) @ y.t().t(), a @ b, dt, rtol=tol, atol=tol)
    _check(y.t() @ x[0].t(), b.T @ a[0].T, dt, rtol=tol, atol=tol)
    _check(F.linear(x, y.t(), _on(np.array([1j, 2, -1j]), dt, dev)), a @ b + np.array([1j, 2, -1j]), dt, rtol=tol,
           atol=tol)


@pytest.mark.parametrize("dt", CX, ids=lambda d: d.name)
def test_larger_products_take_one_real_tiled_gemm(dev, dt):
    a, b = _z((3, 1, 20, 30), seed=16), _z((4, 30, 25), seed=17)
    x, y = _on(a, dt, dev), _on(b, dt, dev)
    a, b = a.astype(dt.np).astype(complex), b.astype(dt.np).astype(complex)
    tol = 1e-4 if dt is ember.complex64 else 1e-12
    _check(x @ y, a @ b, dt, rtol=tol, atol=tol)
    _check(x[..., ::2, :].transpose(-1, -2) @ y[0, ::3].conj(),
           np.swapaxes(a[..., ::2, :], -1, -2) @ b[0, ::3].conj(), dt, rtol=tol, atol=tol)
    _check(x[0, 0] @ y[1, :, 3], a[0, 0] @ b[1, :, 3], dt, rtol=tol, atol=tol)


def test_gather_index_select_and_scatter_add(dev):
    a = _z((4, 5), seed=12)
    x = _on(a, ember.complex64, dev)
    a = a.astype(np.complex64)
    idx = ember.tensor([[0, 4], [1, 1], [3, 2], [2, 0]], device=dev)
    np.testing.assert_array_equal(x.gather(1, idx).numpy(force=True), np.take_along_axis(a, idx.numpy(force=True), 1))
    np.testing.assert_array_equal(x.index_select(0, ember.tensor([3, 0], device=dev)).numpy(force=True), a[[3, 0]])
    with pytest.raises(IndexError):
        x.gather(1, ember.tensor([[7]], device=dev))
    n = 5000  # past the in-order limit: complex has no atomics, so it stays in order (deterministic)
    src = _z((n,), seed=13).astype(np.complex64)
    where = np.random.default_rng(14).integers(0, 8, n)
    got = ember.zeros(8, dtype=ember.complex64, device=dev).scatter_add(
        0, ember.tensor(where, device=dev), ember.tensor(src, device=dev))
    want = np.zeros(8, complex)
    np.add.at(want, where, src.astype(complex))
    np.testing.assert_allclose(got.numpy(force=True), want, rtol=1e-4, atol=1e-4)


def test_randn_complex_parts_are_independent_normals_of_variance_one_half(dev):
    ember.manual_seed(3)
    z = ember.randn(40000, dtype=ember.complex64, device=dev)
    ember.manual_seed(3)
    z2 = ember.randn(40000, dtype=ember.complex64, device=dev)
    np.testing.assert_array_equal(z.numpy(force=True), z2.numpy(force=True))
    v = z.numpy(force=True)
    assert abs(v.real.mean()) < 0.02 and abs(v.imag.mean()) < 0.02
    assert abs(v.real.var() - 0.5) < 0.02 and abs(v.imag.var() - 0.5) < 0.02
    assert abs(np.corrcoef(v.real, v.imag)[0, 1]) < 0.02
    r = ember.rand(1000, dtype=ember.complex128, device=dev).numpy(force=True)
    assert r.real.min() >= 0 and r.real.max() < 1 and r.imag.min() >= 0 and r.imag.max() < 1


def test_real_only_fast_paths_hand_complex_tensors_to_the_decomposition(dev):
    z = _z((2, 3, 6, 6), seed=15).astype(np.complex64)
    x = ember.tensor(z, device=dev)
    # unfold is linear: the complex result is the real kernels' results on the two parts
    re, im = (F.unfold(p.contiguous(), 2).numpy(force=True) for p in (x.real, x.imag))
    parts = re + 1j * im
    np.testing.assert_allclose(F.unfold(x, 2).numpy(force=True), parts, rtol=1e-5, atol=1e-6)
    # batch norm's decomposition: (x - mean) / sqrt(mean((x - mean)^2) + eps) per channel
    d = z - z.mean((0, 2, 3), keepdims=True)
    ref = d / np.sqrt((d * d).mean((0, 2, 3), keepdims=True) + 1e-5)
    got = F.batch_norm(x, None, None, training=True).numpy(force=True)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_gradients_flow_through_complex_kernels(dev):
    a = np.array([1 + 2j, 3 - 1j])
    z = ember.tensor(a, device=dev, requires_grad=True)
    (z * z).abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(force=True), [2 + 4j, 6 - 2j], rtol=1e-6)
    w = ember.tensor(a, dtype=ember.complex128, device=dev, requires_grad=True)
    (w.exp() * w.conj()).sum().abs().backward()
    # for a real loss the gradient is dL/dRe + i dL/dIm: central differences in numpy
    def loss(v):
        return abs((np.exp(v) * np.conj(v)).sum())
    h, ref = 1e-6, []
    for k in range(len(a)):
        e = np.zeros(len(a), complex)
        e[k] = h
        ref.append((loss(a + e) - loss(a - e)) / (2 * h) + 1j * (loss(a + 1j * e) - loss(a - 1j * e)) / (2 * h))
    np.testing.assert_allclose(w.grad.numpy(force=True), ref, rtol=1e-7)
