"""``ember.nn.parallel``: ``DistributedDataParallel`` (many processes) and ``DataParallel``
(one process, several devices), with their building blocks ``replicate``, ``scatter``,
``parallel_apply`` and ``gather``."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter, scatter_kwargs

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "parallel_apply", "replicate",
           "scatter", "scatter_kwargs"]
