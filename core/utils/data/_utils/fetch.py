"""Fetchers: turn what the sampler yields (one index, or a batch of indices) into one collated
item of the DataLoader. ``_DatasetKind.create_fetcher`` picks the fetcher for a dataset."""
from __future__ import annotations

from itertools import islice


class _BaseDatasetFetcher:
    """Holds the dataset and the loader's collation settings; ``fetch`` is the subclass's."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.collate_fn = dataset, collate_fn
        self.auto_collation, self.drop_last = auto_collation, drop_last

    def fetch(self, possibly_batched_index):
        raise NotImplementedError


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """Reads an iterable-style dataset in order: the index only says how many samples make a
    batch. StopIteration ends the epoch once the iterator is exhausted, and also replaces a
    final short batch when ``drop_last`` is set."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self._source = iter(dataset)
        self._exhausted = False

    def fetch(self, possibly_batched_index):
        if self._exhausted:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self._source))
        wanted = len(possibly_batched_index)
        batch = list(islice(self._source, wanted))
        short = len(batch) < wanted
        if short:  # the iterator ran dry while filling this batch
            self._exhausted = True
        if not batch or (short and self.drop_last):
            raise StopIteration
        return self.collate_fn(batch)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """Indexes a map-style dataset: ``collate_fn([dataset[i] for i in batch])`` (one
    ``dataset.__getitems__(batch)`` call when the dataset defines it), or
    ``collate_fn(dataset[index])`` without batching."""

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        batched_read = getattr(self.dataset, "__getitems__", None)
        if batched_read:
            samples = batched_read(possibly_batched_index)
        else:
            samples = [self.dataset[i] for i in possibly_batched_index]
        return self.collate_fn(samples)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)
