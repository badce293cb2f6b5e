"""Optimizer steps on ~1M float32 parameters (an MLP's 784x1024, 1024, 1024x192, 192): Adam through
the backend's fused kernel and through the per-tensor ember ops, SGD with momentum fused; against
the same update written by hand in numpy (in place, with one scratch buffer) and torch.optim
(fused=True / foreach=False to match)."""
import numpy as np

import ember
from benchmarks.registry import workload

SHAPES = ((784, 1024), (1024,), (1024, 192), (192,))


def _arrays():
    rng = np.random.default_rng(0)
    ps = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in SHAPES]
    gs = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in SHAPES]
    return ps, gs


def _ember(ctx, cls, **kw):
    ps, gs = _arrays()
    params = [ember.tensor(p, device=ctx.device, requires_grad=True) for p in ps]
    for p, g in zip(params, gs):
        p.grad = ember.tensor(g, device=ctx.device)
    opt = cls(params, **kw)

    def step():
        opt.step()
        ctx.sync()
    return step


def _torch(ctx, name, **kw):
    if ctx.torch is None:
        return None
    t = ctx.torch
    ps, gs = _arrays()
    params = [t.tensor(p, device=ctx.torch_device, requires_grad=True) for p in ps]
    for p, g in zip(params, gs):
        p.grad = t.tensor(g, device=ctx.torch_device)
    opt = getattr(t.optim, name)(params, **kw)

    def step():
        opt.step()
        ctx.torch_sync()
    return step


def _numpy_adam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    ps, gs = _arrays()
    ms = [np.zeros_like(p) for p in ps]
    vs = [np.zeros_like(p) for p in ps]
    tmp = [np.empty_like(p) for p in ps]
    t = [0]

    def step():
        t[0] += 1
        bc1, bc2 = 1 - b1 ** t[0], (1 - b2 ** t[0]) ** 0.5
        for p, g, m, v, s in zip(ps, gs, ms, vs, tmp):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            np.multiply(g, g, out=s)
            s *= 1 - b2
            v += s
            np.sqrt(v, out=s)
            s /= bc2
            s += eps
            np.divide(m, s, out=s)
            s *= -lr / bc1
            p += s
    return step


def _numpy_sgd(lr=1e-2, mu=0.9):
    ps, gs = _arrays()
    bufs = [g.copy() for g in gs]

    def step():
        for p, g, b in zip(ps, gs, bufs):
            b *= mu
            b += g
            p -= lr * b
    return step


@workload("Adam step 1M params, fused kernel", "optim")
def adam_fused(ctx):
    out = {"ember": _ember(ctx, ember.optim.Adam, lr=1e-3, fused=True), "numpy": _numpy_adam()}
    t = _torch(ctx, "Adam", lr=1e-3, fused=True)
    if t is not None:
        out["torch"] = t
    out["note"] = "torch fused=True"
    return out


@workload("Adam step 1M params, per-tensor ops", "optim")
def adam_unfused(ctx):
    out = {"ember": _ember(ctx, ember.optim.Adam, lr=1e-3, foreach=False), "numpy": _numpy_adam()}
    t = _torch(ctx, "Adam", lr=1e-3, foreach=False)
    if t is not None:
        out["torch"] = t
    out["note"] = "ember and torch foreach=False"
    return out


@workload("AdamW step 1M params, fused kernel", "optim")
def adamw_fused(ctx):
    out = {"ember": _ember(ctx, ember.optim.AdamW, lr=1e-3, fused=True)}
    t = _torch(ctx, "AdamW", lr=1e-3, fused=True)
    if t is not None:
        out["torch"] = t
    out["note"] = "torch fused=True"
    return out


@workload("SGD momentum step 1M params, fused kernel", "optim")
def sgd_fused(ctx):
    out = {"ember": _ember(ctx, ember.optim.SGD, lr=1e-2, momentum=0.9, fused=True), "numpy": _numpy_sgd()}
    t = _torch(ctx, "SGD", lr=1e-2, momentum=0.9, fused=True)
    if t is not None:
        out["torch"] = t
    out["note"] = "torch fused=True"
    return out


@workload("SGD momentum step 1M params, per-tensor ops", "optim")
def sgd_unfused(ctx):
    out = {"ember": _ember(ctx, ember.optim.SGD, lr=1e-2, momentum=0.9, foreach=False), "numpy": _numpy_sgd()}
    t = _torch(ctx, "SGD", lr=1e-2, momentum=0.9, foreach=False)
    if t is not None:
        out["torch"] = t
    out["note"] = "ember and torch foreach=False"
    return out
