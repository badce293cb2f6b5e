"""Framework overhead and raw op speed: 8x8 add, 1024^3 matmul, elementwise and reductions on 1M."""
import numpy as np

import ember
from benchmarks.registry import workload


def _pair(ctx, shape, dtype=np.float32):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    ea, eb = ember.tensor(a, device=ctx.device), ember.tensor(b, device=ctx.device)
    ta = tb = None
    if ctx.torch is not None:
        ta, tb = ctx.torch.tensor(a, device=ctx.torch_device), ctx.torch.tensor(b, device=ctx.torch_device)
    return a, b, ea, eb, ta, tb


def _impls(ctx, np_fn, ember_fn, torch_fn, a, b, ea, eb, ta, tb):
    out = {"numpy": lambda: np_fn(a, b)}

    def e():
        ember_fn(ea, eb)
        ctx.sync()
    out["ember"] = e
    if ta is not None:
        def t():
            torch_fn(ta, tb)
            ctx.torch_sync()
        out["torch"] = t
    return out


@workload("add 8x8 (overhead)", "ops")
def add_small(ctx):
    return _impls(ctx, np.add, lambda x, y: x + y, lambda x, y: x + y, *_pair(ctx, (8, 8)))


@workload("add 8x8 with grad recording", "ops")
def add_small_grad(ctx):
    a, b, ea, eb, ta, tb = _pair(ctx, (8, 8))
    eb.requires_grad_(True)
    if tb is not None:
        tb.requires_grad_(True)
    return _impls(ctx, np.add, lambda x, y: x + y, lambda x, y: x + y, a, b, ea, eb, ta, tb)


@workload("matmul 1024^3 f32", "ops")
def matmul(ctx):
    return _impls(ctx, np.matmul, lambda x, y: x @ y, lambda x, y: x @ y, *_pair(ctx, (1024, 1024)))


@workload("mul 1M f32", "ops")
def mul_1m(ctx):
    return _impls(ctx, np.multiply, lambda x, y: x * y, lambda x, y: x * y, *_pair(ctx, (1 << 20,)))


@workload("exp 1M f32", "ops")
def exp_1m(ctx):
    return _impls(ctx, lambda x, y: np.exp(x), lambda x, y: x.exp(), lambda x, y: x.exp(), *_pair(ctx, (1 << 20,)))


@workload("sum 1M f32", "ops")
def sum_1m(ctx):
    return _impls(ctx, lambda x, y: np.sum(x), lambda x, y: x.sum(), lambda x, y: x.sum(), *_pair(ctx, (1 << 20,)))


@workload("sum dim=1 of 1024x1024", "ops")
def sum_dim(ctx):
    return _impls(ctx, lambda x, y: np.sum(x, 1), lambda x, y: x.sum(1), lambda x, y: x.sum(1),
                  *_pair(ctx, (1024, 1024)))


@workload("amax 1M f32", "ops")
def amax_1m(ctx):
    return _impls(ctx, lambda x, y: np.max(x), lambda x, y: x.amax(), lambda x, y: x.amax(), *_pair(ctx, (1 << 20,)))
