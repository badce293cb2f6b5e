"""Writing your own nn.Module: a residual MLP with buffers, hooks and a state-dict round trip.

    python examples/custom_module.py            # classify two interleaved spirals
    python examples/custom_module.py --smoke    # fewer steps; fails unless the loss fell

What it shows:

* ``ResidualBlock``: a pre-norm block ``x + f(x)`` built from submodules, with a learned gate
  and an ``extra_repr`` for ``print(model)``;
* ``SpiralNet``: a ``ModuleList`` of blocks and two kinds of buffer: ``input_mean`` and
  ``input_std`` (persistent: saved in the state dict, moved by ``.to()``, never trained) and a
  non-persistent ``class_weights`` (moved with the module but not saved);
* forward hooks that record each block's output scale, a full backward hook that records the
  gradient reaching each block, and a forward pre-hook that checks the input's shape, all
  removed through their handles afterwards;
* ``ember.save`` of the state dict and ``load_state_dict`` into a fresh model, which then gives
  the same outputs bit for bit.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import ember
import ember.nn as nn
import ember.nn.functional as F


class ResidualBlock(nn.Module):
    """``x + gate * MLP(LayerNorm(x))``; the gate starts at zero, so a fresh block is the identity."""

    def __init__(self, width: int, expansion: int = 2, dropout: float = 0.0):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, expansion * width), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(expansion * width, width))
        self.gate = nn.Parameter(ember.zeros(()))
        self.width, self.expansion = width, expansion

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return x + self.gate * self.mlp(self.norm(x))

    def extra_repr(self) -> str:
        return f"width={self.width}, expansion={self.expansion}"


class SpiralNet(nn.Module):
    def __init__(self, in_features: int = 2, width: int = 32, depth: int = 3, num_classes: int = 2):
        super().__init__()
        self.register_buffer("input_mean", ember.zeros(in_features))
        self.register_buffer("input_std", ember.ones(in_features))
        self.register_buffer("class_weights", ember.ones(num_classes), persistent=False)
        self.stem = nn.Linear(in_features, width)
        self.blocks = nn.ModuleList(ResidualBlock(width) for _ in range(depth))
        self.head = nn.Linear(width, num_classes)

    def fit_normalizer(self, x: ember.Tensor) -> None:
        """Store the data's per-feature mean and std in the buffers (copy_, so views stay valid)."""
        with ember.no_grad():
            self.input_mean.copy_(x.mean(0))
            self.input_std.copy_(x.std(0).clamp_min(1e-6))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        h = self.stem((x - self.input_mean) / self.input_std)
        for block in self.blocks:
            h = block(h)
        return self.head(h)

    def loss(self, logits: ember.Tensor, target: ember.Tensor) -> ember.Tensor:
        return F.cross_entropy(logits, target, weight=self.class_weights)


def spirals(n: int, generator: ember.Generator) -> tuple[ember.Tensor, ember.Tensor]:
    """Two interleaved spirals in the plane with a little noise; label = which spiral."""
    t = ember.rand(n, generator=generator) * 3 * math.pi + 0.5
    label = ember.randint(0, 2, (n,), generator=generator)
    angle = t + math.pi * label
    xy = ember.stack([t * angle.cos(), t * angle.sin()], dim=1)
    return xy + 0.3 * ember.randn(n, 2, generator=generator), label


def accuracy(model: nn.Module, x, y) -> float:
    model.eval()
    with ember.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=None, help="training steps (default 600; 120 with --smoke)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="fewer steps; fails unless the loss fell")
    args = p.parse_args(argv)
    steps = args.steps or (120 if args.smoke else 600)

    ember.manual_seed(args.seed)
    data_gen = ember.Generator().manual_seed(1234)
    x_train, y_train = spirals(1024, data_gen)
    x_test, y_test = spirals(512, data_gen)

    model = SpiralNet()
    model.fit_normalizer(x_train)
    print(model)
    print("parameters:", [name for name, _ in model.named_parameters()][:6], "...")
    print("buffers:   ", [name for name, _ in model.named_buffers()])
    assert "class_weights" not in model.state_dict() and "input_mean" in model.state_dict()

    # hooks: activation scale per block (forward), gradient scale per block (backward), and an
    # input check (forward pre-hook). Each register_* returns a handle; remove() undoes it.
    scale, grad_scale, handles = {}, {}, []
    for i, block in enumerate(model.blocks):
        handles.append(block.register_forward_hook(
            lambda mod, args, out, i=i: scale.__setitem__(i, out.detach().std().item())))
        handles.append(block.register_full_backward_hook(
            lambda mod, grad_in, grad_out, i=i: grad_scale.__setitem__(i, grad_out[0].norm().item())))

    def check_input(module, args):
        (x,) = args
        if x.ndim != 2 or x.shape[1] != 2:
            raise ValueError(f"SpiralNet expects (batch, 2) points, got {tuple(x.shape)}")
    handles.append(model.register_forward_pre_hook(check_input))

    opt = ember.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    batches = ember.utils.data.DataLoader(ember.utils.data.TensorDataset(x_train, y_train), batch_size=128,
                                          shuffle=True)
    losses, step = [], 0
    while step < steps:
        model.train()
        for xb, yb in batches:
            loss = model.loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            step += 1
            if step % max(1, steps // 5) == 0:
                acts = " ".join(f"{scale[i]:.2f}" for i in sorted(scale))
                grads = " ".join(f"{grad_scale[i]:.1e}" for i in sorted(grad_scale))
                print(f"step {step:4d}  loss {sum(losses[-20:]) / len(losses[-20:]):.4f}  "
                      f"block output std [{acts}]  block grad norm [{grads}]")
            if step == steps:
                break
    gates = [round(b.gate.item(), 3) for b in model.blocks]
    print(f"learned gates {gates}; test accuracy {accuracy(model, x_test, y_test):.1%}")

    try:
        model(ember.zeros(4, 3))
    except ValueError as e:
        print("pre-hook:", e)
    for h in handles:
        h.remove()
    assert not model._forward_hooks and not model._forward_pre_hooks

    # state-dict round trip through a file: a fresh model reproduces the outputs exactly
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spiralnet.pt"
        ember.save(model.state_dict(), path)
        fresh = SpiralNet()
        result = fresh.load_state_dict(ember.load(path))  # safe load: tensors and containers only
    print("load_state_dict:", result)
    model.eval()
    fresh.eval()
    with ember.no_grad():
        assert ember.equal(model(x_test), fresh(x_test)), "reloaded model differs"
    assert ember.equal(fresh.input_mean, model.input_mean)
    print("state-dict round trip: identical outputs, buffers restored")

    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    if not (math.isfinite(last) and last < first):
        print(f"FAILED: the loss went from {first:.4f} to {last:.4f}", file=sys.stderr)
        return 1
    if args.smoke:
        print(f"smoke test passed: loss fell from {first:.4f} to {last:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
