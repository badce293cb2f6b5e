"""Autograd overhead: recording one op, and backward of a 50-op chain against its forward."""
import numpy as np

import ember
from benchmarks.registry import workload


def _chain(x, n=50):
    y = x
    for i in range(n // 5):
        y = y * 1.01
        y = y + 0.5
        y = y.tanh()
        y = y - 0.1
        y = y.exp() * 0.5
    return y


@workload("50-op chain forward, 8x8, recording", "autograd")
def chain_fwd(ctx):
    x = ember.randn(8, 8, device=ctx.device, requires_grad=True)
    out = {"ember": lambda: _chain(x)}
    if ctx.torch is not None:
        tx = ctx.torch.randn(8, 8, requires_grad=True)
        out["torch"] = lambda: _chain(tx)
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)

    def np_chain():
        y = a
        for i in range(10):
            y = np.exp(np.tanh(y * 1.01 + 0.5) - 0.1) * 0.5
        return y
    out["numpy"] = np_chain
    return out


@workload("50-op chain forward+backward, 8x8", "autograd")
def chain_fwd_bwd(ctx):
    x = ember.randn(8, 8, device=ctx.device, requires_grad=True)

    def e():
        _chain(x).sum().backward()
        x.grad = None
    out = {"ember": e}
    if ctx.torch is not None:
        tx = ctx.torch.randn(8, 8, requires_grad=True)

        def t():
            _chain(tx).sum().backward()
            tx.grad = None
        out["torch"] = t
    return out
