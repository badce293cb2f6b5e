"""ember.compile against eager: the inference forward (no_grad) of the model workloads, each twice,
"(eager)" with ember's eager forward and "(compiled)" with ``ember.compile(model)``, both beside
PyTorch eager; and a chain of small elementwise ops, where per-op python cost dominates. The
compiled training step runs eagerly (docs/compile.md: calls under autograd are not replayed), so
it is not listed."""
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
