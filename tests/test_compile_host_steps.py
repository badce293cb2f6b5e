"""Host steps (``ember._hoststep``): value checks and value-picked branches of the core are
recorded as steps that run again at replay, so that a compiled call raises what eager raises and
takes eager's branch on the replay's values, instead of breaking the capture."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _replayed(cf):
    return len(cf.programs()) == 1 and not cf.breaks


def test_embedding_replays_and_raises_on_an_index_out_of_range():
    w = ember.randn(5, 3)
    cf = ember.compile(lambda i: F.embedding(i, w) * 2)
    i = ember.tensor([[0, 4], [2, 1]])
    cf(i)
    np.testing.assert_array_equal(cf(ember.tensor([[3, 3], [0, 2]])).numpy(),
                                  (F.embedding(ember.tensor([[3, 3], [0, 2]]), w) * 2).numpy())
    assert _replayed(cf)
    assert any(s.name == "host__check_range" for s in cf.programs()[0].steps)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        cf(ember.tensor([[0, 5], [1, 1]]))


def test_take_along_dim_wraps_negative_indices_met_only_at_replay():
    x = ember.arange(12.0).reshape(3, 4)
    cf = ember.compile(lambda i: ember.take_along_dim(x, i, 1) + 1)
    cf(ember.tensor([[0, 1], [2, 3], [1, 1]]))
    neg = ember.tensor([[-1, 0], [-4, 3], [1, -2]])
    np.testing.assert_array_equal(cf(neg).numpy(), (ember.take_along_dim(x, neg, 1) + 1).numpy())
    assert _replayed(cf)
    with pytest.raises(IndexError):
        cf(ember.tensor([[0, 4], [0, 0], [0, 0]]))
    with pytest.raises(IndexError):  # gather takes no negative index
        ember.compile(lambda i: x.gather(1, i))(neg)


def test_cross_entropy_target_check_at_replay():
    cf = ember.compile(lambda a, t: F.cross_entropy(a, t))
    a = ember.randn(4, 3, dtype=ember.float64)
    t = ember.tensor([0, 2, 1, 1])
    cf(a, t)
    assert cf(a, t).item() == F.cross_entropy(a, t).item()
    assert _replayed(cf)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        cf(a, ember.tensor([0, 3, 1, 1]))


def test_adaptive_max_pool_takes_the_nan_branch_at_replay():
    cf = ember.compile(lambda x: F.adaptive_max_pool1d(x, 2, return_indices=True))
    cf(ember.randn(1, 2, 6))
    x = ember.randn(1, 2, 6)
    x[0, 1, 1] = float("nan")
    (v, i), (ve, ie) = cf(x), F.adaptive_max_pool1d(x, 2, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), ve.numpy())
    np.testing.assert_array_equal(i.numpy(), ie.numpy())
    assert _replayed(cf)


def test_binary_cross_entropy_range_check_at_replay():
    cf = ember.compile(F.binary_cross_entropy)
    p, y = ember.rand(5), ember.rand(5)
    cf(p, y)
    assert cf(p, y).item() == F.binary_cross_entropy(p, y).item()
    assert _replayed(cf)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        cf(p + 1, y)


def test_outside_a_capture_a_host_step_is_the_function():
    from ember import _hoststep
    calls = []

    @_hoststep.host_step
    def check(t):
        calls.append(t)

    x = ember.ones(2)
    assert check(x) is None and calls == [x]
    assert check.__wrapped__ is not check
