"""Train a small CNN on handwritten digits with ember.

The data ship with the repository (examples/data/digits.csv.gz: the UCI optical-recognition
digits, 1797 images of 8x8 pixels; see examples/data/README.md), so nothing is downloaded.

    python examples/train_digits.py                   # 15 epochs, about 99% test accuracy
    python examples/train_digits.py --plot           # and a PNG of the curves (needs matplotlib)
    python examples/train_digits.py --resume --epochs 20   # 5 more epochs from the checkpoint
    python examples/train_digits.py --device opencl   # on the OpenCL backend
    python examples/train_digits.py --smoke           # a few seconds; checks that the loss fell

It shows the pieces of an ordinary PyTorch training script, written as one (``import ember as
torch`` would read the same): a ``Dataset`` with a random augmentation, a ``DataLoader`` with
worker processes, a CNN with batch norm and dropout, ``AdamW`` with an lr schedule, train and
eval modes, a tqdm progress bar (a plain line per epoch when tqdm is not installed), and a
checkpoint written with ``ember.save`` after every epoch, from which ``--resume`` continues
exactly where the run stopped (same weights, optimizer state, schedule and random streams).
"""
from __future__ import annotations

import argparse
import gzip
import math
import os
import sys
import time
from pathlib import Path

# The matrix products here are small: BLAS threads gain nothing on them, and where other work
# shares the cores (DataLoader workers, other programs) they spin and wait; on a busy 2-core
# machine the run took 3x the CPU time with them. Set before numpy loads; your setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader, Dataset  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "digits.csv.gz"
RUNS = HERE / "runs"
TEST_FRACTION = 0.2
SPLIT_SEED = 0  # the train/test split never changes, whatever --seed says


# ----------------------------------------------------------------------------------------------
# data


def load_digits(path: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """Images as float32 (N, 1, 8, 8) in [0, 1] and labels as int64 (N,).

    Each row of the file is 64 pixel counts (0..16, row by row) followed by the digit."""
    with gzip.open(path, "rt") as f:
        raw = np.loadtxt(f, delimiter=",", dtype=np.int64)
    images = (raw[:, :64].astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    return images, raw[:, 64]


def split(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed train and test indices: a seeded permutation, stratification left to chance."""
    order = np.random.default_rng(SPLIT_SEED).permutation(n)
    n_test = int(round(n * TEST_FRACTION))
    return order[n_test:], order[:n_test]


class Digits(Dataset):
    """A map-style dataset of (image, label) pairs.

    With ``augment=True`` each image is shifted by up to one pixel in each direction, at random,
    every time it is read. In a DataLoader worker the random numbers come from ember's default
    generator, which the loader seeds differently in every worker and every epoch."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, augment: bool = False):
        self.images = ember.from_numpy(np.ascontiguousarray(images))
        self.labels = ember.from_numpy(np.ascontiguousarray(labels))
        self.augment = augment

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        image = self.images[i]
        if self.augment:
            dy, dx = ember.randint(0, 3, (2,)).tolist()
            image = F.pad(image, (1, 1, 1, 1))[:, dy:dy + 8, dx:dx + 8]
        return image, self.labels[i]


# ----------------------------------------------------------------------------------------------
# model


class DigitNet(nn.Module):
    """Three 3x3 convolutions with batch norm, two 2x2 max pools, dropout and a linear layer:
    15k parameters, which is plenty for 8x8 digits."""

    def __init__(self, width: int = 16, num_classes: int = 10):
        super().__init__()
        w1, w2 = width, 2 * width
        self.features = nn.Sequential(
            nn.Conv2d(1, w1, 3, padding=1, bias=False), nn.BatchNorm2d(w1), nn.ReLU(),
            nn.Conv2d(w1, w2, 3, padding=1, bias=False), nn.BatchNorm2d(w2), nn.ReLU(),
            nn.MaxPool2d(2),                                                   # 8x8 -> 4x4
            nn.Conv2d(w2, w2, 3, padding=1, bias=False), nn.BatchNorm2d(w2), nn.ReLU(),
            nn.MaxPool2d(2),                                                   # 4x4 -> 2x2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(w2 * 4, num_classes))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.classifier(self.features(x))


# ----------------------------------------------------------------------------------------------
# training


def evaluate(model: nn.Module, loader: DataLoader, device: ember.device) -> tuple[float, float]:
    """(mean loss, accuracy) over a loader, in eval mode and without building a graph."""
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with ember.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total_loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
    return total_loss / seen, correct / seen


def train_one_epoch(model, loader, optimizer, device, bar) -> tuple[float, float]:
    """One pass over the training data in train mode; returns (mean loss, accuracy)."""
    model.train()
    total_loss, correct, seen = 0.0, 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * len(y)
        correct += (logits.argmax(1) == y).sum().item()
        seen += len(y)
        bar.update(1)
        bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.1%}")
    return total_loss / seen, correct / seen


class _PlainBar:
    """What the loop needs of a tqdm bar, for when tqdm is not installed: nothing per batch, one
    line per epoch (printed by the caller)."""

    def __init__(self, *args, **kwargs):
        pass

    def update(self, n=1):
        pass

    def set_postfix(self, **kwargs):
        pass

    def close(self):
        pass


def progress_bar(total: int, desc: str, mode: str):
    """A tqdm bar when tqdm is installed (``pip install tqdm``), else a silent stand-in.

    ``mode`` is ``--progress``: ``auto`` shows the bar only when stderr is a terminal (a log file
    would get a carriage-return update per refresh, dozens per epoch), ``always`` shows it anyway,
    refreshed at most every 10 s when stderr is not a terminal, ``never`` shows none."""
    tty = sys.stderr.isatty()
    if mode == "always" or (mode == "auto" and tty):
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(total=total, desc=desc, unit="batch", leave=False, dynamic_ncols=True,
                        mininterval=0.1 if tty else 10.0)
    return _PlainBar()


def save_checkpoint(path: Path, **state) -> None:
    # ember.save writes beside the target and renames, so a crash or Ctrl-C during the save
    # leaves the previous checkpoint intact.
    path.parent.mkdir(parents=True, exist_ok=True)
    ember.save(state, path)


def plot_history(history: list, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs[1:], [h["train_loss"] for h in history[1:]], "o-", label="train")
    ax_loss.plot(epochs, [h["test_loss"] for h in history], "o-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", yscale="log", title="loss")
    ax_acc.plot(epochs[1:], [100 * h["train_acc"] for h in history[1:]], "o-", label="train")
    ax_acc.plot(epochs, [100 * h["test_acc"] for h in history], "o-", label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("ember: DigitNet on the UCI handwritten digits")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def pick_device(name: str) -> ember.device:
    """The device to train on, or a clear exit when its backend is missing or unusable."""
    try:
        device = ember.device(name)
        ember.empty(1, device=device)  # loads the backend and opens the device
    except RuntimeError as e:
        hint = ""
        if name.split(":")[0] == "opencl":
            hint = ("\nFrom a checkout: pip install -e backends/opencl[pocl]   (PoCL runs OpenCL on the CPU);"
                    " `ember plugins` shows what is installed and why a device is unavailable.")
        sys.exit(f"train_digits.py: cannot use device {name!r}: {e}{hint}")
    return device


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a small CNN on the UCI handwritten digits with ember.")
    p.add_argument("--epochs", type=int, default=None, help="total epochs to train (default 15; 1 with --smoke)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3, help="initial learning rate of AdamW (default 3e-3)")
    p.add_argument("--gamma", type=float, default=0.85, help="lr decay per epoch (ExponentialLR; default 0.85)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes (default 2; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="seed for weights, shuffling, dropout, augmentation")
    p.add_argument("--device", default="cpu", help="device to train on: cpu (default), opencl, opencl:1, ...")
    p.add_argument("--checkpoint", type=Path, default=RUNS / "digits.pt",
                   help="checkpoint written after every epoch (default examples/runs/digits.pt)")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint up to --epochs")
    p.add_argument("--plot", nargs="?", type=Path, const=RUNS / "digits.png", default=None, metavar="PNG",
                   help="write a loss/accuracy curve (default examples/runs/digits.png; needs matplotlib)")
    p.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                   help="the tqdm bar: auto (only when stderr is a terminal), always, never (default auto)")
    p.add_argument("--no-progress", action="store_const", const="never", dest="progress",
                   help="no progress bar, only the line per epoch (as --progress never)")
    p.add_argument("--smoke", action="store_true",
                   help="a very short run (a subset, one epoch) that fails unless the test loss fell")
    args = p.parse_args(argv)
    if args.epochs is None:
        args.epochs = 1 if args.smoke else 15
    if args.epochs < 1 or args.batch_size < 1 or args.workers < 0:
        p.error("--epochs and --batch-size must be positive and --workers non-negative")
    if args.resume and not args.checkpoint.exists():
        p.error(f"--resume: no checkpoint at {args.checkpoint}; run once without --resume")
    if args.plot is not None:
        try:  # checked now rather than after training
            import matplotlib  # noqa: F401
        except ImportError:
            p.error("--plot needs matplotlib, which is not installed: pip install matplotlib")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    device = pick_device(args.device)
    ember.manual_seed(args.seed)

    images, labels = load_digits()
    train_idx, test_idx = split(len(labels))
    if args.smoke:
        train_idx = train_idx[:320]
    train_set = Digits(images[train_idx], labels[train_idx], augment=True)
    test_set = Digits(images[test_idx], labels[test_idx])
    # Workers start afresh every epoch and are seeded from ember's generator (persistent_workers=True
    # would keep their first epoch's random streams), so a resumed run repeats an uninterrupted one.
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True,
                              num_workers=args.workers)
    test_loader = DataLoader(test_set, batch_size=512)

    model = DigitNet().to(device)
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = ember.optim.lr_scheduler.ExponentialLR(optimizer, gamma=args.gamma)

    history: list = []
    start_epoch = 1
    if args.resume:
        ck = ember.load(args.checkpoint, map_location=device)
        model.load_state_dict(ck["model"])
        optimizer.load_state_dict(ck["optimizer"])
        scheduler.load_state_dict(ck["scheduler"])
        ember.set_rng_state(ck["rng_state"])
        history, start_epoch = ck["history"], ck["epoch"] + 1
        print(f"resumed from {args.checkpoint} after epoch {ck['epoch']} "
              f"(test accuracy {history[-1]['test_acc']:.2%})")
        if start_epoch > args.epochs:
            print(f"nothing to do: the checkpoint has {ck['epoch']} epochs; pass --epochs N with N > {ck['epoch']}")
            return 0
    else:
        test_loss, test_acc = evaluate(model, test_loader, device)
        history.append({"epoch": 0, "test_loss": test_loss, "test_acc": test_acc, "seconds": 0.0})

    n_params = sum(p.numel() for p in model.parameters())
    print(f"DigitNet ({n_params:,} parameters) on {device}: {len(train_set)} training and "
          f"{len(test_set)} test images, {args.workers} loader workers")
    started = time.perf_counter()
    for epoch in range(start_epoch, args.epochs + 1):
        t0 = time.perf_counter()
        lr = scheduler.get_last_lr()[0]
        bar = progress_bar(len(train_loader), f"epoch {epoch}/{args.epochs}", args.progress)
        train_loss, train_acc = train_one_epoch(model, train_loader, optimizer, device, bar)
        bar.close()
        scheduler.step()
        test_loss, test_acc = evaluate(model, test_loader, device)
        seconds = time.perf_counter() - t0
        history.append({"epoch": epoch, "train_loss": train_loss, "train_acc": train_acc,
                        "test_loss": test_loss, "test_acc": test_acc, "lr": lr, "seconds": seconds})
        print(f"epoch {epoch:2d}/{args.epochs}  train loss {train_loss:.4f} acc {train_acc:6.2%}  "
              f"test loss {test_loss:.4f} acc {test_acc:6.2%}  lr {lr:.2e}  {seconds:4.1f}s", flush=True)
        save_checkpoint(args.checkpoint, epoch=epoch, model=model.state_dict(), optimizer=optimizer.state_dict(),
                        scheduler=scheduler.state_dict(), rng_state=ember.get_rng_state(), history=history)

    elapsed = time.perf_counter() - started
    final = history[-1]
    print(f"test accuracy {final['test_acc']:.2%} (test loss {final['test_loss']:.4f}) after {final['epoch']} "
          f"epochs; this run trained for {elapsed:.1f}s; checkpoint {args.checkpoint}")
    if args.plot is not None:
        plot_history(history, args.plot)
        print(f"wrote {args.plot}")
    if args.smoke:
        first, last = history[0]["test_loss"], final["test_loss"]
        if not (math.isfinite(last) and last < first):
            print(f"smoke test FAILED: test loss went from {first:.4f} to {last:.4f}", file=sys.stderr)
            return 1
        print(f"smoke test passed: test loss fell from {first:.4f} to {last:.4f}")
    return 0


if __name__ == "__main__":  # the guard lets DataLoader workers start with spawn (macOS, Windows)
    sys.exit(main())
