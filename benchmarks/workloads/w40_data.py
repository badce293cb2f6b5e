"""ember.utils.data: collation against a numpy stack, worker speed-up on slow items, and the
shared-memory transport against plain pickles.

Through the runner: ``python -m benchmarks --only data``. For the ratios the issue asks about
(2 workers vs 0; collate vs numpy stack; shared memory vs pickle), run this module:
``python -m benchmarks.workloads.w40_data``.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

import ember
from benchmarks.registry import workload
from ember.utils.data import DataLoader, Dataset, default_collate

ITEM_SECONDS = 0.005
ITEMS = 256
IMAGE = (3, 224, 224)


class SlowItems(Dataset):
    """Each item takes 5 ms: ``sleep`` (waiting on storage or the network) or ``spin`` (decoding,
    augmenting: pure CPU). ``make(i)`` builds the sample in the framework under test."""

    def __init__(self, make, mode="sleep", n=ITEMS):
        self.make, self.mode, self.n = make, mode, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.mode == "sleep":
            time.sleep(ITEM_SECONDS)
        else:
            end = time.perf_counter() + ITEM_SECONDS
            while time.perf_counter() < end:
                pass
        return self.make(i)


class Images(Dataset):
    """Ready-made 3x224x224 float32 images: loading costs only collation and transport."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def _ember_sample(i):
    return ember.full((3, 32, 32), float(i)), i


def _epoch(loader):
    def run():
        for _ in loader:
            pass
    return run


def _torch_sample(torch):
    def make(i):
        return torch.full((3, 32, 32), float(i)), i
    return make


def _images(n=64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(IMAGE, dtype=np.float32) for _ in range(n)]


@workload("data: collate 64 images 3x224x224 f32", "data")
def collate_images(ctx):
    arrays = _images()
    tensors = [ember.from_numpy(a) for a in arrays]
    out = {"numpy": lambda: np.stack(arrays), "ember": lambda: default_collate(tensors)}
    if ctx.torch is not None:
        from torch.utils.data import default_collate as tcollate
        tt = [ctx.torch.from_numpy(a) for a in arrays]
        out["torch"] = lambda: tcollate(tt)
    return out


def _slow_loader_impls(ctx, mode, workers):
    kw = dict(batch_size=16, num_workers=workers)
    out = {"ember": _epoch(DataLoader(SlowItems(_ember_sample, mode), **kw)),
           "note": f"{ITEMS} items of 5 ms ({mode}), batch 16, num_workers={workers}; one epoch per call"}
    if ctx.torch is not None:
        from torch.utils.data import DataLoader as TLoader
        out["torch"] = _epoch(TLoader(SlowItems(_torch_sample(ctx.torch), mode), **kw))
    return out


@workload("data: 5 ms items (sleep), workers=0", "data", quick=False)
def slow_sleep_0(ctx):
    return _slow_loader_impls(ctx, "sleep", 0)


@workload("data: 5 ms items (sleep), workers=2", "data", quick=False)
def slow_sleep_2(ctx):
    return _slow_loader_impls(ctx, "sleep", 2)


@workload("data: 5 ms items (cpu), workers=0", "data", quick=False)
def slow_spin_0(ctx):
    return _slow_loader_impls(ctx, "spin", 0)


@workload("data: 5 ms items (cpu), workers=2", "data", quick=False)
def slow_spin_2(ctx):
    return _slow_loader_impls(ctx, "spin", 2)


def _transport_impls(ctx, transport):
    arrays = _images(128)
    ds = Images([ember.from_numpy(a) for a in arrays], list(range(128)))
    loader = DataLoader(ds, batch_size=64, num_workers=1)

    def run():
        old = os.environ.get("EMBER_DATALOADER_TRANSPORT")
        os.environ["EMBER_DATALOADER_TRANSPORT"] = transport
        try:
            for _ in loader:
                pass
        finally:
            if old is None:
                del os.environ["EMBER_DATALOADER_TRANSPORT"]
            else:
                os.environ["EMBER_DATALOADER_TRANSPORT"] = old
    out = {"ember": run, "note": f"2 batches of 64x3x224x224 f32 (38.5 MB each) from 1 worker, {transport}"}
    if ctx.torch is not None:
        from torch.utils.data import DataLoader as TLoader
        tds = Images([ctx.torch.from_numpy(a) for a in arrays], list(range(128)))
        out["torch"] = _epoch(TLoader(tds, batch_size=64, num_workers=1))
    return out


@workload("data: transport 64x3x224x224, shared memory", "data", quick=False)
def transport_shm(ctx):
    return _transport_impls(ctx, "shm")


@workload("data: transport 64x3x224x224, pickle", "data", quick=False)
def transport_pickle(ctx):
    return _transport_impls(ctx, "pickle")


def _median(fn, reps: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    """Print the ratios the data loader is held to (ember first, without torch in the process: a
    bigger parent process makes every fork slower; then torch's figures)."""
    from benchmarks.registry import Context
    ctx = Context("cpu_numpy", "cpu", None)
    c = collate_images(ctx)
    t_np, t_em = _median(c["numpy"], 15), _median(c["ember"], 15)
    print(f"collate 64x3x224x224: numpy stack {t_np * 1e3:.2f} ms, default_collate {t_em * 1e3:.2f} ms, "
          f"ratio {t_em / t_np:.2f} (target <= 1.5)")
    for mode in ("sleep", "spin"):
        t0 = _median(_slow_loader_impls(ctx, mode, 0)["ember"], 3)
        t2 = _median(_slow_loader_impls(ctx, mode, 2)["ember"], 3)
        ds = SlowItems(_ember_sample, mode)
        tp = _median(_epoch(DataLoader(ds, batch_size=16, num_workers=2, persistent_workers=True)), 3)
        print(f"5 ms items ({mode}), {ITEMS} per epoch, batch 16: workers=0 {t0:.3f} s, workers=2 {t2:.3f} s "
              f"(speed-up {t0 / t2:.2f}x, target >= 1.8), persistent workers=2 {tp:.3f} s ({t0 / tp:.2f}x)")
    ts = _median(_transport_impls(ctx, "shm")["ember"], 5)
    tp = _median(_transport_impls(ctx, "pickle")["ember"], 5)
    print(f"2 batches of 64x3x224x224 from 1 worker (one epoch): shared memory {ts * 1e3:.1f} ms, pickle "
          f"{tp * 1e3:.1f} ms ({tp / ts:.2f}x)")
    try:
        import torch
    except ImportError:
        return
    ctx = Context("cpu_numpy", "cpu", torch)
    print(f"torch: default_collate {_median(collate_images(ctx)['torch'], 15) * 1e3:.2f} ms; "
          f"5 ms items (sleep) workers=0 {_median(_slow_loader_impls(ctx, 'sleep', 0)['torch'], 3):.3f} s, "
          f"workers=2 {_median(_slow_loader_impls(ctx, 'sleep', 2)['torch'], 3):.3f} s; "
          f"transport {_median(_transport_impls(ctx, 'shm')['torch'], 5) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
