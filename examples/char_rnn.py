"""A character-level LSTM language model with ember, trained on a scene of Shakespeare.

The text ships with the repository (examples/data/coriolanus.txt, public domain; see
examples/data/README.md). The model reads characters and learns to predict the next one; after
training it writes new text one character at a time, feeding each sampled character back in.

    python examples/char_rnn.py                    # about a minute on 2 cores, then a sample
    python examples/char_rnn.py --steps 1000 --hidden 256 --temperature 0.5
    python examples/char_rnn.py --smoke            # a few seconds; checks that the loss fell

It shows ``nn.Embedding``, a two-layer ``nn.LSTM`` with dropout between the layers, carrying the
``(h, c)`` state while sampling, gradient clipping, ``AdamW`` with a cosine lr schedule, a
``Dataset`` of text windows drawn by a ``RandomSampler``, and ``ember.multinomial``.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

# The LSTM's matrix products are small: BLAS threads gain nothing on them, and where other work
# shares the cores they spin and wait; on a busy 2-core machine training ran 10-20x slower with
# them. Set before numpy loads; your setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader, Dataset, RandomSampler  # noqa: E402

HERE = Path(__file__).resolve().parent
TEXT = HERE / "data" / "coriolanus.txt"


class Vocabulary:
    """Characters <-> integer ids (the characters of the training text, sorted)."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> ember.Tensor:
        unknown = sorted(set(text) - set(self.index))
        if unknown:
            raise ValueError(f"characters not in the training text: {''.join(unknown)!r}")
        return ember.tensor([self.index[c] for c in text], dtype=ember.int64)

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


class Windows(Dataset):
    """Every window of ``length`` characters of the text, with the window shifted by one as the
    target: item ``i`` is ``(ids[i:i+length], ids[i+1:i+length+1])``."""

    def __init__(self, ids: ember.Tensor, length: int):
        if len(ids) <= length:
            raise ValueError(f"the text ({len(ids)} characters) must be longer than a window ({length})")
        self.ids, self.length = ids, length

    def __len__(self) -> int:
        return len(self.ids) - self.length

    def __getitem__(self, i: int):
        return self.ids[i:i + self.length], self.ids[i + 1:i + self.length + 1]


class CharLSTM(nn.Module):
    def __init__(self, vocab_size: int, embed: int = 32, hidden: int = 128, layers: int = 2, dropout: float = 0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, dropout=dropout if layers > 1 else 0.0,
                            batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, ids: ember.Tensor, state=None):
        """``ids`` (batch, time) -> logits (batch, time, vocab) and the LSTM's final ``(h, c)``."""
        out, state = self.lstm(self.embed(ids), state)
        return self.head(out), state


def sequence_loss(logits: ember.Tensor, targets: ember.Tensor) -> ember.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def evaluate(model: CharLSTM, ids: ember.Tensor, length: int, device) -> float:
    """Mean next-character loss (nats) over ``ids``, read in consecutive windows with the state
    carried from one window to the next."""
    model.eval()
    total, count, state = 0.0, 0, None
    with ember.no_grad():
        for start in range(0, len(ids) - 1, length):
            chunk = ids[start:start + length + 1].to(device)
            logits, state = model(chunk[:-1].unsqueeze(0), state)
            total += sequence_loss(logits, chunk[1:].unsqueeze(0)).item() * (len(chunk) - 1)
            count += len(chunk) - 1
    return total / count


def sample(model: CharLSTM, vocab: Vocabulary, prime: str, length: int, temperature: float, device) -> str:
    """``prime`` followed by ``length`` characters drawn from the model, one at a time."""
    model.eval()
    with ember.no_grad():
        logits, state = model(vocab.encode(prime).unsqueeze(0).to(device))
        out = []
        for _ in range(length):
            probs = F.softmax(logits[0, -1] / temperature, dim=-1)
            nxt = ember.multinomial(probs.cpu(), 1)
            out.append(nxt.item())
            logits, state = model(nxt.view(1, 1).to(device), state)
    return prime + vocab.decode(out)


def pick_device(name: str):
    try:
        device = ember.device(name)
        ember.empty(1, device=device)
    except RuntimeError as e:
        sys.exit(f"char_rnn.py: cannot use device {name!r}: {e}")
    return device


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a character-level LSTM on a Shakespeare scene with ember.")
    p.add_argument("--steps", type=int, default=None, help="training steps (default 400; 40 with --smoke)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=64, help="characters per training window (default 64)")
    p.add_argument("--hidden", type=int, default=None, help="LSTM width (default 128; 64 with --smoke)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.2, help="dropout between the LSTM layers")
    p.add_argument("--lr", type=float, default=4e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--prime", default="MENENIUS:\n", help="text the sample starts from")
    p.add_argument("--sample-length", type=int, default=400)
    p.add_argument("--temperature", type=float, default=0.7, help="below 1: safer choices; above 1: wilder")
    p.add_argument("--text", type=Path, default=TEXT, help="a UTF-8 text file to train on")
    p.add_argument("--smoke", action="store_true", help="a short run that fails unless the loss fell")
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = 40 if args.smoke else 400
    if args.hidden is None:
        args.hidden = 64 if args.smoke else 128
    if args.smoke:
        args.sample_length = min(args.sample_length, 100)
    if args.steps < 1 or args.batch_size < 1 or args.seq_len < 1 or args.temperature <= 0:
        p.error("--steps, --batch-size, --seq-len and --temperature must be positive")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    device = pick_device(args.device)
    ember.manual_seed(args.seed)

    text = args.text.read_text(encoding="utf-8")
    vocab = Vocabulary(text)
    ids = vocab.encode(text)
    n_val = max(len(ids) // 10, args.seq_len + 1)
    train_ids, val_ids = ids[:-n_val], ids[-n_val:]  # the last tenth of the text is held out
    windows = Windows(train_ids, args.seq_len)
    loader = DataLoader(windows, batch_size=args.batch_size, drop_last=True,
                        sampler=RandomSampler(windows, replacement=True, num_samples=args.steps * args.batch_size))

    model = CharLSTM(len(vocab), hidden=args.hidden, layers=args.layers, dropout=args.dropout).to(device)
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps, eta_min=args.lr / 20)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"CharLSTM ({n_params:,} parameters) on {device}: {len(train_ids):,} training and {len(val_ids):,} "
          f"held-out characters, {len(vocab)} distinct")

    val_before = evaluate(model, val_ids, args.seq_len, device)
    print(f"step    0  held-out loss {val_before:.3f} nats/char ({val_before / math.log(2):.2f} bits)")
    report_every = max(1, args.steps // (2 if args.smoke else 10))
    started, running = time.perf_counter(), []
    model.train()
    for step, (x, y) in enumerate(loader, 1):
        logits, _ = model(x.to(device))
        loss = sequence_loss(logits, y.to(device))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # LSTMs are prone to exploding gradients
        optimizer.step()
        scheduler.step()
        running.append(loss.item())
        if step % report_every == 0 or step == args.steps:
            val = evaluate(model, val_ids, args.seq_len, device)
            model.train()
            print(f"step {step:4d}  train loss {sum(running) / len(running):.3f}  held-out {val:.3f}  "
                  f"lr {scheduler.get_last_lr()[0]:.1e}  {time.perf_counter() - started:5.1f}s", flush=True)
            running = []
    elapsed = time.perf_counter() - started
    val_after = evaluate(model, val_ids, args.seq_len, device)
    print(f"held-out loss {val_before:.3f} -> {val_after:.3f} nats/char ({val_after / math.log(2):.2f} bits) "
          f"after {args.steps} steps in {elapsed:.1f}s")

    print(f"\n--- sample (temperature {args.temperature}) ---")
    print(sample(model, vocab, args.prime, args.sample_length, args.temperature, device))
    print("---")
    if args.smoke:
        if not (math.isfinite(val_after) and val_after < val_before):
            print(f"smoke test FAILED: held-out loss went from {val_before:.3f} to {val_after:.3f}", file=sys.stderr)
            return 1
        print(f"smoke test passed: held-out loss fell from {val_before:.3f} to {val_after:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
