"""Tier 9, devices: device indices, copies between two devices of the backend (``<type>:0`` and
``<type>:1``) and to/from cpu, and mixed-device errors.

Tests that need two devices of the type under test carry ``ember_requires(devices=2)``: they are
collected only for a backend that reports at least two devices (PoCL gives two with
``POCL_DEVICES="pthread pthread"``).
"""
import numpy as np
import pytest

import ember
from ember.testing import assert_close
from ember.testing.helpers import backend_for

two = pytest.mark.ember_requires(devices=2)


def _second(device):
    return ember.device(device.type, 1)


def test_device_index_past_the_end_is_refused(device):
    n = backend_for(device).device_count()
    bad = f"{device.type}:{n}"
    with pytest.raises(RuntimeError, match=f"{device.type}:{n}"):
        ember.zeros(2, device=bad)
    with pytest.raises(RuntimeError):
        ember.ones(2, device=device).to(bad)


def test_negative_and_malformed_device_strings(device):
    with pytest.raises(RuntimeError, match="negative"):
        ember.device(device.type, -1)
    with pytest.raises(RuntimeError, match="Invalid device string"):
        ember.device(f"{device.type}:x")


def test_tensor_reports_its_device_and_storage(device):
    t = ember.arange(6, device=device).view(2, 3)
    assert t.device == device and t.untyped_storage().device == device
    assert t.get_device() == (-1 if device.type == "cpu" else device.index)


@pytest.mark.ember_requires(cpu=True, accelerator=True)
def test_mixed_cpu_and_device_tensors_are_refused(device):
    a = ember.ones(3, device=device)
    b = ember.ones(3)
    with pytest.raises(RuntimeError, match="same device") as e:
        a + b
    assert str(device) in str(e.value) and "cpu" in str(e.value)
    s = ember.tensor(2.0)  # a cpu 0-d tensor goes along, as in PyTorch
    assert (a * s).device == device and (a * s).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.ember_requires(cpu=True)
def test_to_and_from_cpu_keeps_values_and_dtype(device):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = ember.tensor(host)
    d = c.to(device)
    assert d.device == device
    back = d.t().to("cpu")  # a non-contiguous view
    assert back.device.type == "cpu" and back.tolist() == host.T.tolist()
    i = d.to("cpu", dtype=ember.int32)
    assert i.dtype is ember.int32 and i.tolist() == host.astype(np.int32).tolist()


@two
def test_copies_between_two_devices(device):
    d1 = _second(device)
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = ember.tensor(host, device=device)
    y = x.to(d1)
    assert y.device == d1 and y.untyped_storage().device == d1
    assert_close(y, host)
    # non-contiguous source, with a cast, and back
    dt = ember.float64 if backend_for(d1).supports_dtype(ember.float64) else ember.int32
    z = x.permute(2, 0, 1).to(d1, dtype=dt)
    assert z.device == d1 and z.dtype is dt
    assert_close(z, host.transpose(2, 0, 1))
    w = z.to(device)
    assert w.device == device
    assert_close(w, host.transpose(2, 0, 1))


@two
def test_copy_into_a_view_on_the_other_device(device):
    d1 = _second(device)
    dst = ember.zeros(3, 4, device=d1)
    src = ember.tensor([1.5, -2.0, 3.25, 4.0], device=device)
    dst[1:].copy_(src)  # across devices, broadcast over rows
    assert dst.device == d1
    assert dst.tolist() == [[0, 0, 0, 0], [1.5, -2.0, 3.25, 4.0], [1.5, -2.0, 3.25, 4.0]]
    back = ember.empty(4, 3, dtype=ember.int32, device=device)
    back.copy_(dst.t())  # strided source on the other device, with a cast
    assert back.tolist() == np.array(dst.tolist(), dtype=np.float32).T.astype(np.int32).tolist()


@two
def test_ops_run_on_the_second_device(device):
    d1 = _second(device)
    a = ember.arange(12, dtype=ember.float32, device=d1).view(3, 4)
    b = ember.ones(4, device=d1)
    r = (a * 2 + b).sum(0)
    assert r.device == d1
    assert r.tolist() == (np.arange(12).reshape(3, 4) * 2 + 1).sum(0).tolist()
    m = a @ a.t()
    assert m.device == d1
    assert_close(m, np.arange(12).reshape(3, 4) @ np.arange(12).reshape(3, 4).T)


@two
def test_mixed_device_errors_name_both_devices(device):
    d1 = _second(device)
    a = ember.ones(3, device=device)
    b = ember.ones(3, device=d1)
    with pytest.raises(RuntimeError) as e:
        a + b
    assert str(device) in str(e.value) and str(d1) in str(e.value)
    with pytest.raises(RuntimeError) as e:
        ember.matmul(ember.ones(2, 2, device=device), ember.ones(2, 2, device=d1))
    assert str(device) in str(e.value) and str(d1) in str(e.value)
    with pytest.raises(RuntimeError):
        ember.where(a > 0, a, b)


@two
def test_gradient_flows_back_across_devices(device):
    d1 = _second(device)
    x = ember.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = x.to(d1)
    (y * y).sum().backward()
    assert x.grad.device == device and x.grad.tolist() == [2.0, 4.0, 6.0]


@two
def test_generators_are_per_device(device):
    d1 = _second(device)
    g0 = ember.Generator(device).manual_seed(5)
    g1 = ember.Generator(d1).manual_seed(5)
    a = ember.rand(8, device=device, generator=g0)
    b = ember.rand(8, device=d1, generator=g1)
    assert a.tolist() == b.tolist()  # same backend, same seed: the same stream on either device
    with pytest.raises(RuntimeError):
        ember.rand(8, device=device, generator=g1).tolist()
