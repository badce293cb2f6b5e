"""nn.functional values, dtypes and refusals as PyTorch 2.13 gives them (issue 20): inf/NaN
through pooling and activations, float16/bfloat16 computed in float32, integer inputs keeping
their dtype or refused, and empty inputs (a 0 batch, 0 channels) answered instead of a raw numpy
error. Expected values were read off PyTorch; tests/torch_oracle/test_nn_values_oracle.py
compares the same cases side by side."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

INF, NAN = math.inf, math.nan


def _np(t):
    return t.detach().float().numpy() if t.dtype == ember.bfloat16 else t.detach().numpy()


def _eq(t, expected, dtype=None):
    if dtype is not None:
        assert t.dtype == dtype
    np.testing.assert_array_equal(_np(t), np.asarray(expected, dtype=_np(t).dtype))


# -- adaptive pooling keeps inf / NaN in their own windows ------------------------------------------

@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_adaptive_avg_pool_upsampling_keeps_inf_in_its_windows(nsp):
    row = [1.0, INF, 2.0, 3.0]
    x = ember.tensor(row).reshape((1, 1) + (1,) * (nsp - 1) + (4,))
    f = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[nsp - 1]
    y = f(x, (1,) * (nsp - 1) + (7,))
    _eq(y.reshape(-1), [1.0, INF, INF, INF, 2.0, 2.5, 3.0])


def test_adaptive_avg_pool_nan_and_gradient():
    x = ember.tensor([[[1.0, NAN, 2.0, 3.0, 4.0]]])
    _eq(F.adaptive_avg_pool1d(x, 3), [[[NAN, NAN, 3.5]]])
    x = ember.arange(15.0).reshape(1, 1, 5, 3).requires_grad_()
    F.adaptive_avg_pool2d(x, (3, 7)).sum().backward()
    # windows of rows [0,2) [1,4) [3,5) and of columns [0,1) [0,1) [0,2) [1,2) [1,3) [2,3) [2,3)
    rows = np.array([1 / 2, 1 / 2 + 1 / 3, 1 / 3, 1 / 3 + 1 / 2, 1 / 2])
    cols = np.array([1 + 1 + 1 / 2, 1 / 2 + 1 + 1 / 2, 1 / 2 + 1 + 1])
    np.testing.assert_allclose(x.grad.numpy()[0, 0], np.outer(rows, cols), rtol=1e-6)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_adaptive_max_pool_upsampling_nan(nsp):
    x = ember.tensor([1.0, NAN, 2.0, 3.0]).reshape((1, 1) + (1,) * (nsp - 1) + (4,))
    f = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[nsp - 1]
    _eq(f(x, (1,) * (nsp - 1) + (7,)).reshape(-1), [1.0, NAN, NAN, NAN, 2.0, 3.0, 3.0])


def test_adaptive_pool_empty_output_and_batch():
    x = ember.ones(2, 3, 4, 4, requires_grad=True)
    y = F.adaptive_avg_pool2d(x, (0, 3))
    assert y.shape == (2, 3, 0, 3)
    v, i = F.adaptive_max_pool2d(x, 0, return_indices=True)
    assert v.shape == i.shape == (2, 3, 0, 0) and i.dtype == ember.int64
    y.sum().backward()
    _eq(x.grad, np.zeros((2, 3, 4, 4)))
    assert F.adaptive_max_pool2d(ember.ones(0, 3, 6, 6), 4).shape == (0, 3, 4, 4)
    assert F.adaptive_avg_pool2d(ember.ones(2, 0, 6, 6), 3).shape == (2, 0, 3, 3)
    for f in (F.adaptive_max_pool2d, F.adaptive_avg_pool3d):
        shape = (2, 0, 6, 6) if f is F.adaptive_max_pool2d else (2, 0, 6, 6, 6)
        with pytest.raises(RuntimeError, match="non-zero size"):
            f(ember.ones(shape), 3)
    with pytest.raises(NotImplementedError):
        F.adaptive_avg_pool2d(ember.ones(1, 1, 4, 4, dtype=ember.int64), 2)


# -- dtypes of the clamping activations ---------------------------------------------------------------

@pytest.mark.parametrize("f", [F.hardtanh, F.relu6, F.hardsigmoid, F.hardswish])
@pytest.mark.parametrize("dt", [ember.bfloat16, ember.float16])
def test_reduced_float_activations_keep_dtype(f, dt):
    assert f(ember.tensor([-1.0, 2.0, 7.0]).to(dt)).dtype == dt


def test_bfloat16_clamp_and_hard_activations_values():
    x = ember.tensor([-1.0, 2.0, 7.0]).bfloat16()
    assert ember.clamp(x, 0.0, 6.0).dtype == ember.bfloat16
    _eq(F.hardsigmoid(x), [0.333984375, 0.83203125, 1.0], ember.bfloat16)
    _eq(F.hardswish(x), [-0.333984375, 1.6640625, 7.0], ember.bfloat16)


@pytest.mark.parametrize("dt", [ember.int8, ember.int16, ember.int32, ember.int64])
def test_integer_hardtanh_relu6_threshold_keep_dtype(dt):
    x = ember.tensor([-3, -1, 0, 1, 2, 5, 7]).to(dt)
    _eq(F.relu6(x), [0, 0, 0, 1, 2, 5, 6], dt)
    _eq(F.hardtanh(x, -1.5, 1.5), [-1, -1, 0, 1, 1, 1, 1], dt)  # bounds truncated toward 0
    _eq(F.threshold(x, 1.5, 0.7), [0, 0, 0, 0, 2, 5, 7], dt)
    _eq(F.threshold(x, -1.5, 9), [9, 9, 0, 1, 2, 5, 7], dt)  # threshold -1: x <= -1 -> 9


def test_integer_activation_refusals():
    u8 = ember.tensor([1, 0, 7]).to(ember.uint8)
    _eq(F.relu6(u8), [1, 0, 6], ember.uint8)
    with pytest.raises(RuntimeError, match="unsigned type with negative limits"):
        F.hardtanh(u8)
    with pytest.raises(RuntimeError, match="without overflow"):
        F.hardtanh(ember.tensor([1]).to(ember.int8), -300, 300)
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        F.relu6(ember.tensor([True]))
    with pytest.raises(NotImplementedError):
        F.threshold(ember.tensor([True]), 0, 1)
    i64 = ember.tensor([1, -2])
    for f in (F.hardsigmoid, F.hardswish, F.elu, F.selu, F.celu, F.gelu, F.silu, F.mish, F.softplus, F.logsigmoid,
              F.hardshrink, F.softshrink, F.leaky_relu, F.rrelu, F.glu):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            f(i64)
    with pytest.raises(NotImplementedError):
        F.prelu(i64, ember.tensor([0.25]))
    # PyTorch's softsign is a python composite: x / (|x| + 1) in the integer dtype, then divided
    _eq(F.softsign(ember.tensor([1, 2, 255]).to(ember.uint8)), [0.5, 2 / 3, INF])


# -- float16 computed in float32 -----------------------------------------------------------------------

def test_float16_activations_do_not_overflow():
    x = ember.tensor([60000.0, 100.0, -30000.0]).half()
    for f in (F.gelu, F.hardswish, F.silu, F.mish, F.softplus, F.elu, F.celu):
        y = f(x)
        assert y.dtype == ember.float16
        assert _np(y)[0] == 60000.0, f
    _eq(F.gelu(x, approximate="tanh"), [60000.0, 100.0, -0.0], ember.float16)


def test_float16_norms_and_distances_do_not_overflow():
    a = ember.full((1, 3), 300.0).half()
    assert float(ember.norm(a)) == 519.5
    assert float(ember.norm(a, 3)) == 432.75
    np.testing.assert_allclose(_np(F.cosine_similarity(a, a * 0.5)), [1.0], atol=2e-3)
    np.testing.assert_allclose(_np(F.pairwise_distance(a, a * 0.5)), [259.75], rtol=1e-3)
    np.testing.assert_allclose(_np(F.normalize(a)), np.full((1, 3), 0.57735), rtol=1e-3)
    np.testing.assert_allclose(_np(F.pdist(ember.cat([a, a * 0.5]))), [259.75], rtol=1e-3)


def test_rms_norm_float16_in_float32_with_float32_eps():
    _eq(F.rms_norm(ember.full((2, 4), 300.0).half(), (4,), ember.full((4,), 3.0).half()), np.full((2, 4), 3.0))
    y = F.rms_norm(ember.full((2, 4), 1e-3).half(), (4,))  # eps = float32's, not float16's
    assert y.dtype == ember.float16
    np.testing.assert_allclose(_np(y), np.full((2, 4), 0.9453), rtol=1e-3)


# -- NaN passes through the shrinks and threshold -------------------------------------------------------

def test_shrink_threshold_propagate_nan():
    x = ember.tensor([NAN, 0.2, -0.2, -3.0, INF])
    _eq(F.hardshrink(x), [NAN, 0.0, 0.0, -3.0, INF])
    y = F.softshrink(x)
    _eq(y, [NAN, 0.0, -0.0, -2.5, INF])
    assert np.signbit(_np(y)[2])  # x * 0 in the middle, as PyTorch
    _eq(F.threshold(x, 0.5, 9.0), [NAN, 9.0, 9.0, 9.0, INF])
    _eq(F.threshold(x.clone(), 0.5, 9.0, inplace=True), [NAN, 9.0, 9.0, 9.0, INF])


# -- interpolate ------------------------------------------------------------------------------------

def _interp_row(nsp, L, mode, **kw):
    x = ember.arange(float(L)).reshape((1, 1) + (1,) * (nsp - 1) + (L,)).expand((1, 1) + (L,) * nsp).contiguous()
    y = F.interpolate(x, mode=mode, **kw)
    return _np(y).reshape(-1, y.shape[-1])[0].tolist()


@pytest.mark.parametrize("nsp,L,sf,expected", [
    (1, 3, 1.3, [0, 0, 1]), (3, 3, 1.3, [0, 0, 1]), (2, 3, 1.3, [0, 1, 2]),  # 2-d: same size is a copy
    (1, 3, 2.1, [0, 0, 0, 1, 1, 2]), (3, 3, 2.1, [0, 0, 0, 1, 1, 2]), (2, 3, 2.1, [0, 0, 1, 1, 2, 2]),  # 2-d: o >> 1
    (2, 5, 1.7, [0, 0, 1, 1, 2, 2, 3, 4]), (2, 7, 1.7, [0, 0, 1, 1, 2, 2, 3, 4, 4, 5, 5]),
])
def test_interpolate_nearest_source_rows(nsp, L, sf, expected):
    assert _interp_row(nsp, L, "nearest", scale_factor=sf) == expected


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_interpolate_nearest_exact_and_sizes(nsp):
    assert _interp_row(nsp, 3, "nearest-exact", scale_factor=1.3) == [0, 1, 1]
    assert _interp_row(nsp, 7, "nearest-exact", scale_factor=1.7) == [0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 6]
    assert _interp_row(nsp, 5, "nearest", size=8) == [0, 0, 1, 1, 2, 3, 3, 4]
    assert _interp_row(nsp, 7, "nearest-exact", size=3) == [1, 3, 5]


def test_interpolate_linear_keeps_unchanged_dims_and_inf():
    x = ember.arange(15.0).reshape(1, 1, 3, 5)
    y = F.interpolate(x, scale_factor=1.3, mode="bilinear")
    np.testing.assert_allclose(_np(y)[0, 0, :, 0], [0.0, 5.0, 10.0])  # H: 3 -> 3 is a copy
    np.testing.assert_allclose(_np(y)[0, 0, 0], [0.0, 0.6538, 1.4231, 2.1923, 2.9615, 3.7308], atol=1e-4)
    assert _interp_row(1, 3, "linear", scale_factor=1.3) == [0.0, 1.0, 2.0]
    z = F.interpolate(ember.tensor([[[-INF, 1.0, 2.0]]]), size=5, mode="linear")
    assert _np(z)[0, 0, 0] == -INF  # weights (1, 0): no inf - inf


def test_interpolate_empty_and_bad_sizes():
    x = ember.ones(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match=r"greater than 0, but got input \(H: 4, W: 4\) output \(H: 0, W: 3\)"):
        F.interpolate(x, size=(0, 3))
    with pytest.raises(RuntimeError, match=r"input \(W: 4\) and output \(W: 0\)"):
        F.interpolate(ember.ones(1, 1, 4), size=0)
    with pytest.raises(RuntimeError, match="greater than 0"):
        F.interpolate(x, scale_factor=0.1, mode="bilinear")
    with pytest.raises(RuntimeError, match="Non-empty 4D data tensor expected"):
        F.interpolate(ember.ones(1, 0, 4, 4), size=3)
    assert F.interpolate(ember.ones(0, 1, 4, 4), size=3).shape == (0, 1, 3, 3)
    assert F.interpolate(x, size=(0, 3), mode="area").shape == (1, 1, 0, 3)
    assert F.interpolate(x, scale_factor=0.1, mode="area").shape == (1, 1, 0, 0)
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    with pytest.raises(TypeError, match="expected size to be one of int"):
        F.interpolate(x, size=(2.5, 3))


def test_interpolate_reduced_float_keeps_dtype():
    for dt in (ember.float16, ember.bfloat16):
        for mode in ("nearest", "bilinear", "bicubic", "area", "nearest-exact"):
            assert F.interpolate(ember.ones(1, 1, 4, 4, dtype=dt), size=3, mode=mode).dtype == dt


# -- empty inputs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family_on_empty(shape, dim):
    x = ember.zeros(shape, requires_grad=True)
    ys = [F.softmax(x, dim), F.log_softmax(x, dim), F.softmin(x, dim)]
    assert all(y.shape == shape for y in ys)
    sum(y.sum() for y in ys).backward()
    assert x.grad.shape == shape


def test_glu_empty():
    assert F.glu(ember.zeros(0, 4)).shape == (0, 2)
    assert F.glu(ember.zeros(4, 0)).shape == (4, 0)


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_batch_zero_forward_backward(nsp, transposed, bias):
    x = ember.zeros((0, 4) + (5,) * nsp, requires_grad=True)
    w = ember.randn(((4, 3) if transposed else (3, 4)) + (2,) * nsp, requires_grad=True)
    b = ember.randn(3, requires_grad=True) if bias else None
    f = getattr(F, f"conv_transpose{nsp}d" if transposed else f"conv{nsp}d")
    y = f(x, w, b)
    assert y.shape == (0, 3) + ((6 if transposed else 4),) * nsp
    y.sum().backward()
    assert x.grad.shape == x.shape
    _eq(w.grad, np.zeros(w.shape))
    if bias:
        _eq(b.grad, np.zeros(3))
    gs = ember.autograd.grad(f(x, w, b).sum(), [x, w], create_graph=True)  # the double-backward path
    assert gs[1].shape == w.shape


def test_conv_channel_edge_cases():
    # PyTorch answers an input without channels with an empty (N, 0, *out) result
    assert F.conv2d(ember.zeros(2, 0, 5, 5), ember.zeros(3, 0, 2, 2), ember.ones(3)).shape == (2, 0, 4, 4)
    with pytest.raises(RuntimeError, match="expected weight to be at least 1 at dimension 0"):
        F.conv2d(ember.zeros(2, 4, 5, 5), ember.zeros(0, 4, 2, 2))
    with pytest.raises(RuntimeError, match="expected weight to be at least 1 at dimension 0"):
        F.conv_transpose2d(ember.zeros(2, 0, 5, 5), ember.zeros(0, 3, 2, 2))


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_pooling_batch_zero_and_empty_dims(nsp):
    sp = (6,) * nsp
    x = ember.zeros((0, 3) + sp, requires_grad=True)
    for name, args in (("max_pool", (2,)), ("avg_pool", (2,)), ("lp_pool", (2.0, 2))):
        f = getattr(F, f"{name}{nsp}d")
        assert f(x, *args).shape == (0, 3) + (3,) * nsp
        for shape in ((2, 0) + sp, (2, 3) + (0,) * nsp):
            with pytest.raises(RuntimeError):
                f(ember.zeros(shape), *args)
    y, i = getattr(F, f"max_pool{nsp}d")(x, 2, return_indices=True)
    y.sum().backward()
    assert x.grad.shape == x.shape and i.dtype == ember.int64


def test_max_pool_bfloat16_with_indices():
    x = ember.arange(16.0).reshape(1, 1, 4, 4).bfloat16().requires_grad_()
    y, i = F.max_pool2d(x, 2, return_indices=True)
    _eq(y, [[[[5.0, 7.0], [13.0, 15.0]]]], ember.bfloat16)
    _eq(i, [[[[5, 7], [13, 15]]]], ember.int64)
    y.sum().backward()
    assert x.grad.dtype == ember.bfloat16 and float(x.grad.float().sum()) == 4.0


def test_norms_on_empty_batch():
    x = ember.zeros(0, 4, 5, requires_grad=True)
    w, b = ember.ones(4, requires_grad=True), ember.zeros(4, requires_grad=True)
    rm, rv = ember.zeros(4), ember.ones(4)
    y = F.batch_norm(x, rm, rv, w, b, training=True)  # allowed: an empty result, running stats untouched
    assert y.shape == (0, 4, 5)
    y.sum().backward()
    _eq(w.grad, np.zeros(4))
    _eq(rm, np.zeros(4))
    _eq(rv, np.ones(4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(ember.zeros(1, 4), None, None, training=True)
    assert F.group_norm(ember.zeros(0, 4, 5), 2).shape == (0, 4, 5)


def test_affine_grid_empty_size_refused():
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(ember.zeros(0, 2, 3), (0, 3, 4, 5), align_corners=False)
