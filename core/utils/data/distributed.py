"""``DistributedSampler``: each of ``num_replicas`` processes reads its own share of a dataset."""
from __future__ import annotations

import importlib
import math
from typing import Iterator, TypeVar

from .sampler import Sampler
from ...ops.random import Generator, randperm

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DistributedSampler"]


def _process_group(what: str) -> int:
    """``get_world_size()`` or ``get_rank()`` of ember's default process group, raising PyTorch's
    errors when there is no distributed package or no initialized group."""
    try:
        # import_module (not ``ember.distributed``) so that a module installed in sys.modules is found
        dist = importlib.import_module("ember.distributed")
    except ModuleNotFoundError as e:
        if e.name not in ("ember.distributed", "ember"):
            raise
        raise RuntimeError("Requires distributed package to be available") from None
    is_available = getattr(dist, "is_available", None)
    if is_available is not None and not is_available():
        raise RuntimeError("Requires distributed package to be available")
    is_initialized = getattr(dist, "is_initialized", None)
    if is_initialized is not None and not is_initialized():
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return int(getattr(dist, what)())


class DistributedSampler(Sampler[T_co]):
    """The keys of ``dataset`` that belong to replica ``rank`` of ``num_replicas``.

    Each epoch the keys are shuffled (``shuffle=True``) with a generator seeded with
    ``seed + epoch`` (the same on every replica; call :meth:`set_epoch` at the start of each
    epoch), padded by repeating keys so that every replica gets ``ceil(len / num_replicas)``
    (or, with ``drop_last=True``, cut to a multiple of ``num_replicas``), and replica ``rank``
    takes every ``num_replicas``-th key from position ``rank``.

    ``num_replicas`` and ``rank`` default to the world size and rank of ``ember.distributed``'s
    default process group.

    >>> s = DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False)
    >>> list(s)
    [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _process_group("get_world_size")
        if rank is None:
            rank = _process_group("get_rank")
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) or num_replicas <= 0:
            raise ValueError(f"num_replicas should be a positive integer value, but got num_replicas={num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch, which seeds this epoch's shuffle (call it before each epoch)."""
        self.epoch = epoch
