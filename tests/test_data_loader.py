"""DataLoader in the main process (num_workers=0): batching, sampling, len, argument checks."""
import multiprocessing
import pickle

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset, SequentialSampler,
                              SubsetRandomSampler, TensorDataset)


class Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


class Stream(IterableDataset):
    def __init__(self, n, length=None):
        self.n, self.length = n, length

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n if self.length is None else self.length


def batches(loader):
    return [b.tolist() for b in loader]


def test_batches_in_order_with_last_partial_batch():
    assert batches(DataLoader(Range(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert batches(DataLoader(Range(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert batches(DataLoader(Range(3))) == [[0], [1], [2]]  # batch_size defaults to 1


def test_tensor_dataset_batches():
    x = ember.arange(10.0).reshape(5, 2)
    y = ember.arange(5)
    out = list(DataLoader(TensorDataset(x, y), batch_size=2))
    assert len(out) == 3 and out[0][0].tolist() == [[0.0, 1.0], [2.0, 3.0]] and out[2][1].tolist() == [4]


def test_batch_size_none_converts_without_batching():
    class Arr(Range):
        def __getitem__(self, i):
            return np.full(2, i, dtype=np.int32)
    out = list(DataLoader(Arr(3), batch_size=None))
    assert len(out) == 3 and isinstance(out[1], ember.Tensor) and out[1].tolist() == [1, 1]
    assert out[1].dtype == ember.int32


def test_len():
    assert len(DataLoader(Range(10), batch_size=3)) == 4
    assert len(DataLoader(Range(10), batch_size=3, drop_last=True)) == 3
    assert len(DataLoader(Range(10), batch_size=None)) == 10
    assert len(DataLoader(Stream(10), batch_size=4)) == 3
    assert len(DataLoader(Stream(10), batch_size=4, drop_last=True)) == 2
    assert len(iter(DataLoader(Range(10), batch_size=5))) == 2


def test_shuffle_repeats_per_generator_seed_and_reshuffles_each_epoch():
    def run(seed):
        return batches(DataLoader(Range(20), batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(seed)))
    a, b = run(1), run(1)
    assert a == b and sorted(sum(a, [])) == list(range(20)) and a != batches(DataLoader(Range(20), batch_size=5))
    loader = DataLoader(Range(20), batch_size=20, shuffle=True, generator=ember.Generator().manual_seed(1))
    assert batches(loader) != batches(loader)
    ember.manual_seed(5)
    c = batches(DataLoader(Range(20), batch_size=5, shuffle=True))
    ember.manual_seed(5)
    assert c == batches(DataLoader(Range(20), batch_size=5, shuffle=True))


def test_sampler_and_batch_sampler():
    s = SubsetRandomSampler([1, 3, 5], generator=ember.Generator().manual_seed(0))
    assert sorted(sum(batches(DataLoader(Range(6), batch_size=2, sampler=s)), [])) == [1, 3, 5]
    bs = BatchSampler(SequentialSampler(range(5)), 2, False)
    loader = DataLoader(Range(5), batch_sampler=bs)
    assert batches(loader) == [[0, 1], [2, 3], [4]] and len(loader) == 3
    assert loader.batch_size is None and loader.drop_last is False
    assert batches(DataLoader(Range(9), batch_sampler=[[8, 0], [4]])) == [[8, 0], [4]]


def test_iterable_dataset_batching():
    assert batches(DataLoader(Stream(5), batch_size=2)) == [[0, 1], [2, 3], [4]]
    assert batches(DataLoader(Stream(5), batch_size=2, drop_last=True)) == [[0, 1], [2, 3]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert batches(DataLoader(Stream(0), batch_size=2)) == []


def test_iterable_dataset_longer_than_its_len_warns():
    loader = DataLoader(Stream(6, length=2), batch_size=2)
    assert len(loader) == 1
    with pytest.warns(UserWarning, match="reported to be 1 batches.*but 2 have been fetched"):
        list(loader)


def test_custom_collate_fn_and_getitems():
    out = list(DataLoader(Range(4), batch_size=2, collate_fn=lambda b: sum(b)))
    assert out == [1, 5]


def test_pin_memory_flag_returns_the_same_values():
    out = list(DataLoader(TensorDataset(ember.arange(4.0)), batch_size=2, pin_memory=True))
    assert [o[0].tolist() for o in out] == [[0.0, 1.0], [2.0, 3.0]]


def test_generator_seeds_the_iterator():
    g = ember.Generator().manual_seed(3)
    it1 = iter(DataLoader(Range(2), generator=g))
    g.manual_seed(3)
    it2 = iter(DataLoader(Range(2), generator=g))
    assert it1._base_seed == it2._base_seed and it1._base_seed >= 0


def test_iterator_cannot_be_pickled():
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(iter(DataLoader(Range(2))))


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(timeout=1), r"timeout option \(timeout=1\) needs multi-process loading"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
    (dict(num_workers=1, prefetch_factor=0), "prefetch_factor option should be a positive integer"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(shuffle=True, sampler=SequentialSampler(range(4))), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                              "sampler, and drop_last"),
    (dict(batch_sampler=[[0]], shuffle=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and is mutually exclusive "
                                            "with drop_last"),
    (dict(batch_size=0), "batch_size should be a positive integer value"),
    (dict(multiprocessing_context="spawn"), "multiprocessing_context can only be used with multi-process loading"),
    (dict(num_workers=1, multiprocessing_context="nope"), "should specify a valid start method in"),
])
def test_conflicting_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(Range(4), **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(shuffle=True), "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True"),
    (dict(sampler=[0]), "DataLoader with IterableDataset: expected unspecified sampler option"),
    (dict(batch_sampler=[[0]]), "DataLoader with IterableDataset: expected unspecified batch_sampler option"),
])
def test_iterable_dataset_refuses_samplers(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(Stream(3), **kwargs)
    DataLoader(Stream(3), shuffle=False)  # an explicit False is fine


def test_type_errors():
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context object"):
        DataLoader(Range(4), num_workers=1, multiprocessing_context=42)
    with pytest.raises(TypeError, match="num_workers option should be an int"):
        DataLoader(Range(4), num_workers="2")


def test_context_string_becomes_a_context():
    loader = DataLoader(Range(4), num_workers=1, multiprocessing_context="spawn")
    assert isinstance(loader.multiprocessing_context, multiprocessing.context.BaseContext)
    assert loader.multiprocessing_context.get_start_method() == "spawn"
    assert loader.prefetch_factor == 2


def test_attributes_are_frozen_after_init():
    loader = DataLoader(Range(4), batch_size=2)
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(loader, attr, None)
    loader.num_workers = 0  # other attributes may change
    loader.collate_fn = lambda b: b
    assert list(loader) == [[0, 1], [2, 3]]


def test_reachable_as_torch_utils_data():
    import ember as torch
    assert torch.utils.data.DataLoader is DataLoader
    with pytest.raises(AttributeError):
        torch.utils.no_such_module
