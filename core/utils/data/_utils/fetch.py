"""Fetchers: turn one index (or a batch of indices) from the sampler into one collated item."""
from __future__ import annotations


class _BaseDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        raise NotImplementedError


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """Draws the next sample (or ``len(index)`` samples) from the dataset's iterator; raises
    StopIteration when it is exhausted (or, with ``drop_last``, when a batch would be short)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    """``collate_fn([dataset[i] for i in batch])``, through ``dataset.__getitems__`` when the
    dataset has one (a batched read), or ``collate_fn(dataset[index])`` without batching."""

    def fetch(self, possibly_batched_index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            if getitems:
                data = getitems(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
