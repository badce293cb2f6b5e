"""Activation checkpointing: the time of a training step of a deep MLP (16 Linear+ReLU blocks,
width 256, batch 512) with ``checkpoint_sequential`` in 4 segments, and the same step without it.
The memory checkpointing saves is measured by ``python -m benchmarks.checkpoint_memory`` (peak
traced bytes), not by this timing runner."""
import ember
from benchmarks.registry import workload


def _mlp(torch_mod):
    layers = []
    for _ in range(16):
        layers += [torch_mod.nn.Linear(256, 256), torch_mod.nn.ReLU()]
    return torch_mod.nn.Sequential(*layers)


def _step(model, x, checkpointed, torch_mod, sync):
    cs = torch_mod.utils.checkpoint.checkpoint_sequential

    def step():
        y = cs(model, 4, x, use_reentrant=False) if checkpointed else model(x)
        y.square().mean().backward()
        model.zero_grad(set_to_none=True)
        sync()
    return step


def _impls(ctx, checkpointed):
    ember.manual_seed(0)
    model = _mlp(ember).to(ctx.device)
    x = ember.randn(512, 256, device=ctx.device)
    out = {"ember": _step(model, x, checkpointed, ember, ctx.sync),
           "note": "peak memory: python -m benchmarks.checkpoint_memory"}
    if ctx.torch is not None:
        import torch.utils.checkpoint  # noqa: F401  (the submodule is not imported by `import torch`)
        out["torch"] = _step(_mlp(ctx.torch), ctx.torch.randn(512, 256), checkpointed, ctx.torch, lambda: None)
    return out


@workload("deep MLP training step, checkpoint_sequential(4)", "checkpoint", quick=False)
def mlp_checkpointed(ctx):
    return _impls(ctx, True)


@workload("deep MLP training step, no checkpointing", "checkpoint", quick=False)
def mlp_plain(ctx):
    return _impls(ctx, False)
