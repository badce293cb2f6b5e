"""Peak memory of one training step with and without activation checkpointing.

The runner (``python -m benchmarks``) measures time only; this script measures memory:
``python -m benchmarks.checkpoint_memory [--device cpu]``. On cpu (numpy) the peak is the
peak of the bytes traced by ``tracemalloc`` during forward + backward (numpy reports its array
allocations to it), measured above what was allocated before the step; on other devices it is the
backend's ``max_memory_allocated`` where the backend keeps memory statistics.

Two models: a deep MLP (32 Linear+ReLU blocks, width 256, batch 2048: activations dominate the
weights) checkpointed with ``checkpoint_sequential`` in 4 segments, and a Transformer encoder
(6 layers, d_model 128, 4 heads, sequence 256, batch 16) with one ``checkpoint`` per layer.
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import ember
from ember import nn
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _mlp(device):
    layers = []
    for _ in range(32):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    return nn.Sequential(*layers).to(device), ember.randn(2048, 256, device=device)


def _encoder(device):
    layers = nn.ModuleList(nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.1, batch_first=True)
                           for _ in range(6)).to(device)
    return layers, ember.randn(16, 256, 128, device=device)


def _run_mlp(model, x, mode):
    if mode == "plain":
        return model(x)
    return checkpoint_sequential(model, 4, x, use_reentrant=(mode == "reentrant"))


def _run_encoder(model, x, mode):
    h = x
    for layer in model:
        h = layer(h) if mode == "plain" else checkpoint(layer, h, use_reentrant=(mode == "reentrant"))
    return h


def _peak(device, step) -> tuple:
    """(peak MiB above the start, seconds) of ``step()``."""
    if device.type == "cpu":
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        step()
        dt = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        return peak / 2 ** 20, dt
    acc = ember.accelerator.memory
    ember.accelerator.synchronize()
    acc.reset_peak_memory_stats()
    base = acc.memory_allocated()
    t0 = time.perf_counter()
    step()
    ember.accelerator.synchronize()
    return (acc.max_memory_allocated() - base) / 2 ** 20, time.perf_counter() - t0


def measure(device="cpu") -> list:
    """Rows ``(model, mode, peak MiB, seconds)``; the input requires grad so that the reentrant
    variant differentiates every segment."""
    device = ember.device(device)
    rows = []
    for name, make, run in (("deep MLP", _mlp, _run_mlp), ("Transformer encoder", _encoder, _run_encoder)):
        ember.manual_seed(0)
        model, x = make(device)
        x.requires_grad_(True)
        for mode in ("plain", "non-reentrant", "reentrant"):
            model.zero_grad(set_to_none=True)
            x.grad = None

            def step():
                run(model, x, mode).square().mean().backward()
            step()  # warm-up: the gradients exist before the measured step, as in training
            peak, dt = _peak(device, step)
            rows.append((name, mode, peak, dt))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    print("| model | checkpointing | peak MiB | step s |\n|---|---|---|---|")
    for name, mode, peak, dt in measure(args.device):
        print(f"| {name} | {mode} | {peak:.1f} | {dt:.2f} |")


if __name__ == "__main__":
    main()
