"""Tier 1, runtime: allocation, host transfers, strided copy with cast, fill, random, dtypes."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close
from ember.testing.helpers import backend_for, supports

ALL = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.bfloat16,
       ember.float32, ember.float64]


def test_backend_declares_availability(device):
    be = backend_for(device)
    ok, reason = be.availability()
    assert ok is True and isinstance(reason, str)
    assert be.device_count() >= 1


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_roundtrip_host(device, dtype):
    if not supports(device, dtype):
        with pytest.raises(TypeError, match=dtype.name):
            ember.zeros(3, dtype=dtype, device=device)
        return
    host = (np.arange(12).reshape(3, 4) % 3).astype(dtype.np)
    t = ember.tensor(host, dtype=dtype, device=device)
    assert t.device == device and t.dtype is dtype and t.shape == (3, 4)
    back = t.numpy(force=True)
    assert back.dtype == dtype.np
    np.testing.assert_array_equal(back.astype(np.float64), host.astype(np.float64))


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool], ids=lambda d: d.name)
def test_fill_and_zeros(device, dtype):
    t = ember.empty(2, 3, dtype=dtype, device=device)
    t.fill_(1)
    assert t.tolist() == [[True] * 3] * 2 if dtype is ember.bool else t.tolist() == [[1] * 3] * 2
    z = ember.zeros(4, dtype=dtype, device=device)
    assert z.sum().item() == 0
    o = ember.ones((2, 2), dtype=dtype, device=device)
    assert o.to(ember.int64).sum().item() == 4


def test_full_and_arange(device):
    f = ember.full((2, 2), 3.5, device=device)
    assert f.dtype is ember.float32 and f.tolist() == [[3.5, 3.5], [3.5, 3.5]]
    a = ember.arange(0, 10, 3, device=device)
    assert a.dtype is ember.int64 and a.tolist() == [0, 3, 6, 9]
    lin = ember.linspace(0, 1, 5, device=device)
    assert_close(lin, np.linspace(0, 1, 5), rtol=1e-6)
    e = ember.eye(3, 2, device=device)
    assert e.tolist() == [[1, 0], [0, 1], [0, 0]]


def test_strided_copy_with_cast_and_broadcast(device):
    dst = ember.zeros(3, 4, dtype=ember.int32, device=device)
    src = ember.tensor([1.7, -2.2, 3.9, 4.0], device=device)
    dst[1:].copy_(src)  # broadcast over rows, float -> int truncates
    assert dst.tolist() == [[0, 0, 0, 0], [1, -2, 3, 4], [1, -2, 3, 4]]
    t = ember.arange(12, device=device).view(3, 4).t()
    c = ember.empty(4, 3, dtype=ember.float64, device=device)
    c.copy_(t)
    assert c.tolist() == np.arange(12).reshape(3, 4).T.tolist()


@pytest.mark.ember_requires(cpu=True)
def test_copy_to_and_from_cpu(device):
    x = ember.arange(6, dtype=ember.float32).view(2, 3)
    y = x.to(device)
    assert y.device == device
    z = y.to("cpu")
    assert z.tolist() == x.tolist()
    d = ember.zeros(2, 3, device=device)
    d.copy_(x)  # across devices
    assert d.cpu().tolist() == x.tolist()


def test_random_is_seeded(device):
    ember.manual_seed(123)
    a = ember.rand(100, device=device)
    ember.manual_seed(123)
    b = ember.rand(100, device=device)
    assert a.tolist() == b.tolist()
    assert 0.0 <= a.min().item() and a.max().item() < 1.0
    g = ember.Generator(device).manual_seed(7)
    n = ember.randn(2000, device=device, generator=g)
    assert abs(n.mean().item()) < 0.1 and abs(n.std().item() - 1.0) < 0.1
    r = ember.randint(3, 7, (500,), device=device)
    assert r.dtype is ember.int64 and r.min().item() >= 3 and r.max().item() <= 6
    p = ember.randperm(50, device=device)
    assert sorted(p.tolist()) == list(range(50))


def test_generator_state_roundtrip(device):
    g = ember.Generator(device).manual_seed(3)
    state = g.get_state()
    a = ember.rand(5, device=device, generator=g)
    g.set_state(state)
    b = ember.rand(5, device=device, generator=g)
    assert a.tolist() == b.tolist()


def test_unsupported_dtype_refused_at_creation(device):
    be = backend_for(device)
    for d in ALL:
        if d.name not in be.dtypes:
            with pytest.raises(TypeError):
                ember.ones(2, dtype=d, device=device)


def test_synchronize_and_item(device):
    t = ember.tensor([2.5], device=device)
    backend_for(device).synchronize(device)
    assert t.item() == 2.5
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        ember.ones(2, device=device).item()
