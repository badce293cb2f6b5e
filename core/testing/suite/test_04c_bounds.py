"""Tier 4c, bounds: every op that reads indices refuses an out-of-range one, with an error that
is both an IndexError and a RuntimeError (PyTorch raises one or the other by op) naming the op,
the bad index, the dim and its size. Negative indices are wrapped exactly where PyTorch wraps
them and refused elsewhere; a refused in-place write leaves its target untouched; nothing
reads or writes outside a buffer. A backend declaring ``deferred_errors`` may raise at the next
synchronisation instead, and leaves a refused write's target unspecified."""
import pytest

import ember
from ember.nn import functional as F

OOB = "out of bounds"


def _x(device):
    return ember.arange(12, dtype=ember.float32, device=device).reshape(3, 4)


def L(values, device):
    return ember.tensor(values, dtype=ember.int64, device=device)


def deferred(device) -> bool:
    """Whether the backend reports index errors at the next host observation of the device
    (``Backend.deferred_errors``) instead of before the op returns."""
    return ember.backend.backend_for(device.type).deferred_errors


def _refused(device, fn, *, match=OOB):
    with pytest.raises(IndexError, match=match) as info:
        fn()
        if deferred(device):  # the error surfaces at the next synchronisation
            ember.backend.backend_for(device.type).synchronize(device)
    assert isinstance(info.value, RuntimeError), "index errors must also be RuntimeErrors (PyTorch's type for ops)"
    return str(info.value)


# (name, call(x, index), the size the index addresses, whether negative indices wrap)
def _index_ops(device):
    src = ember.ones(3, 4, device=device)
    return [
        ("gather", lambda x, i: ember.gather(x, 1, i.reshape(1, 1).expand(3, 1)), 4, False),
        ("scatter", lambda x, i: ember.scatter(x, 1, i.reshape(1, 1), src), 4, False),
        ("scatter value", lambda x, i: ember.scatter(x, 1, i.reshape(1, 1), value=2.0), 4, False),
        ("scatter_add", lambda x, i: ember.scatter_add(x, 1, i.reshape(1, 1), src), 4, False),
        ("scatter_reduce", lambda x, i: ember.scatter_reduce(x, 1, i.reshape(1, 1), src, "amax"), 4, False),
        ("index_select", lambda x, i: ember.index_select(x, 1, i.reshape(1)), 4, False),
        ("index_add", lambda x, i: ember.index_add(x, 0, i.reshape(1), src[:1]), 3, False),
        ("index_copy", lambda x, i: ember.index_copy(x, 0, i.reshape(1), src[:1]), 3, False),
        ("index_reduce", lambda x, i: ember.index_reduce(x, 0, i.reshape(1), src[:1], "amax"), 3, False),
        ("index_fill", lambda x, i: ember.index_fill(x, 1, i.reshape(1), -1.0), 4, True),
        ("take", lambda x, i: ember.take(x, i.reshape(1)), 12, True),
        ("take_along_dim", lambda x, i: ember.take_along_dim(x, i.reshape(1, 1), 1), 4, True),
        ("put", lambda x, i: ember.put(x, i.reshape(1), src[0, :1]), 12, True),
        ("index_put", lambda x, i: ember.index_put(x, (i.reshape(1),), ember.tensor(5.0, device=device)), 3, True),
        ("getitem tensor", lambda x, i: x[i.reshape(1)], 3, True),
        ("getitem second dim", lambda x, i: x[:, i.reshape(1)], 4, True),
        ("getitem two tensors", lambda x, i: x[L([0], device), i.reshape(1)], 4, True),
    ]


@pytest.mark.parametrize("k", range(17))
def test_out_of_range_indices_are_refused(device, k):
    name, call, size, wraps = _index_ops(device)[k]
    x = _x(device)
    for bad in (size, size + 7, 2 ** 40, -size - 1):
        msg = _refused(device, lambda: call(x, L(bad, device)))
        assert str(bad) in msg and str(size) in msg, (f"{name}: the message should name index {bad} and size {size}: "
                                                      f"{msg}")
    if wraps:
        r = call(x, L(-1, device))
        ref = call(x, L(size - 1, device))
        assert r.tolist() == ref.tolist(), f"{name}: -1 must address the last entry"
    else:
        _refused(device, lambda: call(x, L(-1, device)))
    assert call(x, L(0, device)) is not None  # in range: fine
    assert deferred(device) or x.tolist() == _x(device).tolist(), f"{name} wrote into its input"


def _inplace_ops(device):
    src = ember.ones(3, 4, device=device)
    return [
        ("scatter_", lambda x, i: x.scatter_(1, i.reshape(1, 1), src)),
        ("scatter_ value", lambda x, i: x.scatter_(1, i.reshape(1, 1), 7.0)),
        ("scatter_add_", lambda x, i: x.scatter_add_(1, i.reshape(1, 1), src)),
        ("scatter_reduce_", lambda x, i: x.scatter_reduce_(1, i.reshape(1, 1), src, "sum")),
        ("index_add_", lambda x, i: x.index_add_(1, i.reshape(1), src[:, :1])),
        ("index_copy_", lambda x, i: x.index_copy_(1, i.reshape(1), src[:, :1])),
        ("index_fill_", lambda x, i: x.index_fill_(1, i.reshape(1), 7.0)),
        ("index_put_", lambda x, i: x.index_put_((L([0, 1], device), i.expand(2)), ember.tensor(9.0, device=device))),
        ("put_", lambda x, i: x.put_(i.reshape(1) + 8, src[0, :1])),
        ("setitem", lambda x, i: x.__setitem__((slice(None), i.reshape(1)), 9.0)),
        ("setitem two tensors", lambda x, i: x.__setitem__((L([0, 2], device), i.expand(2)), 9.0)),
    ]


@pytest.mark.parametrize("k", range(11))
def test_refused_inplace_writes_leave_the_target_untouched(device, k):
    name, call = _inplace_ops(device)[k]
    x = _x(device)
    v = x._version[0]
    _refused(device, lambda: call(x, L(4, device)))
    assert deferred(device) or x.tolist() == _x(device).tolist(), f"{name}: a refused write changed the data"
    assert x._version[0] == v, f"{name}: a refused write bumped the version counter"
    base = ember.zeros(3, 8, device=device)
    view = base[:, ::2]  # a strided view: the write must not reach the base's other columns either
    _refused(device, lambda: call(view, L(4, device)))
    assert deferred(device) or base.tolist() == [[0.0] * 8] * 3


def test_a_partly_bad_index_writes_nothing(device):
    x = _x(device)
    _refused(device, lambda: x.index_put_((L([0, 1, 3], device),), ember.tensor(-1.0, device=device)))
    _refused(device, lambda: x.scatter_(0, L([[0, 5, 1, 2]], device), ember.ones(1, 4, device=device)))
    _refused(device, lambda: x.index_add_(0, L([0, 1, 2, 3], device), ember.ones(4, 4, device=device)))
    assert deferred(device) or x.tolist() == _x(device).tolist()


def test_int_indices_and_views(device):
    x = _x(device)
    assert x[-1].tolist() == [8.0, 9.0, 10.0, 11.0] and x[-3, -4].item() == 0.0
    for bad in (3, -4):
        _refused(device, lambda: x[bad], match="out of bounds")
        _refused(device, lambda: x.select(0, bad), match="out of bounds")
    _refused(device, lambda: x[0, 4], match="out of bounds")
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    assert x[1:100].shape == (2, 4) and x[5:].shape == (0, 4)  # slices clamp, as python's
    with pytest.raises((IndexError, RuntimeError)):
        x.narrow(1, 3, 2)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        ember.as_strided(x, (3, 4), (4, 2))  # would read past the 12-element storage


def test_int32_and_empty_indices(device):
    x = _x(device)
    i32 = ember.tensor([3, 0], dtype=ember.int32, device=device)
    assert x.index_select(1, i32).tolist() == [[3.0, 0.0], [7.0, 4.0], [11.0, 8.0]]
    _refused(device, lambda: x.index_select(1, ember.tensor([4], dtype=ember.int32, device=device)))
    empty = L([], device)
    assert x.index_select(0, empty).shape == (0, 4) and x[empty].shape == (0, 4)
    assert ember.take(x, empty).shape == (0,)


def test_non_integer_indices_are_refused(device):
    x = _x(device)
    f = ember.tensor([1.0], device=device)
    with pytest.raises(RuntimeError, match="int32/int64"):
        ember.gather(x, 1, f.reshape(1, 1))
    with pytest.raises(RuntimeError, match="int32/int64"):
        ember.index_select(x, 0, f)
    with pytest.raises(IndexError, match="tensors used as indices"):
        x[f]


def test_masks_must_match(device):
    x = _x(device)
    with pytest.raises(IndexError, match="shape of the mask"):
        x[ember.tensor([True, False], device=device)]
    with pytest.raises(RuntimeError):
        x.masked_fill(ember.ones(2, 4, dtype=ember.bool, device=device), 0.0)
    with pytest.raises(RuntimeError, match="at least"):
        ember.masked_scatter(x, x > 2, ember.ones(3, device=device))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[x > 5] = ember.ones(5, device=device)
    assert x.tolist() == _x(device).tolist()


def test_other_index_readers(device):
    s = ember.tensor([1.0, 3.0, 5.0], device=device)
    _refused(device, lambda: ember.searchsorted(s, ember.tensor([2.0], device=device), sorter=L([0, 1, 3], device)))
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.bincount(L([0, -1], device))
    w = ember.randn(5, 3, device=device)
    _refused(device, lambda: w[L([[0, 5]], device)])  # embedding-style row lookup
    with pytest.raises(IndexError):
        F.embedding(L([[0, 5]], device), w)
