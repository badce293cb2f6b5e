"""``ember.utils.data``: datasets, samplers and the DataLoader (``torch.utils.data``'s API).

>>> import ember
>>> from ember.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(ember.arange(6.0).reshape(3, 2), ember.tensor([0, 1, 0]))
>>> for x, y in DataLoader(ds, batch_size=2):
...     print(x.shape, y.tolist())
ember.Size([2, 2]) [0, 1]
ember.Size([1, 2]) [0]

See ``docs/data.md`` for workers, seeding, shared-memory transport and faults.
"""
from ._utils.collate import default_collate, default_convert
from ._utils.fetch import _DatasetKind
from ._utils.worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate",
    "default_convert", "get_worker_info", "random_split",
]
