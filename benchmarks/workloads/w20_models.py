"""Whole training steps of small models: MLP 784-512-256-10 (SGD, batch 128), LeNet-5 (Adam,
batch 64), a conv + BatchNorm net on 3x32x32 (SGD with momentum, batch 32). ember and PyTorch use
their own ``optim``; the MLP also has a hand-written numpy version (forward, backward, SGD)."""
import math

import numpy as np

import ember
from benchmarks.registry import workload


def _data(shape, classes, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n,) + shape).astype(np.float32), rng.integers(0, classes, n)


def _mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def _lenet(nn):
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
                         nn.ReLU(), nn.Linear(84, 10))


def _convbn(nn):
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
    return nn.Sequential(*block(3, 16), nn.MaxPool2d(2), *block(16, 32), nn.MaxPool2d(2), *block(32, 64),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def _copy_weights(src, dst):
    """Same initial weights for ember and torch (state-dict keys are the same)."""
    import torch
    dst.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in src.state_dict().items()})


def _step_impls(ctx, build, make_opt_e, make_opt_t, x, y):
    import ember.nn as enn
    ember.manual_seed(0)
    model = build(enn).to(ctx.device)
    opt = make_opt_e(model.parameters())
    ex, ey = ember.tensor(x, device=ctx.device), ember.tensor(y, device=ctx.device)
    loss_fn = enn.CrossEntropyLoss()

    def e_step():
        opt.zero_grad()
        loss = loss_fn(model(ex), ey)
        loss.backward()
        opt.step()
        ctx.sync()
    out = {"ember": e_step}
    if ctx.torch is not None:
        torch = ctx.torch
        tmodel = build(torch.nn).to(ctx.torch_device)
        _copy_weights(model, tmodel)
        topt = make_opt_t(tmodel.parameters())
        tx, ty = torch.tensor(x, device=ctx.torch_device), torch.tensor(y, device=ctx.torch_device)
        tloss = torch.nn.CrossEntropyLoss()

        def t_step():
            topt.zero_grad()
            loss = tloss(tmodel(tx), ty)
            loss.backward()
            topt.step()
            ctx.torch_sync()
        out["torch"] = t_step
    return out


def _numpy_mlp(x, y, lr=0.01):
    """Forward, backward and SGD of the MLP written directly in numpy (the speed floor)."""
    rng = np.random.default_rng(0)
    sizes = [784, 512, 256, 10]
    Ws = [(rng.uniform(-1, 1, (o, i)) / math.sqrt(i)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    bs = [np.zeros(o, np.float32) for o in sizes[1:]]
    n = x.shape[0]
    onehot = np.eye(10, dtype=np.float32)[y]

    def step():
        acts = [x]
        h = x
        for i, (W, b) in enumerate(zip(Ws, bs)):
            h = h @ W.T + b
            if i < 2:
                h = np.maximum(h, 0)
            acts.append(h)
        m = h.max(1, keepdims=True)
        e = np.exp(h - m)
        p = e / e.sum(1, keepdims=True)
        g = (p - onehot) / n
        for i in (2, 1, 0):
            gW = g.T @ acts[i]
            gb = g.sum(0)
            if i:
                g = (g @ Ws[i]) * (acts[i] > 0)
            Ws[i] -= lr * gW
            bs[i] -= lr * gb
    return step


@workload("MLP 784-512-256-10 SGD step b128", "models")
def mlp_sgd(ctx):
    x, y = _data((784,), 10, 128)
    out = _step_impls(ctx, _mlp, lambda p: ember.optim.SGD(p, lr=0.01),
                      lambda p: ctx.torch.optim.SGD(p, lr=0.01) if ctx.torch else None, x, y)
    out["numpy"] = _numpy_mlp(x, y)
    return out


@workload("LeNet-5 Adam step b64 (1x28x28)", "models")
def lenet_adam(ctx):
    x, y = _data((1, 28, 28), 10, 64)
    return _step_impls(ctx, _lenet, lambda p: ember.optim.Adam(p, lr=1e-3),
                       lambda p: ctx.torch.optim.Adam(p, lr=1e-3) if ctx.torch else None, x, y)


@workload("conv+BN net SGD step b32 (3x32x32)", "models")
def convbn_sgd(ctx):
    x, y = _data((3, 32, 32), 10, 32)
    return _step_impls(ctx, _convbn, lambda p: ember.optim.SGD(p, lr=0.01, momentum=0.9),
                       lambda p: ctx.torch.optim.SGD(p, lr=0.01, momentum=0.9) if ctx.torch else None, x, y)
