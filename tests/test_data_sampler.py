"""ember.utils.data samplers and DistributedSampler."""
import sys
import types

import pytest

import ember
from ember.utils.data import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                              SubsetRandomSampler, WeightedRandomSampler)


def test_sampler_base_and_sequential():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    with pytest.warns(UserWarning, match="data_source"):
        Sampler(range(3))
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_is_a_permutation_repeating_per_generator_seed():
    a = list(RandomSampler(range(50), generator=ember.Generator().manual_seed(5)))
    b = list(RandomSampler(range(50), generator=ember.Generator().manual_seed(5)))
    c = list(RandomSampler(range(50), generator=ember.Generator().manual_seed(6)))
    assert sorted(a) == list(range(50)) and a == b and a != c


def test_random_sampler_default_generator_follows_manual_seed_and_reshuffles_each_epoch():
    s = RandomSampler(range(30))
    ember.manual_seed(1)
    e1, e2 = list(s), list(s)
    ember.manual_seed(1)
    assert list(s) == e1 and e1 != e2


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=ember.Generator().manual_seed(0))
    out = list(s)
    assert len(out) == 10 == len(s)
    assert sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [0, 1, 2, 3]  # whole permutations first
    r = list(RandomSampler(range(3), replacement=True, num_samples=70, generator=ember.Generator().manual_seed(0)))
    assert len(r) == 70 and set(r) == {0, 1, 2}


def test_random_sampler_bad_input():
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples=0"):
        RandomSampler([])


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], generator=ember.Generator().manual_seed(2))
    out = list(s)
    assert sorted(out) == [10, 20, 30, 40] and len(s) == 4


def test_weighted_random_sampler():
    s = WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], num_samples=400, generator=ember.Generator().manual_seed(0))
    out = list(s)
    assert len(out) == 400 == len(s) and set(out) <= {1, 2}
    assert 0.6 < out.count(2) / 400 < 0.9  # expected 0.75
    nr = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False, generator=ember.Generator().manual_seed(0)))
    assert sorted(nr) == [0, 1, 2, 3]
    assert s.weights.dtype == ember.float64


def test_weighted_random_sampler_bad_input():
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], num_samples=True)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement="yes")
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(2, 2\)"):
        WeightedRandomSampler([[1.0, 2.0], [3.0, 4.0]], 2)
    with pytest.raises(ValueError, match="without replacement from 2 weights"):
        WeightedRandomSampler([1.0, 2.0], 3, replacement=False)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    assert len(BatchSampler(range(6), 3, False)) == 2
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=0"):
        BatchSampler(range(3), 2, 0)


def _shards(n, replicas, **kw):
    return [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, **kw)) for r in range(replicas)]


def test_distributed_sampler_partitions_with_padding():
    parts = _shards(10, 3, shuffle=False)
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert len(DistributedSampler(range(10), num_replicas=3, rank=0)) == 4
    parts = _shards(10, 3, shuffle=False, drop_last=True)
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # padding longer than the dataset repeats it
    assert _shards(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]


def test_distributed_sampler_shuffle_is_shared_across_ranks_and_changes_with_epoch():
    samplers = [DistributedSampler(range(20), num_replicas=2, rank=r, seed=7) for r in range(2)]
    e0 = [list(s) for s in samplers]
    assert sorted(e0[0] + e0[1]) == list(range(20))  # disjoint, covering: the same permutation on both
    for s in samplers:
        s.set_epoch(1)
    e1 = [list(s) for s in samplers]
    assert sorted(e1[0] + e1[1]) == list(range(20)) and e1 != e0
    samplers[0].set_epoch(0)
    assert list(samplers[0]) == e0[0]


def test_distributed_sampler_bad_rank():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match=r"Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(ValueError, match="num_replicas should be a positive integer"):
        DistributedSampler(range(4), num_replicas=0, rank=0)


def test_distributed_sampler_without_a_process_group_raises_pytorchs_error():
    import importlib
    try:
        dist = importlib.import_module("ember.distributed")
    except ModuleNotFoundError:
        dist = None
    if dist is None or not dist.is_available():
        err, msg = RuntimeError, "Requires distributed package to be available"
    else:
        err, msg = ValueError, "Default process group has not been initialized"
    assert dist is None or not dist.is_initialized()
    with pytest.raises(err, match=msg):
        DistributedSampler(range(4))
    with pytest.raises(err, match=msg):
        DistributedSampler(range(4), num_replicas=2)


def _fake_dist(initialized, world=4, rank=3, available=True):
    m = types.ModuleType("ember.distributed")
    m.is_available = lambda: available
    m.is_initialized = lambda: initialized
    m.get_world_size = lambda: world
    m.get_rank = lambda: rank
    return m


def test_distributed_sampler_asks_ember_distributed(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember.distributed", _fake_dist(True))
    s = DistributedSampler(range(8), shuffle=False)
    assert (s.num_replicas, s.rank) == (4, 3) and list(s) == [3, 7]
    monkeypatch.setitem(sys.modules, "ember.distributed", _fake_dist(False))
    with pytest.raises(ValueError, match="Default process group has not been initialized, please make sure to call "
                                         "init_process_group."):
        DistributedSampler(range(8))
    DistributedSampler(range(8), num_replicas=2, rank=0)  # explicit arguments never ask
    monkeypatch.setitem(sys.modules, "ember.distributed", _fake_dist(True, available=False))
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(range(8))
