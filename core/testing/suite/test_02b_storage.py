"""Tier 2b, storages: a storage is untyped bytes shared by every view of it. Tensors of other
dtypes read and write the same bytes (``view(dtype)``, ``set_``), so a backend with typed buffers
needs a bitcast path; writes, in place or through any view, keep the storage object (a
copy-on-write backend rebinds ``storage._data`` instead) and show in every view; the storage's
``backend_state`` slot is the backend's, None when the core makes a storage."""
import numpy as np
import pytest

import ember
from ember.testing.helpers import supports


def _need(device, *dtypes):
    missing = [d.name for d in dtypes if not supports(device, d)]
    if missing:
        pytest.skip(f"the backend does not declare {', '.join(missing)}")


def test_storages_start_with_an_empty_backend_state(device):
    made = [ember.empty(3, device=device), ember.tensor([1.0, 2.0], device=device), ember.zeros(2, 2, device=device)]
    made.append(made[1] + made[1])  # a kernel's result
    for t in made:
        assert t.untyped_storage().backend_state is None
    x = made[2]
    s = x.untyped_storage()
    try:
        s.backend_state = "mine"
        assert x[1].untyped_storage().backend_state == "mine"  # views share the storage object
    finally:
        s.backend_state = None


def test_in_place_writes_keep_the_storage_and_show_in_every_view(device):
    x = ember.zeros(2, 4, device=device)
    s = x.untyped_storage()
    row, col = x[1], x[:, 2]
    x.add_(1.0)
    row.mul_(3.0)
    col.fill_(7.0)
    x[0, :2].copy_(ember.tensor([5.0, 6.0], device=device))
    expected = [[5.0, 6.0, 7.0, 1.0], [3.0, 3.0, 7.0, 3.0]]
    for t in (x, row, col):
        assert t.untyped_storage() is s, "a write must keep the storage object (rebind its _data instead)"
    assert x.tolist() == expected and row.tolist() == expected[1] and col.tolist() == [7.0, 7.0]


def test_view_dtype_of_the_same_size_reads_the_bits(device):
    _need(device, ember.int32)
    x = ember.tensor([1.0, -2.0, 0.5], device=device)
    bits = x.view(ember.int32)
    assert bits.untyped_storage() is x.untyped_storage()
    assert bits.tolist() == np.array([1.0, -2.0, 0.5], np.float32).view(np.int32).tolist()
    bits[1:2].fill_(0x40400000)  # 3.0f: a write through the int32 view is a write to x
    assert x.tolist() == [1.0, 3.0, 0.5]
    assert x[1:].view(ember.int32).tolist() == np.array([3.0, 0.5], np.float32).view(np.int32).tolist()


def test_view_dtype_of_another_size_reads_the_bytes(device):
    _need(device, ember.uint8, ember.int32)
    x = ember.tensor([[1.0, -2.0], [0.5, 4.0]], device=device)
    raw = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)
    assert x.view(ember.uint8).tolist() == raw.view(np.uint8).tolist()  # shape (2, 8), little-endian
    assert x[1].view(ember.uint8).tolist() == raw[1].view(np.uint8).tolist()  # at a storage offset
    y = ember.tensor([1, -2], dtype=ember.int64, device=device)
    assert y.view(ember.int32).tolist() == np.array([1, -2], np.int64).view(np.int32).tolist()
    b = x.view(ember.uint8)
    b[0, 3].fill_(0x40)  # the high byte of 1.0f (0x3f800000 -> 0x40800000 = 4.0f)
    assert x[0, 0].item() == 4.0


def test_set_reads_a_storage_as_another_dtype(device):
    _need(device, ember.int32)
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    t = ember.empty(0, dtype=ember.int32, device=device)
    t.set_(x.untyped_storage(), 1, (2,))
    assert t.untyped_storage() is x.untyped_storage()
    assert t.tolist() == np.array([2.0, 3.0], np.float32).view(np.int32).tolist()
    t.fill_(0)
    assert x.tolist() == [1.0, 0.0, 0.0, 4.0]
