"""ember.distributed speed, run under MPI (it cannot be a normal workload: it needs N processes)::

    OMP_NUM_THREADS=1 python -m ember.distributed.run --nproc 2 benchmarks/distributed_bench.py [--mb 100] [--reps 5]

1. all_reduce of ``--mb`` MB of float32 across the ranks: ember (argument checks on and off, and
   async + wait) against raw mpi4py ``Allreduce`` on a numpy buffer; also a 1 KB all_reduce (latency).
   Target: within 1.5x of raw mpi4py.
2. DDP on the MLP workload (784-512-256-10, SGD, batch 128 per rank): the DDP step against the
   plain step (of the slowest rank: a synchronous job waits for it) plus a raw all-reduce of all
   the gradients. Target: under 20% over that sum.

Every rank runs each measurement at the same time (so they share the machine alike); rank 0
prints medians.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def timed(fn, reps: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` over ``reps`` runs, every rank starting together."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timed_round_robin(fns: list, reps: int) -> list:
    """Median times of several functions measured in turn, one call of each per round."""
    for fn in fns:
        fn()
    times: list = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def bench_all_reduce(comm, MPI, mb: float, reps: int) -> list:
    n = int(mb * 1e6 / 4)
    raw = np.ones(n, dtype=np.float32)
    t = ember.ones(n)
    def unchecked(fn):
        def run():
            dist.set_collective_checks(False)
            try:
                fn()
            finally:
                dist.set_collective_checks(True)
        return run

    small_raw, small = np.ones(256, dtype=np.float32), ember.ones(256)
    big = timed_round_robin([
        lambda: comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM),
        lambda: dist.all_reduce(t),
        unchecked(lambda: dist.all_reduce(t)),
        lambda: dist.all_reduce(t, async_op=True).wait(),
        lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG)], reps)
    tiny = timed_round_robin([
        lambda: comm.Allreduce(MPI.IN_PLACE, small_raw, op=MPI.SUM),
        lambda: dist.all_reduce(small),
        unchecked(lambda: dist.all_reduce(small))], reps * 40)
    return [
        (f"raw mpi4py Allreduce {mb:g} MB", big[0], None),
        (f"ember all_reduce {mb:g} MB (checks on)", big[1], big[0]),
        (f"ember all_reduce {mb:g} MB (checks off)", big[2], big[0]),
        (f"ember all_reduce {mb:g} MB async + wait", big[3], big[0]),
        (f"ember all_reduce {mb:g} MB AVG (SUM, then a host division)", big[4], big[0]),
        ("raw mpi4py Allreduce 1 KB", tiny[0], None),
        ("ember all_reduce 1 KB (checks on)", tiny[1], tiny[0]),
        ("ember all_reduce 1 KB (checks off)", tiny[2], tiny[0]),
    ]


def _mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def bench_ddp(comm, MPI, reps: int) -> list:
    rng = np.random.default_rng(dist.get_rank())
    x = ember.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, 128))
    loss_fn = nn.CrossEntropyLoss()

    def stepper(model):
        opt = ember.optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        return step

    ember.manual_seed(0)
    plain = _mlp()
    ember.manual_seed(0)
    ddp = DDP(_mlp())
    ddp_view = DDP(_mlp(), gradient_as_bucket_view=True)
    nparams = sum(p.numel() for p in plain.parameters())
    grads = np.ones(nparams, dtype=np.float32)
    plain_step = stepper(plain)

    def plain_synced():  # a synchronous job waits for its slowest rank at every step
        plain_step()
        comm.Barrier()

    # interleaved, so that the machine's load at any moment weighs on every variant alike
    t_plain, t_synced, t_ar, t_ddp, t_view = timed_round_robin(
        [plain_step, plain_synced, lambda: comm.Allreduce(MPI.IN_PLACE, grads, op=MPI.SUM), stepper(ddp),
         stepper(ddp_view)], reps)
    base = t_synced + t_ar
    return [
        (f"plain MLP step (b128, {nparams} params)", t_plain, None),
        ("plain MLP step, slowest rank (step + barrier)", t_synced, None),
        (f"raw Allreduce of the gradients ({nparams * 4 / 1e6:.2f} MB)", t_ar, None),
        ("reference: slowest plain step + raw all-reduce", base, None),
        (f"DDP step ({len(ddp._buckets)} buckets)", t_ddp, base),
        ("DDP step, gradient_as_bucket_view", t_view, base),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ddp-reps", type=int, default=30)
    args = ap.parse_args()
    dist.init_process_group()
    from mpi4py import MPI
    comm = MPI.COMM_WORLD.Dup()
    rows = bench_all_reduce(comm, MPI, args.mb, args.reps) + bench_ddp(comm, MPI, args.ddp_reps)
    if dist.get_rank() == 0:
        print(f"ember.distributed over {MPI.Get_library_version().splitlines()[0].strip()}, "
              f"{dist.get_world_size()} ranks, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
        print(f"{'what':<52} {'median':>12} {'vs reference':>14}")
        for name, t, ref in rows:
            unit = f"{t * 1e3:9.3f} ms" if t >= 1e-3 else f"{t * 1e6:9.1f} us"
            rel = f"{t / ref:8.2f}x" if ref else ""
            print(f"{name:<52} {unit:>12} {rel:>14}")
    comm.Free()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
