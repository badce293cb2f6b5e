"""DataLoader with worker processes: same batches as in-process loading, shared-memory transport,
worker info, IterableDataset sharding, per-worker seeding, persistent workers, in_order, spawn.

Datasets live at module level so that ``spawn`` workers can import them.
"""
import mmap
import os
import random
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info


# -- helpers (also used by test_data_faults.py) ----------------------------------------------------
def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - no /proc
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def wait_gone(pids, timeout: float = 5.0) -> list:
    """The pids still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [p for p in left if alive(p)]
    return left


def shm_left(pids) -> list:
    """Shared-memory segments created by these worker pids that still exist."""
    prefixes = tuple(f"ember_{p:x}_" for p in pids)
    try:
        return [f for f in os.listdir("/dev/shm") if f.startswith(prefixes)]
    except FileNotFoundError:  # pragma: no cover - no /dev/shm
        return []


def is_shared(t) -> bool:
    """True when the tensor's memory is a mapping (the shared-memory transport), not a copy."""
    a = t.numpy()
    while a is not None:
        if isinstance(a, mmap.mmap):
            return True
        a = getattr(a, "base", None)
    return False


# -- datasets ----------------------------------------------------------------------------------------
class Samples(Dataset):
    """Samples of mixed types: a tensor, a numpy array, an int, a float, a string."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": ember.full((2, 3), float(i)), "a": np.arange(4, dtype=np.int16) + i, "i": i, "f": i / 2,
                "s": f"s{i}"}


class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "n": info.num_workers, "seed": info.seed, "same": info.dataset is self,
                "pid": os.getpid()}


class RandomAug(Dataset):
    """Random 'augmentations' from the three global generators a worker seeds."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return [random.random(), float(np.random.rand()), ember.rand(()).item()]


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        k, w = (1, 0) if info is None else (info.num_workers, info.id)
        return iter(range(w, self.n, k))


class Unsharded(IterableDataset):
    def __iter__(self):
        return iter(range(3))


class SlowFirst(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.6)
        return i


class Tensors(Dataset):
    def __init__(self, requires_grad=False, non_leaf=False):
        self.rg, self.nl = requires_grad, non_leaf

    def __len__(self):
        return 2

    def __getitem__(self, i):
        t = ember.full((3,), float(i), requires_grad=self.rg)
        return t * 2 if self.nl else t


def pairs(batch):
    return batch


def record_init(worker_id):
    os.environ["EMBER_TEST_WORKER_INIT"] = str(worker_id * 10)


class InitEnv(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return int(os.environ.get("EMBER_TEST_WORKER_INIT", "-1"))


# -- tests -------------------------------------------------------------------------------------------
def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert set(x) == set(y)
        assert x["x"].tolist() == y["x"].tolist() and x["x"].dtype == y["x"].dtype
        assert x["a"].tolist() == y["a"].tolist() and x["a"].dtype == ember.int16
        assert x["i"].tolist() == y["i"].tolist() and x["f"].dtype == ember.float64
        assert x["s"] == y["s"]


def test_workers_give_the_same_batches_as_the_main_process():
    ref = list(DataLoader(Samples(), batch_size=3))
    loader = DataLoader(Samples(), batch_size=3, num_workers=2)
    got = list(loader)
    _same(got, ref)
    assert len(loader) == 4


def test_batches_arrive_through_shared_memory_and_leave_nothing_behind():
    it = iter(DataLoader(Samples(), batch_size=4, num_workers=2))
    pids = it._worker_pids
    batches = list(it)
    assert all(is_shared(b["x"]) and is_shared(b["a"]) and is_shared(b["i"]) for b in batches)
    batches[0]["x"][0, 0, 0] = 42.0  # the batch is ordinary writable memory
    assert batches[0]["x"][0, 0, 0].item() == 42.0
    assert wait_gone(pids) == [] and shm_left(pids) == []


def test_pickle_transport_gives_the_same_batches(monkeypatch):
    monkeypatch.setenv("EMBER_DATALOADER_TRANSPORT", "pickle")
    got = list(DataLoader(Samples(), batch_size=4, num_workers=2))
    _same(got, list(DataLoader(Samples(), batch_size=4)))
    assert not is_shared(got[0]["x"])


def test_tensors_outside_default_collate_also_cross_through_shared_memory():
    out = list(DataLoader(Samples(4), batch_size=None, num_workers=1))  # no collation: per-sample tensors
    assert [o["x"][0, 0].item() for o in out] == [0.0, 1.0, 2.0, 3.0]
    assert isinstance(out[1]["a"], ember.Tensor) and all(is_shared(o["x"]) for o in out)
    custom = list(DataLoader(Samples(4), batch_size=2, num_workers=1, collate_fn=pairs))
    assert isinstance(custom[0], list) and custom[1][1]["x"][0, 0].item() == 3.0
    assert isinstance(custom[0][0]["a"], np.ndarray) and custom[0][0]["a"].tolist() == [0, 1, 2, 3]


def test_requires_grad_leaves_cross_and_non_leaves_are_refused():
    out = list(DataLoader(Tensors(requires_grad=True), batch_size=None, num_workers=1))
    assert out[1].requires_grad and out[1].is_leaf and out[1].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        list(DataLoader(Tensors(requires_grad=True, non_leaf=True), batch_size=None, num_workers=1))


def test_get_worker_info():
    assert get_worker_info() is None
    g = ember.Generator().manual_seed(0)
    it = iter(DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=g))
    base = it._base_seed
    out = list(it)
    assert [b["id"].tolist() for b in out] == [[0, 0], [1, 1], [0, 0], [1, 1]]
    assert all(b["n"].tolist() == [2, 2] for b in out)
    assert {b["seed"][0].item() - b["id"][0].item() for b in out} == {base}  # seed = base_seed + id
    assert all(b["same"].tolist() == [True, True] for b in out)
    assert len({b["pid"][0].item() for b in out}) == 2 and os.getpid() not in {b["pid"][0].item() for b in out}


def test_iterable_dataset_sharding():
    loader = DataLoader(Sharded(11), batch_size=2, num_workers=2)
    out = [b.tolist() for b in loader]
    assert sorted(sum(out, [])) == list(range(11))
    assert out[:2] == [[0, 2], [1, 3]]  # worker 0's batch, then worker 1's
    # without sharding each worker yields the whole stream (as PyTorch)
    assert sorted(sum((b.tolist() for b in DataLoader(Unsharded(), batch_size=2, num_workers=2)), [])) == \
        [0, 0, 1, 1, 2, 2]
    assert [b.tolist() for b in DataLoader(Sharded(5), batch_size=2, num_workers=2, drop_last=True)] == [[0, 2], [1, 3]]


def test_seeding_differs_per_worker_and_repeats_per_seed():
    def run(seed):
        return [b for batch in DataLoader(RandomAug(), batch_size=2, num_workers=2,
                                          generator=ember.Generator().manual_seed(seed))
                for b in zip(*(t.tolist() for t in batch))]
    a, b, c = run(7), run(7), run(8)
    assert a == b and a != c
    w0, w1 = a[0], a[2]  # first sample of worker 0 and of worker 1
    assert all(x != y for x, y in zip(w0, w1))  # python, numpy and ember generators all differ per worker
    ember.manual_seed(3)
    d = [t.tolist() for batch in DataLoader(RandomAug(), batch_size=4, num_workers=2) for t in batch]
    ember.manual_seed(3)
    assert d == [t.tolist() for batch in DataLoader(RandomAug(), batch_size=4, num_workers=2) for t in batch]


def test_worker_init_fn_runs_in_each_worker():
    out = [b.tolist() for b in DataLoader(InitEnv(), batch_size=1, num_workers=2, worker_init_fn=record_init)]
    assert out == [[0], [10], [0], [10]] and "EMBER_TEST_WORKER_INIT" not in os.environ


def test_persistent_workers_survive_epochs_and_an_abandoned_epoch():
    loader = DataLoader(Samples(12), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b["i"].tolist() for b in loader]
    pids = loader._iterator._worker_pids
    for b in loader:  # abandon an epoch after one batch: its replies in flight must be dropped
        break
    second = [b["i"].tolist() for b in loader]
    assert first == second == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert loader._iterator._worker_pids == pids and all(alive(p) for p in pids)
    sharded = DataLoader(Sharded(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in sharded] == [b.tolist() for b in sharded] == [[0, 2], [1, 3], [4], [5]]
    del loader, sharded
    assert wait_gone(pids) == [] and shm_left(pids) == []


def test_in_order_false_returns_ready_batches_first():
    got = [b.tolist() for b in DataLoader(SlowFirst(), batch_size=1, num_workers=2, in_order=False)]
    assert sorted(got) == [[i] for i in range(6)] and got[0] != [0]
    assert [b.tolist() for b in DataLoader(SlowFirst(), batch_size=1, num_workers=2)] == [[i] for i in range(6)]


def test_prefetch_factor_and_pin_memory():
    loader = DataLoader(Samples(6), batch_size=1, num_workers=2, prefetch_factor=1, pin_memory=True)
    it = iter(loader)
    assert len(it._task_worker) == 2  # prefetch_factor * num_workers tasks in flight
    assert [b["i"].item() for b in it] == list(range(6))
    it = iter(DataLoader(Samples(20), batch_size=1, num_workers=2, prefetch_factor=3))
    assert len(it._task_worker) == 6
    del it


def test_spawn_start_method():
    x = ember.arange(8.0).reshape(4, 2)
    loader = DataLoader(TensorDataset(x), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    out = [b[0].tolist() for b in loader]
    assert out == [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]]


def test_unpicklable_collate_fn_with_spawn_fails_clearly_and_starts_nothing():
    import multiprocessing
    import pickle
    before = set(multiprocessing.active_children())
    with pytest.raises((pickle.PicklingError, AttributeError)) as info:
        iter(DataLoader(Samples(4), num_workers=1, multiprocessing_context="spawn", collate_fn=lambda b: b))
    assert "define them at module level" in "".join(getattr(info.value, "__notes__", []))
    assert set(multiprocessing.active_children()) == before


class Kinds(Dataset):
    """Dtypes and layouts the transport must carry: bfloat16, bool, 0-d, non-contiguous, empty."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        m = ember.arange(6.0).reshape(2, 3) + i
        return {"bf16": ember.full((2,), i + 0.5, dtype=ember.bfloat16), "bool": ember.tensor([i % 2 == 0, True]),
                "scalar": ember.tensor(float(i)), "t": m.t(), "empty": ember.zeros(0, 4)}


def test_transport_carries_every_dtype_and_layout():
    for kw in (dict(batch_size=3), dict(batch_size=None)):
        ref = list(DataLoader(Kinds(), **kw))
        got = list(DataLoader(Kinds(), num_workers=1, **kw))
        for r, g in zip(ref, got):
            for k in r:
                assert g[k].dtype == r[k].dtype and g[k].shape == r[k].shape and g[k].tolist() == r[k].tolist(), k


def test_an_exhausted_iterator_keeps_raising_stop_iteration():
    it = iter(DataLoader(Samples(2), num_workers=1))
    assert len(list(it)) == 2
    for _ in range(2):
        with pytest.raises(StopIteration):
            next(it)


class Counted(Dataset):
    def __init__(self, counter):
        self.counter = counter

    def __len__(self):
        return 4

    def __getitem__(self, i):
        with self.counter.get_lock():
            self.counter.value += 1
        time.sleep(0.1)
        return i


def test_tasks_of_an_abandoned_epoch_are_not_run():
    import multiprocessing
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(Counted(counter), num_workers=1, prefetch_factor=4, persistent_workers=True,
                        multiprocessing_context="fork")
    for _ in loader:
        break  # tasks 1-3 are in flight; the worker is busy with task 1
    assert [b.item() for b in loader] == list(range(4))
    assert counter.value <= 7  # 2 of the first epoch (+1 of slack) + 4, not 4 + 4
    del loader
