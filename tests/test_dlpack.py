"""DLPack: zero-copy exchange with numpy in both directions, the refusals, and the backend hooks
other devices plug into."""
import numpy as np
import pytest

import ember
from ember import _dlpack

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16, ember.float32,
          ember.float64]


def _layouts():
    base = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    return {
        "contiguous": base,
        "transposed": base.t(),
        "sliced": base[1:, ::2],
        "expanded": ember.arange(3, dtype=ember.float32).expand(4, 3),
        "0-d": ember.tensor(2.5),
        "empty": ember.zeros(0, 3),
    }


@pytest.mark.parametrize("layout", list(_layouts()))
def test_numpy_from_dlpack_shares_memory(layout):
    t = _layouts()[layout]
    a = np.from_dlpack(t)
    assert a.shape == tuple(t.shape)
    assert a.strides == tuple(s * t.element_size() for s in t.stride())
    np.testing.assert_array_equal(a, t.numpy())
    if t.numel() and layout != "expanded":
        a[(0,) * a.ndim] = -7.0  # a write through numpy is seen by the tensor
        assert t[(0,) * t.dim()].item() == -7.0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_round_trip_every_dtype(dtype):
    t = ember.tensor([1, 0, 1, 1], dtype=dtype)
    a = np.from_dlpack(t)
    assert a.dtype == dtype.np
    back = ember.from_dlpack(a)
    assert back.dtype is dtype and back.tolist() == t.tolist()
    assert back.data_ptr() == t.data_ptr()  # no copy on either leg


def test_dlpack_device_is_cpu():
    assert ember.ones(2).__dlpack_device__() == (_dlpack.KDL_CPU, 0)


def test_ember_from_numpy_is_zero_copy_both_ways():
    n = np.arange(6.0).reshape(2, 3)
    t = ember.from_dlpack(n)
    assert t.dtype is ember.float64 and t.shape == (2, 3)
    assert t.data_ptr() == n.ctypes.data
    t[0, 1] = 42.0
    assert n[0, 1] == 42.0
    n[1, 2] = -1.0
    assert t[1, 2].item() == -1.0


def test_from_numpy_view_keeps_strides_and_offset():
    n = np.arange(20.0).reshape(4, 5)[1:, ::2]
    t = ember.from_dlpack(n)
    assert t.tolist() == n.tolist()
    t.add_(100)
    assert n[0, 0] == 105.0


def test_imported_tensor_keeps_its_source_alive():
    t = ember.from_dlpack(np.arange(1000.0))
    import gc
    gc.collect()
    assert t.sum().item() == sum(range(1000))


def test_requires_grad_export_refused():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):
        np.from_dlpack(x)
    assert np.from_dlpack(x.detach()).tolist() == [1.0, 1.0, 1.0]


def test_bfloat16_export_refused_with_reason():
    with pytest.raises(BufferError, match="bfloat16"):
        np.from_dlpack(ember.ones(2, dtype=ember.bfloat16))


def test_read_only_import_refused_unless_copied():
    n = np.arange(3.0)
    n.flags.writeable = False
    with pytest.raises(BufferError, match="read-only"):
        ember.from_dlpack(n)
    t = ember.from_dlpack(n, copy=True)
    t[0] = 9.0
    assert n[0] == 0.0 and t.tolist() == [9.0, 1.0, 2.0]


def test_negative_strides_refused_unless_copied():
    n = np.arange(4.0)[::-1]
    with pytest.raises(BufferError, match="negative strides"):
        ember.from_dlpack(n)
    t = ember.from_dlpack(n, copy=True)
    assert t.tolist() == [3.0, 2.0, 1.0, 0.0] and t.stride() == (1,)


def test_copy_true_never_aliases():
    n = np.arange(3.0)
    t = ember.from_dlpack(n, copy=True)
    t[0] = 5.0
    assert n[0] == 0.0
    src = ember.arange(3.0)
    a = np.from_dlpack(_dlpack_wrap(src, copy=True))
    a[0] = 5.0
    assert src[0].item() == 0.0


def _dlpack_wrap(t, **kw):
    class W:
        def __dlpack__(self, **k):
            return t.__dlpack__(**{**k, **kw})

        def __dlpack_device__(self):
            return t.__dlpack_device__()
    return W()


def test_capsules_round_trip_and_are_consumed_once():
    src = ember.arange(4.0)
    cap = ember.to_dlpack(src)
    t = ember.from_dlpack(cap)
    t[2] = 11.0  # an unversioned capsule is writable by the protocol's convention
    assert src[2].item() == 11.0
    with pytest.raises(TypeError, match="consumed only once"):
        ember.from_dlpack(cap)


def test_from_dlpack_of_a_tensor_and_device_argument():
    t = ember.ones(2)
    assert ember.from_dlpack(t) is t
    c = ember.from_dlpack(t, copy=True)
    assert c is not t and c.data_ptr() != t.data_ptr()
    assert ember.from_dlpack(np.ones(2), device="cpu").device == ember.device("cpu")


def test_bad_inputs():
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2, 3])
    with pytest.raises(BufferError, match="stream"):
        ember.ones(2).__dlpack__(stream=1)
    with pytest.raises(BufferError, match="device"):
        ember.ones(2).__dlpack__(dl_device=(2, 0))


class _FakeCudaArray:
    def __dlpack__(self, **kw):
        raise AssertionError("a CUDA producer must be handed to the CUDA backend, not read on the host")

    def __dlpack_device__(self):
        return (_dlpack.KDL_CUDA, 0)


def test_foreign_device_without_its_backend_is_refused():
    with pytest.raises(RuntimeError, match="cuda"):
        ember.from_dlpack(_FakeCudaArray())


def test_backend_hooks_carry_other_devices(prim_backend, monkeypatch):
    """What a cupy backend does: import through ``from_dlpack``, export through ``to_dlpack`` and
    ``dlpack_device``. The primitives test backend stands in for it."""
    be = ember._devices.canonical(prim_backend)._backend
    seen = {}

    def from_dlpack(obj, code, index):
        seen["import"] = (code, index)
        return ember.arange(3.0, device=prim_backend)

    def to_dlpack(t, **kw):
        seen["export"] = kw
        return np.from_dlpack(t.cpu()).__dlpack__()

    monkeypatch.setitem(_dlpack.DEVICE_TYPES, _dlpack.KDL_CUDA, "prim")
    monkeypatch.setattr(be, "from_dlpack", from_dlpack, raising=False)
    monkeypatch.setattr(be, "to_dlpack", to_dlpack, raising=False)
    monkeypatch.setattr(be, "dlpack_device", lambda t: (_dlpack.KDL_CUDA, 0), raising=False)
    t = ember.from_dlpack(_FakeCudaArray())
    assert seen["import"] == (_dlpack.KDL_CUDA, 0) and t.device.type == "prim" and t.tolist() == [0.0, 1.0, 2.0]
    assert t.__dlpack_device__() == (_dlpack.KDL_CUDA, 0)
    cap = t.__dlpack__(stream=None)
    assert "export" in seen and type(cap).__name__ == "PyCapsule"


def test_backend_without_hooks_refuses_export(prim_backend):
    t = ember.ones(2, device=prim_backend)
    with pytest.raises(BufferError, match="does not implement DLPack"):
        t.__dlpack_device__()
    with pytest.raises(BufferError, match="copy the tensor to cpu"):
        t.__dlpack__()
