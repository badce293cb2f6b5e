"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

Two iterators do the work: :class:`_SingleProcessDataLoaderIter` (``num_workers=0``) fetches in
the calling process; :class:`_MultiProcessingDataLoaderIter` hands indices to worker processes
(``_utils.pool``), keeps up to ``prefetch_factor`` batches per worker in flight, and returns
batches in sampler order (or as they come, with ``in_order=False``). Batches come back through
shared memory (``_utils.shm``).
"""
from __future__ import annotations

import math
import multiprocessing
import os
import warnings
import weakref
from typing import Callable, Generic, Iterable, TypeVar

from . import _utils
from ._utils import shm
from ._utils.collate import default_collate, default_convert
from ._utils.errors import ExceptionWrapper
from ._utils.fetch import _DatasetKind
from ._utils.pin_memory import pin_memory as _pin_memory
from ._utils.pool import WorkerPool
from ._utils.worker import get_worker_info
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _InfiniteConstantSampler
from ...ops.creation import empty
from ... import _dtype as D

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


def _draw_base_seed(generator) -> int:
    """A random non-negative int64 from ``generator`` (ember's default generator when None)."""
    return int(empty((), dtype=D.int64).random_(generator=generator).item())


def _checked_worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    """Validate the multi-process options; returns ``prefetch_factor`` with its default (2 with
    workers, None without)."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise TypeError(f"num_workers option should be an int, but got num_workers={num_workers!r}")
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                         "multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    in_process = num_workers == 0
    if timeout > 0 and in_process:
        # PyTorch fails later with an AssertionError on iter(); a batch made in the calling
        # process cannot be interrupted, so refuse the combination up front
        raise ValueError(f"timeout option (timeout={timeout}) needs multi-process loading (num_workers > 0), "
                         "but got num_workers=0")
    if prefetch_factor is None:
        prefetch_factor = None if in_process else 2
    elif in_process:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    elif isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) or prefetch_factor < 1:
        # PyTorch accepts 0, which never requests a batch and hangs
        raise ValueError(f"prefetch_factor option should be a positive integer, but got "
                         f"prefetch_factor={prefetch_factor!r}")
    if persistent_workers and in_process:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _refuse_sampling_options(shuffle, sampler, batch_sampler) -> None:
    """An IterableDataset orders its own samples: shuffle, sampler and batch_sampler must be unset."""
    for name, value, unset in (("shuffle", shuffle, shuffle in (False, None)), ("sampler", sampler, sampler is None),
                               ("batch_sampler", batch_sampler, batch_sampler is None)):
        if not unset:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                             f"{name}={value}")


def _checked_batching(batch_size, shuffle, sampler, batch_sampler, drop_last):
    """Check that the sampling options fit together; returns ``(batch_size, drop_last)``, both
    cleared when a ``batch_sampler`` makes the batches."""
    if shuffle and sampler is not None:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is None:
        if drop_last and batch_size is None:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        return batch_size, drop_last
    if batch_size != 1 or shuffle or sampler is not None or drop_last:
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                         "drop_last")
    return None, False


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches.

    Args:
        dataset: a map-style :class:`Dataset` (``__getitem__``/``__len__``) or an
            :class:`IterableDataset`.
        batch_size: samples per batch (default 1); ``None`` turns automatic batching off, so each
            item is one sample passed through ``collate_fn`` (default :func:`default_convert`).
        shuffle: reshuffle every epoch (a :class:`RandomSampler` drawing from ``generator``).
        sampler: where keys come from (excludes ``shuffle``).
        batch_sampler: yields lists of keys (excludes ``batch_size``, ``shuffle``, ``sampler``,
            ``drop_last``).
        num_workers: worker processes (0: load in this process).
        collate_fn: turns a list of samples into a batch (default :func:`default_collate`).
        pin_memory: call ``Tensor.pin_memory()`` on each batch; what that means is the backend's
            decision (a no-op on ``cpu_numpy``).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers before raising RuntimeError
            (0: forever; needs ``num_workers > 0``).
        worker_init_fn: called with the worker id in each worker after seeding, before loading.
        multiprocessing_context: a start method name (``"fork"``, ``"spawn"``, ``"forkserver"``)
            or a context; default: the platform's default.
        generator: the ``ember.Generator`` for the random sampler and the workers' base seed.
        prefetch_factor: batches in flight per worker (default 2; needs ``num_workers > 0``).
        persistent_workers: keep the workers alive between epochs.
        pin_memory_device: the device argument passed to ``pin_memory``.
        in_order: return batches in sampler order (False: as soon as any worker has one).

    Each worker seeds ember's default generators and python's ``random`` with
    ``base_seed + worker_id`` and numpy's global generator from both, where ``base_seed`` is drawn
    from ``generator`` for every epoch: random augmentations differ between workers and repeat
    for the same seed.
    """

    __initialized = False

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        prefetch_factor = _checked_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        # num_workers first: the multiprocessing_context setter reads it
        for attr, value in (("dataset", dataset), ("num_workers", num_workers),
                            ("prefetch_factor", prefetch_factor), ("pin_memory", pin_memory),
                            ("pin_memory_device", pin_memory_device), ("timeout", timeout),
                            ("worker_init_fn", worker_init_fn), ("multiprocessing_context", multiprocessing_context),
                            ("in_order", in_order)):
            setattr(self, attr, value)
        iterable = isinstance(dataset, IterableDataset)
        self._dataset_kind = _DatasetKind.Iterable if iterable else _DatasetKind.Map
        if iterable:
            _refuse_sampling_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        batch_size, drop_last = _checked_batching(batch_size, shuffle, sampler, batch_sampler, drop_last)
        if sampler is None:
            sampler = (_InfiniteConstantSampler() if iterable else
                       RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset))
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        for attr, value in (("batch_size", batch_size), ("drop_last", drop_last), ("sampler", sampler),
                            ("batch_sampler", batch_sampler), ("generator", generator)):
            setattr(self, attr, value)
        if collate_fn is None:  # batches are collated, single samples only converted
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn, self.persistent_workers = collate_fn, persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    # -- configuration ----------------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        self.__multiprocessing_context = self._as_context(multiprocessing_context)

    def _as_context(self, ctx):
        """None, or a multiprocessing context (a start method's name is looked up)."""
        if ctx is None:
            return None
        if self.num_workers <= 0:
            raise ValueError("multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={self.num_workers}")
        if isinstance(ctx, str):
            methods = multiprocessing.get_all_start_methods()
            if ctx not in methods:
                raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                 f"{methods!r}, but got multiprocessing_context={ctx!r}")
            ctx = multiprocessing.get_context(ctx)
        if not isinstance(ctx, multiprocessing.context.BaseContext):
            raise TypeError("multiprocessing_context option should be a valid context object or a string "
                            f"specifying the start method, but got multiprocessing_context={ctx}")
        return ctx

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the fetchers read: lists of keys with automatic batching, single keys without
        return self.batch_sampler if self._auto_collation else self.sampler

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than this process may use CPUs."""
        if self.num_workers <= 1:
            return
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count()
        if cpus is not None and self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. The suggested "
                          f"maximum for this system is {cpus} (the CPUs this process may use); more workers than CPUs "
                          "slow loading down.", UserWarning, stacklevel=3)

    # -- iteration ----------------------------------------------------------------------------------
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        """An iterator over the batches of one epoch. With ``persistent_workers`` the same
        iterator (and its workers) is reset and returned every epoch."""
        if self.persistent_workers and self.num_workers > 0:
            it = self._iterator
            if it is None or it._pool.closed:
                self._iterator = self._get_iterator()
            else:
                it._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        """Batches per epoch: ``len(batch_sampler)``, or for an IterableDataset its ``len()``
        divided by ``batch_size`` (rounded up, or down with ``drop_last``)."""
        if self._dataset_kind == _DatasetKind.Iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            self._IterableDataset_len_called = length
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    # the loader's settings an iterator copies when it is made: (own attribute, loader attribute)
    _COPIED = (("_dataset", "dataset"), ("_dataset_kind", "_dataset_kind"), ("_auto_collation", "_auto_collation"),
               ("_IterableDataset_len_called", "_IterableDataset_len_called"), ("_drop_last", "drop_last"),
               ("_index_sampler", "_index_sampler"), ("_num_workers", "num_workers"),
               ("_prefetch_factor", "prefetch_factor"), ("_pin_memory", "pin_memory"), ("_timeout", "timeout"),
               ("_collate_fn", "collate_fn"), ("_persistent_workers", "persistent_workers"))

    def __init__(self, loader: DataLoader) -> None:
        for mine, theirs in self._COPIED:
            setattr(self, mine, getattr(loader, theirs))
        self._pin_memory_device = loader.pin_memory_device or None  # "" means the default
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_base_seed(loader.generator)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded == self._IterableDataset_len_called + 1):  # once per epoch
            warnings.warn(
                f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called} "
                f"batches (when accessing len(dataloader)), but {self._num_yielded} have been fetched. With "
                "num_workers > 0 this usually means the dataset does not shard its stream between workers (see "
                "ember.utils.data.get_worker_info).", UserWarning, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")

    def _finish(self, data):
        if self._pin_memory:
            data = _pin_memory(data, self._pin_memory_device)
        return data


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetch and collate in the calling process."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._dataset_fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self._dataset, self._auto_collation,
                                                            self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._dataset_fetcher.fetch(index)  # may raise StopIteration (IterableDataset)
        return self._finish(data)


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Fetch in worker processes.

    Each task is ``(epoch, idx, index)``, sent round-robin (with ``in_order=False``: to the least
    busy worker) while fewer than ``prefetch_factor * num_workers`` are in flight. Replies are kept
    by ``idx`` until their turn. ``epoch`` grows on every reset of persistent workers, so replies
    to an abandoned epoch are recognised and dropped.
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._pool = WorkerPool(
            ctx, self._num_workers, dataset_kind=self._dataset_kind, dataset=self._dataset,
            auto_collation=self._auto_collation, collate_fn=self._collate_fn, drop_last=self._drop_last,
            base_seed=self._base_seed, worker_init_fn=loader.worker_init_fn, transport=shm.default_transport(),
            grace=_utils.SHUTDOWN_GRACE)
        self._workers = self._pool.procs
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        self._epoch = 0
        self._reset(loader, first_iter=True)

    @property
    def _worker_pids(self) -> list:
        return self._pool.pids

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        n = self._num_workers
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_worker: dict = {}  # idx -> worker of each task in flight
        self._outstanding = [0] * n
        self._active = [True] * n  # False once the worker's IterableDataset is exhausted
        self._results: dict = {}  # idx -> batch or ExceptionWrapper, waiting for its turn
        self._sampler_done = False
        self._exhausted = False
        self._next_worker = 0
        if not first_iter:
            self._epoch += 1
            for w in range(n):
                self._pool.send(w, ("resume", self._epoch))
        for _ in range(self._prefetch_factor * n):
            self._try_put_index()

    def _pick_worker(self):
        n = self._num_workers
        if self._in_order:
            for _ in range(n):
                w = self._next_worker
                self._next_worker = (w + 1) % n
                if self._active[w]:
                    return w
            return None
        live = [w for w in range(n) if self._active[w]]
        return min(live, key=self._outstanding.__getitem__) if live else None

    def _try_put_index(self) -> None:
        if self._sampler_done or len(self._task_worker) >= self._prefetch_factor * self._num_workers:
            return
        w = self._pick_worker()
        if w is None:
            return
        try:
            index = self._next_index()
        except StopIteration:
            self._sampler_done = True
            return
        idx = self._send_idx
        self._pool.send(w, ("task", self._epoch, idx, index))
        self._task_worker[idx] = w
        self._outstanding[w] += 1
        self._send_idx += 1

    def _next_data(self):
        try:
            return self._next_batch()
        except KeyboardInterrupt:  # Ctrl-C anywhere in here: stop the workers before it propagates
            self._shutdown_workers()
            raise

    def _next_batch(self):
        if self._pool.closed:
            if self._exhausted:
                raise StopIteration
            raise RuntimeError("DataLoader worker processes were shut down after an error; start a new epoch "
                               "with iter(loader)")
        while True:
            if self._in_order:
                # skip tasks that ended without a batch (an exhausted IterableDataset worker)
                while (self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._results
                       and self._rcvd_idx not in self._task_worker):
                    self._rcvd_idx += 1
                if self._rcvd_idx in self._results:
                    data = self._results.pop(self._rcvd_idx)
                    self._rcvd_idx += 1
                    return self._process(data)
            elif self._results:
                return self._process(self._results.pop(next(iter(self._results))))
            if not self._task_worker:
                self._exhausted = True
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            self._receive()

    def _receive(self) -> None:
        w, msg = self._pool.recv(self._timeout)
        kind, epoch, idx = msg[0], msg[1], msg[2]
        if epoch != self._epoch:  # a reply to an abandoned epoch
            if kind == "data":
                shm.discard(msg[4])
            return
        self._task_worker.pop(idx, None)
        self._outstanding[w] -= 1
        if kind == "data":
            try:
                self._results[idx] = shm.decode(msg[3], msg[4], msg[5])
            except Exception:
                self._results[idx] = ExceptionWrapper(where="while receiving a batch in the main process")
        elif kind == "error":
            self._results[idx] = msg[3]
        else:  # "stop": this worker's IterableDataset is exhausted
            self._active[w] = False

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return self._finish(data)

    def _shutdown_workers(self) -> None:
        self._finalizer()
