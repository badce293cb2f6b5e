"""ember.compile against eager: the inference forward (no_grad) of the model workloads, each twice,
"(eager)" with ember's eager forward and "(compiled)" with ``ember.compile(model)``, both beside
PyTorch eager; the training step (forward, a squared-mean loss, backward, SGD with momentum) of the
same models, "(eager)" and "(compiled)" (the forward and loss compiled: their backward replays a
captured backward program); and a chain of small elementwise ops, forward only and with its
backward, where per-op python cost dominates."""
import numpy as np

import ember
from benchmarks.registry import workload
from benchmarks.workloads.w20_models import _convbn, _copy_weights, _lenet, _mlp


def _lstm(nn):
    return nn.LSTM(64, 128, num_layers=2, batch_first=True)


def _encoder(nn):
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True), 2)


MODELS = {"MLP": (_mlp, (128, 784)), "LeNet": (_lenet, (64, 1, 28, 28)), "conv+BN": (_convbn, (32, 3, 32, 32)),
          "LSTM": (_lstm, (16, 32, 64)), "Transformer encoder": (_encoder, (16, 64, 128))}


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _infer(ctx, name, compiled):
    build, shape = MODELS[name]
    import ember.nn as enn
    ember.manual_seed(0)
    model = build(enn).to(ctx.device).eval()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ex = ember.tensor(x, device=ctx.device)
    fwd = ember.compile(model) if compiled else model

    def e_run():
        with ember.no_grad():
            _first(fwd(ex))
        ctx.sync()
    out = {"ember": e_run}
    if ctx.torch is not None:
        torch = ctx.torch
        tmodel = build(torch.nn).to(ctx.torch_device).eval()
        _copy_weights(model, tmodel)
        tx = torch.tensor(x, device=ctx.torch_device)

        def t_run():
            with torch.no_grad():
                _first(tmodel(tx))
            ctx.torch_sync()
        out["torch"] = t_run
    return out


def _register(name):
    workload(f"infer {name} (eager)", "compile")(lambda ctx: _infer(ctx, name, False))
    workload(f"infer {name} (compiled)", "compile")(lambda ctx: _infer(ctx, name, True))


for _name in MODELS:
    _register(_name)


def _chain(lib):
    def f(x, y):
        for _ in range(10):
            x = lib.tanh(x * y + 0.5) - y
        return x
    return f


def _small(ctx, compiled):
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    ex, ey = ember.tensor(x, device=ctx.device), ember.tensor(x.T.copy(), device=ctx.device)
    f = ember.compile(_chain(ember)) if compiled else _chain(ember)

    def e_run():
        f(ex, ey)
        ctx.sync()
    out = {"ember": e_run}
    if ctx.torch is not None:
        torch = ctx.torch
        tx, ty = torch.tensor(x), torch.tensor(x.T.copy())
        g = _chain(torch)
        out["torch"] = lambda: g(tx, ty)
    return out


workload("40 small ops 8x8 (eager)", "compile")(lambda ctx: _small(ctx, False))
workload("40 small ops 8x8 (compiled)", "compile")(lambda ctx: _small(ctx, True))


def _train(ctx, name, compiled):
    build, shape = MODELS[name]
    import ember.nn as enn
    ember.manual_seed(0)
    model = build(enn).to(ctx.device)
    opt = ember.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ex = ember.tensor(x, device=ctx.device)

    def loss_of(m, t):
        return _first(m(t)).square().mean()
    fwd = ember.compile(loss_of) if compiled else loss_of

    def e_run():
        opt.zero_grad()
        fwd(model, ex).backward()
        opt.step()
        ctx.sync()
    out = {"ember": e_run}
    if ctx.torch is not None:
        torch = ctx.torch
        tmodel = build(torch.nn).to(ctx.torch_device)
        _copy_weights(model, tmodel)
        topt = torch.optim.SGD(tmodel.parameters(), lr=1e-3, momentum=0.9)
        tx = torch.tensor(x, device=ctx.torch_device)

        def t_run():
            topt.zero_grad()
            loss_of(tmodel, tx).backward()
            topt.step()
            ctx.torch_sync()
        out["torch"] = t_run
    return out


def _register_train(name):
    workload(f"train step {name} (eager)", "compile")(lambda ctx: _train(ctx, name, False))
    workload(f"train step {name} (compiled)", "compile")(lambda ctx: _train(ctx, name, True))


for _name in MODELS:
    _register_train(_name)


def _small_grad(ctx, compiled):
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    ex = ember.tensor(x, device=ctx.device, requires_grad=True)
    ey = ember.tensor(x.T.copy(), device=ctx.device)
    chain = _chain(ember)

    def loss(a, b):
        return chain(a, b).sum()
    f = ember.compile(loss) if compiled else loss

    def e_run():
        ex.grad = None
        f(ex, ey).backward()
        ctx.sync()
    out = {"ember": e_run}
    if ctx.torch is not None:
        torch = ctx.torch
        tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(x.T.copy())
        g = _chain(torch)

        def t_run():
            tx.grad = None
            g(tx, ty).sum().backward()
        out["torch"] = t_run
    return out


workload("40 small ops 8x8 + backward (eager)", "compile")(lambda ctx: _small_grad(ctx, False))
workload("40 small ops 8x8 + backward (compiled)", "compile")(lambda ctx: _small_grad(ctx, True))
