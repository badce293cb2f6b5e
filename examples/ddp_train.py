"""Data-parallel training with ember.distributed: the digits CNN of train_digits.py on N processes.

    pip install mpi4py mpich                      # MPI from PyPI (or use your system's MPI)
    mpiexec -n 2 python examples/ddp_train.py
    python -m ember.distributed.run --nproc 2 examples/ddp_train.py --epochs 5
    mpiexec -n 2 python examples/ddp_train.py --smoke   # a few seconds; checks loss and replicas
    python examples/ddp_train.py                  # also runs alone, as a job of one process

Every process builds the same model; ``DistributedDataParallel`` broadcasts rank 0's weights on
wrap and averages the gradients over the processes during ``backward()``, so after every step
all replicas hold the same weights. A ``DistributedSampler`` gives each process its own share
of every epoch (``set_epoch`` reshuffles). The global batch is ``--batch-size`` (split over the
processes), so the learning rate of the one-process run still fits. Losses and accuracies are
all-reduced for the report, rank 0 prints and writes the checkpoint, and at the end the
replicas are compared bit for bit.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # N processes share the cores (see train_digits.py)

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from ember.utils.data import DataLoader, DistributedSampler  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_digits import RUNS, Digits, DigitNet, load_digits, split  # noqa: E402  (the same data and model)


def all_mean(*values: float) -> list:
    """The mean over the processes of each number."""
    t = ember.tensor(values, dtype=ember.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return (t / dist.get_world_size()).tolist()


def replicas_identical(model) -> bool:
    """Whether every parameter is bit for bit the same on every process (max == min)."""
    for p in model.parameters():
        hi, lo = p.detach().clone(), p.detach().clone()
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        if not ember.equal(hi, lo):
            return False
    return True


def evaluate(model, loader) -> tuple[float, float]:
    """(loss, accuracy) over this process's share of the test set, averaged over processes."""
    model.eval()
    total, correct, seen = 0.0, 0, 0
    with ember.no_grad():
        for x, y in loader:
            logits = model(x)
            total += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    t = ember.tensor([total, correct, seen], dtype=ember.float64)
    dist.all_reduce(t)
    total, correct, seen = t.tolist()
    return total / seen, correct / seen


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Data-parallel training of the digits CNN (run under mpiexec).")
    p.add_argument("--epochs", type=int, default=None, help="default 15; 1 with --smoke")
    p.add_argument("--batch-size", type=int, default=32, help="global batch, split over the processes")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--gamma", type=float, default=0.85)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", type=Path, default=RUNS / "ddp_digits.pt")
    p.add_argument("--smoke", action="store_true", help="a short run that fails unless the loss fell")
    args = p.parse_args(argv)
    epochs = args.epochs or (1 if args.smoke else 15)

    try:
        dist.init_process_group()
    except (RuntimeError, ImportError) as e:
        sys.exit(f"ddp_train.py: cannot start ember.distributed: {e}")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        sys.exit(f"ddp_train.py: --batch-size {args.batch_size} does not split over {world} processes")

    def say(*a):
        if rank == 0:
            print(*a, flush=True)

    ember.manual_seed(args.seed + rank)  # different on purpose: DDP makes rank 0's weights everyone's
    images, labels = load_digits()
    train_idx, test_idx = split(len(labels))
    if args.smoke:
        train_idx = train_idx[:320]
    train_set = Digits(images[train_idx], labels[train_idx], augment=True)
    test_set = Digits(images[test_idx], labels[test_idx])
    sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed, drop_last=True)
    train_loader = DataLoader(train_set, batch_size=args.batch_size // world, sampler=sampler, drop_last=True)
    test_loader = DataLoader(test_set, batch_size=256, sampler=DistributedSampler(test_set, shuffle=False))
    # (the test sampler pads the shards to equal size by repeating a few images: fine for a report)

    model = DDP(DigitNet())
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = ember.optim.lr_scheduler.ExponentialLR(optimizer, gamma=args.gamma)
    loss_before, _ = evaluate(model, test_loader)
    say(f"{world} process{'es' if world > 1 else ''}: {len(sampler)} training images each per epoch, "
        f"batch {args.batch_size // world} each ({args.batch_size} in all)")

    started = time.perf_counter()
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every process
        model.train()
        total, correct, seen = 0.0, 0, 0
        for x, y in train_loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()          # gradients are averaged over the processes here
            optimizer.step()
            total += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
        scheduler.step()
        train_loss, train_acc = all_mean(total / seen, correct / seen)
        test_loss, test_acc = evaluate(model, test_loader)
        say(f"epoch {epoch:2d}/{epochs}  train loss {train_loss:.4f} acc {train_acc:6.2%}  "
            f"test loss {test_loss:.4f} acc {test_acc:6.2%}")
        if rank == 0:  # one writer; module.state_dict() has the plain model's keys (no "module.")
            args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
            ember.save({"epoch": epoch, "model": model.module.state_dict()}, args.checkpoint)
        dist.barrier()

    same = replicas_identical(model.module)
    say(f"test accuracy {test_acc:.2%} after {epochs} epochs in {time.perf_counter() - started:.1f}s; "
        f"replicas identical: {same}; checkpoint {args.checkpoint}")
    status = 0
    if not same:
        say("FAILED: the replicas' parameters differ")
        status = 1
    if args.smoke and not (math.isfinite(test_loss) and test_loss < loss_before):
        say(f"smoke test FAILED: test loss went from {loss_before:.4f} to {test_loss:.4f}")
        status = 1
    elif args.smoke:
        say(f"smoke test passed: test loss fell from {loss_before:.4f} to {test_loss:.4f}")
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
