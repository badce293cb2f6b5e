"""ember.utils.data datasets and random_split."""
import warnings

import pytest

import ember
from ember.utils.data import (ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, StackDataset, Subset,
                              TensorDataset, random_split)


class Range(Dataset):
    def __init__(self, n, start=0):
        self.n, self.start = n, start

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.start + i


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


class Batched(Range):
    """Counts batched reads through __getitems__."""

    def __init__(self, n):
        super().__init__(n)
        self.calls = []

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [i * 10 for i in indices]


def test_base_classes_raise_not_implemented_and_are_generic():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())
    assert Dataset[int] is not None and IterableDataset[int] is not None


def test_tensor_dataset_indexes_every_tensor_along_dim0():
    x = ember.arange(12.0).reshape(4, 3)
    y = ember.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6.0, 7.0, 8.0] and yi.item() == 0
    xs, ys = ds[1:3]
    assert xs.shape == (2, 3) and ys.tolist() == [1, 0]


def test_tensor_dataset_bad_input():
    with pytest.raises(ValueError, match=r"Size mismatch between tensors.*\[4, 3\]"):
        TensorDataset(ember.zeros(4, 2), ember.zeros(3))
    with pytest.raises(AssertionError):  # PyTorch's type is accepted too
        TensorDataset(ember.zeros(4, 2), ember.zeros(3))
    with pytest.raises(TypeError, match="argument 1 must be a Tensor"):
        TensorDataset(ember.zeros(4), [1, 2, 3, 4])
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(ember.tensor(1.0))


def test_concat_dataset_indexing():
    ds = ConcatDataset([Range(3), Range(2, start=100), Range(4, start=200)])
    assert len(ds) == 9 and ds.cumulative_sizes == [3, 5, 9]
    assert [ds[i] for i in range(9)] == [0, 1, 2, 100, 101, 200, 201, 202, 203]
    assert ds[-1] == 203 and ds[-9] == 0
    with pytest.raises(ValueError, match="should not exceed dataset length"):
        ds[-10]
    with pytest.raises(IndexError, match="index 9 is out of range for length 9"):
        ds[9]
    both = Range(2) + Range(1, start=7)
    assert isinstance(both, ConcatDataset) and [both[0], both[2]] == [0, 7]


def test_concat_dataset_bad_input():
    with pytest.raises(ValueError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Range(2), Stream([1])])


def test_chain_dataset():
    ch = Stream([1, 2]) + Stream([3])
    assert isinstance(ch, ChainDataset)
    assert list(ch) == [1, 2, 3] and len(ch) == 3
    with pytest.raises(ValueError, match="only supports IterableDataset, got Range"):
        list(ChainDataset([Stream([1]), Range(2)]))


def test_subset_and_getitems():
    base = Batched(10)
    sub = Subset(base, [9, 3, 5])
    assert len(sub) == 3 and sub[0] == 9 and sub[2] == 5
    assert sub.__getitems__([0, 2]) == [90, 50] and base.calls == [[9, 5]]
    # DataLoader reads whole batches through __getitems__
    assert [b.tolist() for b in DataLoader(sub, batch_size=2)] == [[90, 30], [50]]
    assert base.calls[1:] == [[9, 3], [5]]
    plain = Subset(Range(10), [4, 1])
    assert plain.__getitems__([1, 0]) == [1, 4]


def test_subset_subclass_overriding_getitem_is_honoured():
    class Doubled(Subset):
        def __getitem__(self, i):
            return 2 * super().__getitem__(i)
    ds = Doubled(Batched(10), [1, 2, 3])
    assert [b.tolist() for b in DataLoader(ds, batch_size=3)] == [[2, 4, 6]]


def test_stack_dataset_tuple_and_dict():
    a, b = Range(3), Range(3, start=10)
    assert StackDataset(a, b)[1] == (1, 11)
    assert StackDataset(x=a, y=b)[2] == {"x": 2, "y": 12}
    assert StackDataset(a, Batched(3)).__getitems__([0, 2]) == [(0, 0), (2, 20)]
    assert StackDataset(p=Batched(3), q=a).__getitems__([1]) == [{"p": 10, "q": 1}]
    assert len(StackDataset(a, b)) == 3


def test_stack_dataset_bad_input():
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(Range(2), y=Range(2))
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Range(2), Range(3))

    class Short(Range):
        def __getitems__(self, idx):
            return [0]
    with pytest.raises(ValueError, match="output size mismatch. Expected 2, got 1"):
        StackDataset(Short(3), Range(3)).__getitems__([0, 1])


def test_random_split_lengths_are_disjoint_and_cover():
    parts = random_split(Range(10), [3, 7], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    seen = [x for p in parts for x in (p[i] for i in range(len(p)))]
    assert sorted(seen) == list(range(10))


def test_random_split_fractions_follow_pytorch_rounding():
    g = ember.Generator().manual_seed(0)
    assert [len(p) for p in random_split(Range(30), [0.3, 0.3, 0.4], generator=g)] == [9, 9, 12]
    # floor of each, then the remainder one by one from the first split
    assert [len(p) for p in random_split(Range(11), [0.5, 0.5], generator=g)] == [6, 5]
    assert [len(p) for p in random_split(Range(10), [0.33, 0.33, 0.34], generator=g)] == [4, 3, 3]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Range(1), [0.5, 0.5], generator=g)


def test_random_split_repeats_per_seed():
    def run(seed):
        return [p.indices for p in random_split(Range(20), [10, 10], generator=ember.Generator().manual_seed(seed))]
    assert run(3) == run(3) and run(3) != run(4)
    ember.manual_seed(11)
    a = [p.indices for p in random_split(Range(20), [5, 15])]
    ember.manual_seed(11)
    assert a == [p.indices for p in random_split(Range(20), [5, 15])]


def test_random_split_bad_input():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal.*sum to 9, the dataset has 10"):
        random_split(Range(10), [4, 5])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(Range(10), [-0.5, 1.5])
    with pytest.raises(ValueError, match="non-negative ints"):
        random_split(Range(10), [12, -2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        random_split(Range(4), [2, 2])  # no warning for plain lengths
