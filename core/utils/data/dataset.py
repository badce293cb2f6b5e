"""Datasets: map-style (:class:`Dataset`: ``__getitem__`` and ``__len__``) and iterable-style
(:class:`IterableDataset`: ``__iter__``), and the combinators over them, plus
:func:`random_split`."""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, Iterator, Sequence, TypeVar

from ..._devices import cpu
from ..._tensor import Tensor
from ...ops.random import default_generator, randperm

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class DatasetArgumentError(ValueError, AssertionError):
    """Bad arguments to a dataset constructor. PyTorch raises AssertionError for some of these
    (TensorDataset, ConcatDataset, ChainDataset); this is both, so either ``except`` works."""


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0 .. len - 1``) to samples.

    Subclasses define ``__getitem__`` and usually ``__len__`` (which samplers and ``len()`` of a
    DataLoader need); ``__getitems__(indices)`` may be added to read a whole batch at once.

    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> list(DataLoader(Squares(), batch_size=2))
    [tensor([0, 1]), tensor([4, 9])]
    """

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples (``__iter__``), for data read sequentially (files, databases, generated).

    With ``num_workers > 0`` each worker gets its own copy and iterates it: without sharding every
    worker yields the whole stream. Shard in ``__iter__`` with :func:`get_worker_info`:

    >>> class Range(IterableDataset):
    ...     def __init__(self, n): self.n = n
    ...     def __iter__(self):
    ...         info = get_worker_info()
    ...         k, i = (1, 0) if info is None else (info.num_workers, info.id)
    ...         return iter(range(i, self.n, k))
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: "Dataset") -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Samples are ``tuple(t[i] for t in tensors)``; the tensors share their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise DatasetArgumentError("TensorDataset: expected at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} must be a Tensor, got {type(t).__name__}")
            if t.dim() == 0:
                raise DatasetArgumentError(f"TensorDataset: tensor {i} is 0-d; every tensor needs a first dimension")
        sizes = [t.size(0) for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise DatasetArgumentError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Datasets of equal length side by side: ``StackDataset(a, b)[i] == (a[i], b[i])`` and
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        lengths = [len(d) for d in parts]
        if any(n != lengths[0] for n in lengths):
            names = list(range(len(args))) if args else list(kwargs)
            raise ValueError(f"Size mismatch between datasets: lengths {dict(zip(names, lengths))}")
        self._length = lengths[0]
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        def column(d):
            getitems = getattr(d, "__getitems__", None)
            if callable(getitems):
                items = getitems(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                                     f"got {len(items)}")
                return items
            return [d[i] for i in indices]
        if isinstance(self.datasets, dict):
            cols = {k: column(d) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after another; ``cumulative_sizes[i]`` is the length up to and
    including dataset ``i``."""

    @staticmethod
    def cumsum(sequence) -> list:
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise DatasetArgumentError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise DatasetArgumentError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"absolute value of index should not exceed dataset length (index {idx}, length {n})")
            idx = n + idx
        if idx >= n:
            raise IndexError(f"ConcatDataset index {idx} is out of range for length {n}")
        i = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if i == 0 else idx - self.cumulative_sizes[i - 1]
        return self.datasets[i][sample_idx]

    @property
    def cummulative_sizes(self) -> list:
        warnings.warn("cummulative_sizes attribute is renamed to cumulative_sizes", FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained lazily."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise DatasetArgumentError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise DatasetArgumentError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            total += len(d)
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if type(self).__getitem__ is not Subset.__getitem__:
            # a subclass changed __getitem__: honour it (PyTorch raises NotImplementedError here)
            return [self[i] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T], lengths: Sequence[int | float], generator=None) -> list:
    """Split ``dataset`` into non-overlapping random subsets of the given ``lengths``, or of the
    given fractions (summing to 1: ``floor(frac * len)`` each, the remainder handed out one by
    one from the first split on). ``generator`` defaults to ember's default cpu generator.

    >>> train, val = random_split(range(10), [0.8, 0.2], generator=ember.Generator().manual_seed(0))
    >>> len(train), len(val)
    (8, 2)
    """
    if generator is None:
        generator = default_generator(cpu())
    lengths = list(lengths)
    n = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(n * frac))
        for i in range(n - sum(subset_lengths)):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ValueError(f"random_split: lengths must be non-negative ints or fractions summing to 1, got "
                             f"{lengths[i]!r} at index {i} (lengths {lengths})")
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! "
                         f"(lengths {lengths} sum to {sum(lengths)}, the dataset has {n})")
    indices = randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
