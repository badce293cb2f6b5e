"""Samplers: iterables of dataset keys (or, for :class:`BatchSampler`, of lists of keys) that a
DataLoader reads indices from. Random samplers draw from an ``ember.Generator``; with none given
they seed a private one from ember's default generator at each ``iter()``, so
``ember.manual_seed`` makes every epoch's order repeat."""
from __future__ import annotations

import warnings
from typing import Generic, Iterable, Iterator, Sequence, Sized, TypeVar

from ... import _dtype as D
from ...ops.creation import as_tensor, empty
from ...ops.random import Generator, multinomial, randint, randperm

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` (and ``__len__`` where the length is known)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        if data_source is not None:
            warnings.warn("`data_source` argument is not used and will be removed in a future release",
                          UserWarning, stacklevel=2)

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


def _private_generator(generator):
    """``generator``, or a fresh cpu generator seeded from ember's default generator."""
    if generator is not None:
        return generator
    seed = int(empty((), dtype=D.int64).random_().item())
    return Generator().manual_seed(seed)


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        yield from range(len(self.data_source))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Keys in random order: a permutation (repeated when ``num_samples`` exceeds the length), or
    with ``replacement=True`` ``num_samples`` independent uniform draws."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source, self.generator = data_source, generator
        self.replacement, self._num_samples = replacement, num_samples  # None: follow len(data_source)
        ns = self.num_samples
        if not isinstance(ns, int) or isinstance(ns, bool) or ns <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={ns}")

    @property
    def num_samples(self) -> int:
        # the dataset may grow or shrink between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        g = _private_generator(self.generator)
        ns = self.num_samples
        if self.replacement:
            for _ in range(ns // 32):
                yield from randint(0, n, (32,), generator=g).tolist()
            if ns % 32:
                yield from randint(0, n, (ns % 32,), generator=g).tolist()
        else:
            for _ in range(ns // n):
                yield from randperm(n, generator=g).tolist()
            if ns % n:
                yield from randperm(n, generator=g).tolist()[:ns % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in random order (without replacement)."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        order = randperm(len(self.indices), generator=self.generator).tolist()
        yield from (self.indices[i] for i in order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` keys ``0 .. len(weights) - 1`` drawn with probabilities proportional to
    ``weights`` (with replacement by default)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(weights, dtype=D.float64)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if not replacement and num_samples > w.numel():
            raise ValueError(f"WeightedRandomSampler: cannot draw num_samples={num_samples} without replacement "
                             f"from {w.numel()} weights")
        self.weights, self.num_samples = w, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self) -> Iterator[int]:
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Lists of ``batch_size`` keys from ``sampler``; the last shorter list is dropped with
    ``drop_last=True``.

    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        it = iter(self.sampler)
        bs = self.batch_size
        if self.drop_last:
            for batch in zip(*([it] * bs)):  # stops at the first short batch
                yield [*batch]
            return
        batch = []
        for idx in it:
            batch.append(idx)
            if len(batch) == bs:
                yield batch
                batch = []
        if batch:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the index sampler of an IterableDataset (its items are not keyed)."""

    def __iter__(self):
        while True:
            yield None
