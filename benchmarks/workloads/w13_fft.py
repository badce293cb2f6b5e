"""Fourier transforms: rfft of 2^20 float32 samples (issue 22's target: within 1.5x of PyTorch at one
thread), its inverse, and a batched complex fft, against numpy.fft (which cpu_numpy calls) and
torch, at the runner's thread count."""
import numpy as np

import ember
from benchmarks.registry import workload

N = 2 ** 20


def _case(ctx, np_fn, ember_fn, torch_fn, x):
    out = {"numpy": lambda: np_fn(x)}
    ex = ember.tensor(x, device=ctx.device)

    def e():
        ember_fn(ex)
        ctx.sync()
    out["ember"] = e
    if ctx.torch is not None:
        tx = ctx.torch.tensor(x, device=ctx.torch_device)

        def t():
            torch_fn(tx)
            ctx.torch_sync()
        out["torch"] = t
    return out


@workload("rfft 2^20 f32", "fft")
def rfft(ctx):
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    return _case(ctx, np.fft.rfft, ember.fft.rfft, ctx.torch and (lambda t: ctx.torch.fft.rfft(t)), x)


@workload("irfft 2^20 f32", "fft")
def irfft(ctx):
    x = np.fft.rfft(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    return _case(ctx, lambda a: np.fft.irfft(a, N), lambda a: ember.fft.irfft(a, N),
                 ctx.torch and (lambda t: ctx.torch.fft.irfft(t, N)), x)


@workload("fft 64x(128x128) c64 (fft2)", "fft")
def fft2(ctx):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 128, 128)) + 1j * rng.standard_normal((64, 128, 128))).astype(np.complex64)
    return _case(ctx, np.fft.fft2, ember.fft.fft2, ctx.torch and (lambda t: ctx.torch.fft.fft2(t)), x)
