"""Fetchers: turn one index (or a batch of indices) from the sampler into one collated item.

A map-style dataset is read by index; an iterable dataset is read in order from its iterator,
the index only saying how many samples make the batch."""
from __future__ import annotations

import itertools


class _BaseDatasetFetcher:
    """What every fetcher holds: the dataset and how its samples become the loader's item."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.collate_fn = dataset, collate_fn
        self.auto_collation, self.drop_last = auto_collation, drop_last

    def fetch(self, possibly_batched_index):
        raise NotImplementedError


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """Draws the next sample (or ``len(index)`` samples) from the dataset's iterator; raises
    StopIteration when it is exhausted (or, with ``drop_last``, when a batch would be short).
    Once the iterator has run out, every later call raises StopIteration too."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self._stream = iter(dataset)
        self._drained = False

    def fetch(self, possibly_batched_index):
        if self._drained:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self._stream))
        wanted = len(possibly_batched_index)
        samples = list(itertools.islice(self._stream, wanted))
        if len(samples) < wanted:  # the stream ran out during this batch
            self._drained = True
            if not samples or self.drop_last:
                raise StopIteration
        return self.collate_fn(samples)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """``collate_fn([dataset[i] for i in batch])``, through ``dataset.__getitems__`` when the
    dataset has one (a batched read), or ``collate_fn(dataset[index])`` without batching."""

    def fetch(self, possibly_batched_index):
        source = self.dataset
        if not self.auto_collation:
            return self.collate_fn(source[possibly_batched_index])
        read_many = getattr(source, "__getitems__", None)
        if read_many:
            return self.collate_fn(read_many(possibly_batched_index))
        return self.collate_fn([source[i] for i in possibly_batched_index])


class _DatasetKind:
    """The two kinds of dataset a loader reads, and the fetcher of each."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        cls = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return cls(dataset, auto_collation, collate_fn, drop_last)
