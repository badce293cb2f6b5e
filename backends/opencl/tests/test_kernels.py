"""Kernel behaviour the conformance suite does not pin down: integer division by zero, bounds
checks through the error flag, casts, 16-bit floats, the scan/sort/reduction/GEMM variants at
sizes that select them, strided and aliased writes, and the Philox generator."""
import numpy as np
import pytest

import ember

rng = np.random.default_rng(0)


def t(a, dev, dtype=None):
    return ember.tensor(a, device=dev, dtype=dtype)


def host(x):
    return x.numpy(force=True)


# -- integer arithmetic ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.int32, ember.int64, ember.int8])
def test_integer_division_by_zero_raises(dev, dtype):
    a = t([7, -7, 5], dev, dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.div(a, t([1, 0, 2], dev, dtype), rounding_mode="trunc").tolist()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.fmod(a, 0).tolist()
    # the flag was cleared: the next division works
    assert ember.div(a, 2, rounding_mode="trunc").tolist() == [3, -3, 2]


def test_int_min_divided_by_minus_one_wraps_instead_of_trapping(dev):
    for dt, lo in ((ember.int32, -2 ** 31), (ember.int64, -2 ** 63)):
        a = t([lo, 9], dev, dt)
        assert ember.div(a, -1, rounding_mode="trunc").tolist() == [lo, -9]
        assert ember.fmod(a, -1).tolist() == [0, 0]


def test_float_to_int_casts_truncate_and_never_misbehave(dev):
    x = t([1.9, -1.9, 300.7, -1.5, float("nan")], dev)
    assert x.to(ember.int64).tolist() == [1, -1, 300, -1, 0]
    assert x.to(ember.uint8).tolist()[:4] == [1, 255, 44, 255]  # through int64, then wrapped (as PyTorch)
    big = t([1e30, -1e30], dev).to(ember.int64).tolist()
    assert big == [2 ** 63 - 1, -2 ** 63]  # saturated
    assert t([0.0, -0.0, 2.5], dev).to(ember.bool).tolist() == [False, False, True]


# -- bounds checks -----------------------------------------------------------------------------

def test_gather_out_of_bounds_raises_index_error(backend, dev):
    x = t(np.arange(12.0).reshape(3, 4), dev)
    with pytest.raises(IndexError, match=r"gather: index 4 is out of bounds for dimension 1 with size 4"):
        ember.gather(x, 1, t([[0, 4]], dev)).tolist()
    with pytest.raises(IndexError, match="index -1"):
        backend.kernels["gather"](x, 1, t([[0], [-1], [1]], dev))
    assert ember.gather(x, 1, t([[3, 0]], dev)).tolist() == [[3.0, 0.0]]


def test_scatter_add_out_of_bounds_raises_and_leaves_the_input_alone(dev):
    x = t(np.zeros((2, 3), np.float32), dev)
    with pytest.raises(IndexError, match="scatter_add: index 7 is out of bounds for dimension 0 with size 2"):
        ember.scatter_add(x, 0, t([[0, 7, 1]], dev), t([[1.0, 2.0, 3.0]], dev))
    assert x.tolist() == [[0.0] * 3] * 2
    r = ember.scatter_add(x, 0, t([[0, 1, 1], [0, 0, 1]], dev), t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dev))
    assert r.tolist() == [[5.0, 5.0, 0.0], [0.0, 2.0, 9.0]]


def test_large_scatter_add_uses_atomics_and_sums_exactly(dev):
    n = 50000
    idx = rng.integers(0, 7, n)
    src = np.ones(n, np.float32)
    r = ember.scatter_add(t(np.zeros(7, np.float32), dev), 0, t(idx, dev), t(src, dev))
    assert host(r).tolist() == np.bincount(idx, minlength=7).astype(np.float32).tolist()
    ri = ember.scatter_add(t(np.zeros(7, np.int64), dev), 0, t(idx, dev), t(np.ones(n, np.int64), dev))
    assert host(ri).tolist() == np.bincount(idx, minlength=7).tolist()


def test_index_select_out_of_bounds_raises(backend, dev):
    x = t(np.arange(6.0).reshape(2, 3), dev)
    with pytest.raises(IndexError, match="index_select: index 3 is out of bounds for dimension 1 with size 3"):
        backend.kernels["index_select"](x, 1, t([0, 3], dev)).tolist()
    assert ember.index_select(x, 1, t([2, 0], dev)).tolist() == [[2.0, 0.0], [5.0, 3.0]]


# -- 16-bit floats -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_sixteen_bit_floats_are_stored_and_rounded_like_numpy(dev, dtype):
    vals = np.array([1.0, 1.00390625, -2.5, 65504.0 if dtype is ember.float16 else 3.0e38, 1e-3], np.float64)
    d = t(vals.astype(np.float32), dev).to(dtype)
    ref = vals.astype(np.float32).astype(dtype.np)
    assert host(d).astype(np.float64).tolist() == ref.astype(np.float64).tolist()
    s = (d[[0, 1, 2, 4]] * 2).sum()
    assert s.dtype is dtype
    np.testing.assert_allclose(float(s.item()), float((ref[[0, 1, 2, 4]].astype(np.float32) * 2).sum()), rtol=1e-2)


# -- reductions, scans, sort at the sizes that select each variant ------------------------------

def test_reduction_variants_agree_with_numpy(dev):
    for shape, dims in [((1 << 18,), (0,)), ((3, 100000), (1,)), ((100000, 3), (0,)), ((5, 6, 7, 8), (0, 2)),
                        ((2000, 20), (1,))]:
        a = rng.standard_normal(shape).astype(np.float32)
        x = t(a, dev)
        np.testing.assert_allclose(host(x.sum(dims)), a.astype(np.float64).sum(dims), rtol=1e-3, atol=1e-2)
        np.testing.assert_array_equal(host(x.amax(dims)), a.max(dims))
        np.testing.assert_array_equal(host(x.amin(dims)), a.min(dims))
    a = rng.standard_normal((4, 50000)).astype(np.float32)
    a[2, 777] = np.nan
    m = host(t(a, dev).amax(1))
    assert np.isnan(m[2]) and m[0] == a[0].max()


def test_argmax_picks_the_first_of_ties_and_nan(dev):
    a = np.zeros(70000, np.float32)
    a[[5, 40000, 60000]] = 3.0
    assert t(a, dev).argmax().item() == 5
    a[50000] = np.nan
    assert t(a, dev).argmax().item() == 50000 and t(a, dev).argmin().item() == 50000
    b = np.tile(np.array([1, 9, 9, 2], np.int64), (3, 1))
    assert t(b, dev).argmax(1).tolist() == [1, 1, 1]


@pytest.mark.parametrize("shape,dim", [((3, 5000), 1), ((5000, 3), 0), ((1, 200000), 1), ((7,), 0)])
def test_cumsum_rows_long_and_short(dev, shape, dim):
    a = rng.integers(-5, 5, shape).astype(np.int64)
    assert host(t(a, dev).cumsum(dim)).tolist() == np.cumsum(a, dim).tolist()
    f = rng.standard_normal(shape).astype(np.float64)
    np.testing.assert_allclose(host(t(f, dev).cumsum(dim)), np.cumsum(f, dim), rtol=1e-9, atol=1e-9)


def test_sort_is_stable_with_nan_last_ascending_and_first_descending(dev):
    a = np.array([3.0, np.nan, 1.0, 3.0, -np.inf, 1.0, np.nan, 2.0] * 3, np.float32)
    v, i = ember.sort(t(a, dev), 0)
    np.testing.assert_array_equal(host(i), np.argsort(a, kind="stable"))
    v, i = ember.sort(t(a, dev), 0, descending=True)
    order = np.lexsort((np.arange(a.size), np.where(np.isnan(a), -np.inf, -a)))
    np.testing.assert_array_equal(host(i), order)


def test_sort_of_many_rows_and_one_long_row(dev):
    a = rng.standard_normal((50, 37)).astype(np.float32)
    v, i = ember.sort(t(a, dev).t(), 1)
    np.testing.assert_array_equal(host(v), np.sort(a.T, 1))
    b = rng.integers(0, 1000, 20000)
    v, i = ember.sort(t(b, dev), 0)
    assert host(v).tolist() == np.sort(b).tolist()
    assert host(i).tolist() == np.argsort(b, kind="stable").tolist()


def test_nonzero_of_every_rank(dev):
    for a in [np.array(3.0), np.array(0.0), np.zeros((0, 3)), rng.integers(0, 2, (3, 4, 5)), rng.integers(0, 2, 1000)]:
        r = ember.nonzero(t(a, dev))
        assert host(r).tolist() == np.argwhere(a).tolist()


# -- GEMM variants -------------------------------------------------------------------------------

@pytest.mark.parametrize("M,K,N", [(6, 25, 784), (1, 300, 1), (17, 33, 9), (100, 64, 130), (3, 1, 5)])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_layouts_and_ragged_tiles(dev, M, K, N, ta, tb):
    a = rng.standard_normal((K, M) if ta else (M, K)).astype(np.float32)
    b = rng.standard_normal((N, K) if tb else (K, N)).astype(np.float32)
    ea, eb = t(a, dev), t(b, dev)
    if ta:
        ea, a = ea.t(), a.T
    if tb:
        eb, b = eb.t(), b.T
    np.testing.assert_allclose(host(ea @ eb), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_matmul_batch_broadcast_integers_and_half(dev):
    a = rng.standard_normal((3, 1, 5, 7)).astype(np.float64)
    b = rng.standard_normal((4, 7, 6)).astype(np.float64)
    np.testing.assert_allclose(host(t(a, dev) @ t(b, dev)), a @ b, rtol=1e-12)
    ia, ib = rng.integers(-4, 4, (5, 6)), rng.integers(-4, 4, (6, 3))
    assert host(t(ia, dev) @ t(ib, dev)).tolist() == (ia @ ib).tolist()
    h = t(a[0, 0].astype(np.float32), dev).half() @ t(b[0].astype(np.float32), dev).half()
    np.testing.assert_allclose(host(h).astype(np.float64), a[0, 0] @ b[0], rtol=2e-2, atol=2e-2)


# -- strided and aliased elementwise ----------------------------------------------------------------

def test_high_rank_strided_broadcast(dev):
    a = rng.standard_normal((2, 3, 1, 4, 5, 2)).astype(np.float32)
    b = rng.standard_normal((3, 6, 1, 5, 1)).astype(np.float32)
    x = t(a, dev).permute(5, 4, 3, 2, 1, 0).permute(5, 4, 3, 2, 1, 0)  # same values, through views
    np.testing.assert_allclose(host(x * t(b, dev) + 1), a * b + 1, rtol=1e-6)
    z = t(np.zeros((0, 3), np.float32), dev)
    assert (z + 1).shape == (0, 3)


def test_in_place_with_an_overlapping_source_goes_through_a_temporary(dev):
    x = t(np.arange(6.0), dev)
    x[1:].add_(x[:-1])
    assert x.tolist() == [0.0, 1.0, 3.0, 5.0, 7.0, 9.0]
    y = t(np.arange(6.0).reshape(2, 3), dev)
    y.add_(y[0])
    assert y.tolist() == [[0.0, 2.0, 4.0], [3.0, 5.0, 7.0]]


# -- random ----------------------------------------------------------------------------------------

def test_philox_streams_are_reproducible_and_ranged(dev):
    g = ember.Generator(dev).manual_seed(11)
    a = ember.rand(10001, device=dev, generator=g)
    b = ember.rand(10001, device=dev, generator=g)
    g.manual_seed(11)
    a2 = ember.rand(10001, device=dev, generator=g)
    assert host(a).tolist() == host(a2).tolist() and host(a).tolist() != host(b).tolist()
    u = host(ember.empty(50000, device=dev, dtype=ember.float64).uniform_(-2.0, -1.0, generator=g))
    assert u.min() >= -2.0 and u.max() < -1.0 and abs(u.mean() + 1.5) < 0.01
    n = host(ember.empty(200000, device=dev).normal_(3.0, 0.5, generator=g))
    assert abs(n.mean() - 3.0) < 0.01 and abs(n.std() - 0.5) < 0.01
    st = g.get_state()
    c = host(ember.randn(33, device=dev, generator=g))
    g.set_state(st)
    assert host(ember.randn(33, device=dev, generator=g)).tolist() == c.tolist()
    with pytest.raises(RuntimeError, match="20 bytes"):
        g.set_state(ember.zeros(7, dtype=ember.uint8, device=dev))


def test_philox_generator_follows_the_backend_generator_protocol(backend, dev):
    import struct

    from ember.backend import BackendGenerator
    g = backend.create_generator(dev)
    assert isinstance(g, BackendGenerator)
    g.manual_seed(-1)  # masked to 64 bits
    assert g.initial_seed() == 2 ** 64 - 1
    g.next_call()
    g.next_call()
    assert bytes(g.get_state()) == b"EPX1" + struct.pack("<QQ", 2 ** 64 - 1, 2)  # tag, seed, calls
    s = g.seed()
    assert 0 <= s < 2 ** 63 and g.initial_seed() == s and bytes(g.get_state())[12:] == bytes(8)  # reseeding resets
    g.set_state(np.frombuffer(b"EPX1" + struct.pack("<QQ", 7, 9), np.uint8))
    assert g.initial_seed() == 7 and g.calls == 9


def test_random_fill_of_a_strided_view(dev):
    x = ember.zeros(4, 6, device=dev)
    x[:, ::2].uniform_(5.0, 6.0)
    h = host(x)
    assert (h[:, 1::2] == 0).all() and (h[:, ::2] >= 5).all() and (h[:, ::2] < 6).all()


@pytest.mark.parametrize("n", [1, 15, 16, 17, 100003])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_layout_and_its_tail(dev, n, dtype):
    a = (rng.standard_normal(n) * 2).astype(dtype)
    b = (np.abs(rng.standard_normal(n)) + 0.5).astype(dtype)
    x, y = t(a, dev), t(b, dev)
    tol = dict(rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(host(x.exp()), np.exp(a), **tol)
    np.testing.assert_allclose(host(ember.log(y)), np.log(b), **tol)
    np.testing.assert_allclose(host(x * y + 2.5), a * b + 2.5, **tol)
    np.testing.assert_allclose(host(ember.pow(y, 1.5)), b ** 1.5, **tol)
    np.testing.assert_allclose(host(ember.maximum(x, y - 1)), np.maximum(a, b - 1), **tol)
    np.testing.assert_allclose(host(x.relu()), np.maximum(a, 0), **tol)
    assert host(x > y - 1).tolist() == (a > b - 1).tolist()
    assert host(x <= 0.25).tolist() == (a <= 0.25).tolist()
    nan = a.copy()
    nan[n // 2] = np.nan
    r = host(ember.maximum(t(nan, dev), y))
    assert np.isnan(r[n // 2]) and host(t(nan, dev).relu())[n // 2] != host(t(nan, dev).relu())[n // 2]


def test_more_dims_than_the_argument_struct_holds_go_through_compact_copies(dev, cd, monkeypatch):
    a = rng.standard_normal((2, 3, 2, 3, 2, 3)).astype(np.float32)
    x = t(a, dev).permute(5, 3, 1, 4, 2, 0)  # no dims collapse
    monkeypatch.setattr(cd, "max_param", 200)  # as if the device took 25 longs of arguments
    r = x * x.exp()
    np.testing.assert_allclose(host(r), a.transpose(5, 3, 1, 4, 2, 0) * np.exp(a.transpose(5, 3, 1, 4, 2, 0)),
                               rtol=1e-5)


def test_float32_tanh_is_within_five_ulp_with_exact_limits(dev):
    a = np.concatenate([np.linspace(-12, 12, 200001), np.linspace(-0.3, 0.3, 20001)]).astype(np.float32)
    for arr in (a, a[:20011]):  # the vector layout, and its element-wise tail
        r = host(t(arr, dev).tanh())
        e = np.tanh(arr.astype(np.float64))
        ok = e != 0
        assert (np.abs(r[ok] - e[ok]) / np.spacing(np.abs(e[ok]).astype(np.float32))).max() <= 5
    s = host(t(np.array([np.inf, -np.inf, np.nan, 0.0, -0.0] * 4, np.float32), dev).tanh())
    assert s[:2].tolist() == [1.0, -1.0] and np.isnan(s[2]) and s[3] == 0 and np.signbit(s[4])


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.2, maximize=True)),
    ("SGD", dict(lr=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
])
def test_fused_optimizer_kernels_follow_the_decomposition(dev, name, kw):
    w0 = rng.standard_normal((7, 5)).astype(np.float32)
    runs = []
    for fused in (True, False):
        p = ember.nn.Parameter(t(w0, dev))
        q = ember.nn.Parameter(t(w0, dev).t())  # a non-contiguous parameter takes the decomposition
        opt = getattr(ember.optim, name)([p, q], fused=fused, **kw) if fused else \
            getattr(ember.optim, name)([p, q], foreach=False, **kw)
        for _ in range(4):
            opt.zero_grad()
            ((p * p).sum() + (q.exp()).sum()).backward()
            opt.step()
        runs.append((host(p.detach()), host(q.detach())))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-5, atol=1e-6)
