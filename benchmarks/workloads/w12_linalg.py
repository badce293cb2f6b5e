"""Linear algebra: batched 64 x (64x64) float64 solve, inv, cholesky, qr, eigh and svd, against
numpy.linalg (which cpu_numpy calls) and torch (LAPACK), at the runner's thread count."""
import numpy as np

import ember
from benchmarks.registry import workload

SHAPE = (64, 64, 64)


def _inputs(ctx):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(SHAPE)
    spd = a @ np.swapaxes(a, -1, -2) + SHAPE[-1] * np.eye(SHAPE[-1])
    b = rng.standard_normal(SHAPE[:-1] + (8,))
    return a, spd, b


def _case(ctx, np_fn, ember_fn, torch_fn, args):
    out = {"numpy": lambda: np_fn(*args)}
    eargs = [ember.tensor(x, device=ctx.device) for x in args]

    def e():
        ember_fn(*eargs)
        ctx.sync()
    out["ember"] = e
    if ctx.torch is not None:
        targs = [ctx.torch.tensor(x, device=ctx.torch_device) for x in args]

        def t():
            torch_fn(*targs)
            ctx.torch_sync()
        out["torch"] = t
    return out


def _torch_linalg(ctx, name):
    return lambda *a: getattr(ctx.torch.linalg, name)(*a)


@workload("linalg solve 64x(64x64) f64, 8 rhs", "linalg")
def solve(ctx):
    a, spd, b = _inputs(ctx)
    return _case(ctx, np.linalg.solve, ember.linalg.solve, ctx.torch and _torch_linalg(ctx, "solve"), [spd, b])


@workload("linalg inv 64x(64x64) f64", "linalg")
def inv(ctx):
    a, spd, b = _inputs(ctx)
    return _case(ctx, np.linalg.inv, ember.linalg.inv, ctx.torch and _torch_linalg(ctx, "inv"), [spd])


@workload("linalg cholesky 64x(64x64) f64", "linalg")
def cholesky(ctx):
    a, spd, b = _inputs(ctx)
    return _case(ctx, np.linalg.cholesky, ember.linalg.cholesky, ctx.torch and _torch_linalg(ctx, "cholesky"), [spd])


@workload("linalg qr 64x(64x64) f64", "linalg")
def qr(ctx):
    a, spd, b = _inputs(ctx)
    return _case(ctx, np.linalg.qr, ember.linalg.qr, ctx.torch and _torch_linalg(ctx, "qr"), [a])


@workload("linalg eigh 64x(64x64) f64", "linalg")
def eigh(ctx):
    a, spd, b = _inputs(ctx)
    return _case(ctx, np.linalg.eigh, ember.linalg.eigh, ctx.torch and _torch_linalg(ctx, "eigh"), [spd])


@workload("linalg svd 64x(64x64) f64", "linalg")
def svd(ctx):
    a, spd, b = _inputs(ctx)
    return _case(ctx, np.linalg.svd, ember.linalg.svd, ctx.torch and _torch_linalg(ctx, "svd"), [a])
