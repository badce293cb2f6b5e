"""Tier 2, views: metadata-only ops share storage and the version counter on every backend."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close


def _base(device):
    return ember.arange(24, dtype=ember.float32, device=device).view(2, 3, 4)


VIEWS = [
    ("view", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view_infer", lambda x: x.view(-1, 2), lambda a: a.reshape(-1, 2)),
    ("reshape", lambda x: x.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("transpose", lambda x: x.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
    ("permute", lambda x: x.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    ("squeeze", lambda x: x[:, :1].squeeze(1), lambda a: a[:, 0]),
    ("unsqueeze", lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    ("select", lambda x: x.select(1, -1), lambda a: a[:, -1]),
    ("narrow", lambda x: x.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("slice_step", lambda x: x[:, ::2, 1::2], lambda a: a[:, ::2, 1::2]),
    ("none_ellipsis", lambda x: x[None, ..., 1], lambda a: a[None, ..., 1]),
    ("diagonal", lambda x: x.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    ("diagonal_offset", lambda x: x.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
    ("as_strided", lambda x: x.as_strided((3, 3), (4, 1), 2),
     lambda a: a.reshape(-1)[2 + 4 * np.arange(3)[:, None] + np.arange(3)]),
    ("unfold", lambda x: x.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    ("t", lambda x: x[0].t(), lambda a: a[0].T),
    ("mT", lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2)),
    ("split", lambda x: x.split(2, 2)[1], lambda a: a[:, :, 2:4]),
    ("chunk", lambda x: x.chunk(3, 1)[2], lambda a: a[:, 2:3]),
    ("unbind", lambda x: x.unbind(0)[1], lambda a: a[1]),
    ("flatten", lambda x: x.flatten(1), lambda a: a.reshape(2, 12)),
    ("movedim", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
]


@pytest.mark.parametrize("name,fn,ref", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_values_and_storage(device, name, fn, ref):
    x = _base(device)
    host = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    v = fn(x)
    assert_close(v, ref(host))
    assert v.untyped_storage() is x.untyped_storage(), f"{name} must not copy"
    assert v._version is x._version, f"{name} must share the version counter"


def test_writes_through_views(device):
    x = ember.zeros(3, 4, device=device)
    x[1].fill_(2.0)
    x[:, 3] = 5.0
    x.t()[0, 2] = 7.0
    expect = np.zeros((3, 4))
    expect[1] = 2
    expect[:, 3] = 5
    expect[2, 0] = 7
    assert_close(x, expect)


def test_version_counter_shared_and_bumped(device):
    x = ember.ones(4, device=device)
    v = x[1:3]
    before = x._version[0]
    v.add_(1)
    assert x._version[0] == before + 1
    assert x.tolist() == [1, 2, 2, 1]


def test_is_contiguous_ignores_size_one_dims(device):
    x = ember.zeros(3, 1, 4, device=device)
    assert x.is_contiguous()
    y = x.transpose(0, 1)  # moves a size-1 dim only
    assert y.is_contiguous()
    assert not x.transpose(0, 2).is_contiguous()
    assert x.transpose(0, 2).contiguous().is_contiguous()


def test_view_refuses_non_viewable_strides_but_reshape_copies(device):
    x = ember.arange(12, device=device).view(3, 4).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(12)
    r = x.reshape(12)
    assert r.tolist() == np.arange(12).reshape(3, 4).T.reshape(12).tolist()
    assert r.untyped_storage() is not x.untyped_storage()


def test_contiguous_copies_noncontiguous(device):
    x = ember.arange(6, device=device).view(2, 3)
    assert x.contiguous() is x
    c = x.t().contiguous()
    assert c.is_contiguous() and c.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_index_errors(device):
    x = ember.zeros(3, 4, device=device)
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        x[:, -5]
    with pytest.raises(IndexError):
        x.select(2, 0)
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(RuntimeError):
        x.expand(2, 4)
