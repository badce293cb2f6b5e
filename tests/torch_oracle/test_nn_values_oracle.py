"""nn.functional against PyTorch side by side (issue 20): inf/NaN inputs, float16/bfloat16 and
integer dtypes, empty inputs and interpolate's source positions. Each case runs the same call in
both and compares the dtype, shape and values, or the exception type."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

DT = {"f32": (ember.float32, torch.float32), "f16": (ember.float16, torch.float16),
      "bf16": (ember.bfloat16, torch.bfloat16), "i64": (ember.int64, torch.int64), "i8": (ember.int8, torch.int8),
      "u8": (ember.uint8, torch.uint8)}
TOL = {"f32": 1e-4, "f16": 2e-3, "bf16": 1.6e-2, "i64": 0, "i8": 0, "u8": 0}


def _arr(shape, special=False, scale=3.0, seed=0):
    a = (np.random.RandomState(seed).randn(*shape) * scale).astype(np.float32)
    if special and a.size >= 3:
        a.flat[0], a.flat[1], a.flat[2] = math.nan, math.inf, -math.inf
    return a


def _both(fn, arrays, kwargs, dt):
    e = t = None
    try:
        e = getattr(EF, fn)(*[ember.tensor(a).to(DT[dt][0]) if isinstance(a, np.ndarray) else a for a in arrays],
                            **kwargs)
    except Exception as ex:  # noqa: BLE001 - compared with torch's below
        e = ex
    try:
        t = getattr(TF, fn)(*[torch.tensor(a).to(DT[dt][1]) if isinstance(a, np.ndarray) else a for a in arrays],
                            **kwargs)
    except Exception as ex:  # noqa: BLE001
        t = ex
    return e, t


def _compare(e, t, dt):
    if isinstance(t, BaseException):
        assert isinstance(e, BaseException), f"torch raised {t!r}, ember returned"
        assert type(e).__name__ == type(t).__name__ or isinstance(e, type(t)), (e, t)
        return
    assert not isinstance(e, BaseException), f"ember raised {e!r}, torch returned"
    if isinstance(t, tuple):
        for a, b in zip(e, t):
            _compare(a, b, dt)
        return
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    en = (e.float() if e.dtype == ember.bfloat16 else e).detach().numpy().astype(np.float64)
    tn = (t.float() if t.dtype == torch.bfloat16 else t).detach().numpy().astype(np.float64)
    np.testing.assert_allclose(en, tn, rtol=TOL[dt], atol=TOL[dt], equal_nan=True)


_BIG = _arr((4, 6))
_BIG.flat[5], _BIG.flat[6], _BIG.flat[7] = 60000.0, -30000.0, 300.0

ACTS = ["relu", "relu6", "elu", "selu", "celu", "silu", "mish", "hardtanh", "hardswish", "hardsigmoid", "softplus",
        "softsign", "tanhshrink", "hardshrink", "softshrink", "logsigmoid", "leaky_relu"]


@pytest.mark.parametrize("fn", ACTS + ["gelu"])
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_activation_values(fn, dt):
    special = fn != "gelu"  # PyTorch's gelu(inf) is NaN (its vectorised erf); ember keeps inf
    _compare(*_both(fn, [_arr((4, 6), special)], {}, dt), dt)
    _compare(*_both(fn, [np.zeros((0, 3), np.float32)], {}, dt), dt)
    if dt != "f32":
        _compare(*_both(fn, [_BIG], {}, dt), dt)


@pytest.mark.parametrize("fn", ACTS + ["gelu", "glu", "threshold"])
@pytest.mark.parametrize("dt", ["i64", "i8", "u8"])
def test_activation_integer_dtypes(fn, dt):
    args = [_arr((4, 6))] + ([1.5, -2.0] if fn == "threshold" else [])
    e, t = _both(fn, args, {}, dt)
    if fn == "softsign":  # float results of an integer composite: compare with float tolerance
        dt = "f32"
    _compare(e, t, dt)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_empty(fn, shape, dim):
    _compare(*_both(fn, [np.zeros(shape, np.float32)], {"dim": dim}, "f32"), "f32")


@pytest.mark.parametrize("fn,args", [("cosine_similarity", [_BIG, _arr((4, 6), seed=1)]),
                                     ("pairwise_distance", [_BIG, _arr((4, 6), seed=1)]),
                                     ("normalize", [_BIG]), ("rms_norm", [_BIG, (6,)]),
                                     ("layer_norm", [_BIG, (6,)]), ("group_norm", [_BIG.reshape(2, 4, 3), 2])])
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_reduced_float_norms_and_distances(fn, args, dt):
    _compare(*_both(fn, args, {}, dt), dt)


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("kind", ["adaptive_avg_pool", "adaptive_max_pool"])
@pytest.mark.parametrize("L,O", [(3, 7), (4, 7), (5, 3), (5, 9), (4, 0)])
def test_adaptive_pool_special_values(nsp, kind, L, O):
    x = _arr((2, 2) + (L,) * nsp)
    x.flat[3 % x.size], x.flat[-2], x.flat[x.size // 2] = math.inf, math.nan, -math.inf
    _compare(*_both(f"{kind}{nsp}d", [x, O], {}, "f32"), "f32")


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "area", "linear"])
@pytest.mark.parametrize("L", [3, 5, 7, 10])
def test_interpolate_scale_factors(nsp, mode, L):
    if mode == "linear":
        mode = ("linear", "bilinear", "trilinear")[nsp - 1]
    x = _arr((1, 2) + (L,) * nsp)
    acs = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
    for sf in [0.3, 0.5, 0.7, 1.3, 1.5, 1.7, 2.0, 2.1, 2.5, 1 / 3, 2 / 3]:
        for rsf in [None, True]:
            for ac in acs:
                kw = dict(scale_factor=sf, mode=mode, recompute_scale_factor=rsf, align_corners=ac)
                _compare(*_both("interpolate", [x], kw, "f32"), "f32")
    for size in [1, 2, 4, 6, 9, 13]:
        for ac in acs:
            _compare(*_both("interpolate", [x], dict(size=size, mode=mode, align_corners=ac), "f32"), "f32")


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_conv_and_pool_empty_batch(nsp):
    x0 = np.zeros((0, 4) + (5,) * nsp, np.float32)
    w, wt, b = _arr((3, 4) + (2,) * nsp), _arr((4, 3) + (2,) * nsp), _arr((3,))
    for dt in ("f32", "bf16"):
        _compare(*_both(f"conv{nsp}d", [x0, w, b], {}, dt), dt)
        _compare(*_both(f"conv_transpose{nsp}d", [x0, wt], {}, dt), dt)
        # (torch has no bfloat16 avg_pool3d; ember has)
        for fn in ("max_pool", "avg_pool") if nsp < 3 or dt == "f32" else ("max_pool",):
            _compare(*_both(f"{fn}{nsp}d", [x0, 2], {}, dt), dt)
            _compare(*_both(f"{fn}{nsp}d", [np.zeros((2, 0) + (5,) * nsp, np.float32), 2], {}, dt), dt)
    _compare(*_both(f"max_pool{nsp}d", [_arr((2, 3) + (6,) * nsp, True), 2], {"return_indices": True}, "bf16"), "bf16")
