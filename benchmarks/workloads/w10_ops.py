"""Framework overhead and raw op speed: small-op overhead, 1024^3 matmul, and elementwise ops,
reductions, comparisons, in-place updates, broadcasts and a softmax-like chain on 1M elements,
each against the same numpy call (issue 3's targets: matmul within 10% of numpy's GFLOPS, 1M-element
ops within 1.3x of numpy)."""
import numpy as np

import ember
from benchmarks.registry import workload

N = 1 << 20


def _pair(ctx, shape, dtype=np.float32):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    ea, eb = ember.tensor(a, device=ctx.device), ember.tensor(b, device=ctx.device)
    ta = tb = None
    if ctx.torch is not None:
        ta, tb = ctx.torch.tensor(a, device=ctx.torch_device), ctx.torch.tensor(b, device=ctx.torch_device)
    return a, b, ea, eb, ta, tb


def _impls(ctx, np_fn, ember_fn, torch_fn, a, b, ea, eb, ta, tb, note=""):
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
    if note:
        out["note"] = note
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


@workload("sum 8x8 dim=1 (overhead)", "ops")
def sum_small(ctx):
    return _impls(ctx, lambda x, y: np.sum(x, 1), lambda x, y: x.sum(1), lambda x, y: x.sum(1), *_pair(ctx, (8, 8)))


@workload("matmul 1024^3 f32", "ops")
def matmul(ctx):
    return _impls(ctx, np.matmul, lambda x, y: x @ y, lambda x, y: x @ y, *_pair(ctx, (1024, 1024)),
                  note="2*1024^3 flop: GFLOPS = 2.147 / seconds")


@workload("matmul 1024^3 f32, transposed operand", "ops")
def matmul_t(ctx):
    return _impls(ctx, lambda x, y: x @ y.T, lambda x, y: x @ y.t(), lambda x, y: x @ y.t(), *_pair(ctx, (1024, 1024)))


@workload("bmm 64x128x128 f32", "ops")
def bmm(ctx):
    return _impls(ctx, np.matmul, lambda x, y: x @ y, lambda x, y: x @ y, *_pair(ctx, (64, 128, 128)))


@workload("mul 1M f32", "ops")
def mul_1m(ctx):
    return _impls(ctx, np.multiply, lambda x, y: x * y, lambda x, y: x * y, *_pair(ctx, (N,)))


@workload("add scalar 1M f32", "ops")
def add_scalar_1m(ctx):
    return _impls(ctx, lambda x, y: x + 1.5, lambda x, y: x + 1.5, lambda x, y: x + 1.5, *_pair(ctx, (N,)))


@workload("exp 1M f32", "ops")
def exp_1m(ctx):
    return _impls(ctx, lambda x, y: np.exp(x), lambda x, y: x.exp(), lambda x, y: x.exp(), *_pair(ctx, (N,)))


@workload("tanh 1M f32", "ops")
def tanh_1m(ctx):
    return _impls(ctx, lambda x, y: np.tanh(x), lambda x, y: x.tanh(), lambda x, y: x.tanh(), *_pair(ctx, (N,)))


@workload("broadcast add (1024x1024) + (1024,)", "ops")
def broadcast_add(ctx):
    a, b, ea, eb, ta, tb = _pair(ctx, (1024, 1024))
    r = b[0]
    er = eb[0].contiguous()
    tr = tb[0].contiguous() if tb is not None else None
    return _impls(ctx, np.add, lambda x, y: x + y, lambda x, y: x + y, a, r, ea, er, ta, tr)


@workload("add of a transposed 1024x1024 view", "ops")
def transposed_add(ctx):
    return _impls(ctx, lambda x, y: x.T + y, lambda x, y: x.t() + y, lambda x, y: x.t() + y, *_pair(ctx, (1024, 1024)))


@workload("in-place add_ 1M f32", "ops")
def add_inplace(ctx):
    a, b, ea, eb, ta, tb = _pair(ctx, (N,))
    return _impls(ctx, lambda x, y: np.add(x, y, out=x), lambda x, y: x.add_(y), lambda x, y: x.add_(y),
                  a, b, ea, eb, ta, tb)


@workload("in-place mul_ scalar 1M f32", "ops")
def mul_inplace(ctx):
    a, b, ea, eb, ta, tb = _pair(ctx, (N,))
    return _impls(ctx, lambda x, y: np.multiply(x, 1.0000001, out=x), lambda x, y: x.mul_(1.0000001),
                  lambda x, y: x.mul_(1.0000001), a, b, ea, eb, ta, tb)


@workload("comparison gt 1M f32", "ops")
def gt_1m(ctx):
    return _impls(ctx, np.greater, lambda x, y: x > y, lambda x, y: x > y, *_pair(ctx, (N,)))


@workload("where 1M f32", "ops")
def where_1m(ctx):
    return _impls(ctx, lambda x, y: np.where(x > 0, x, y), lambda x, y: ember.where(x > 0, x, y),
                  lambda x, y: ctx.torch.where(x > 0, x, y), *_pair(ctx, (N,)))


@workload("sum 1M f32", "ops")
def sum_1m(ctx):
    return _impls(ctx, lambda x, y: np.sum(x), lambda x, y: x.sum(), lambda x, y: x.sum(), *_pair(ctx, (N,)))


@workload("mean 1M f32", "ops")
def mean_1m(ctx):
    return _impls(ctx, lambda x, y: np.mean(x), lambda x, y: x.mean(), lambda x, y: x.mean(), *_pair(ctx, (N,)))


@workload("amax 1M f32", "ops")
def amax_1m(ctx):
    return _impls(ctx, lambda x, y: np.max(x), lambda x, y: x.amax(), lambda x, y: x.amax(), *_pair(ctx, (N,)))


@workload("argmax 1M f32", "ops")
def argmax_1m(ctx):
    return _impls(ctx, lambda x, y: np.argmax(x), lambda x, y: x.argmax(), lambda x, y: x.argmax(), *_pair(ctx, (N,)))


@workload("sum dim=1 of 1024x1024", "ops")
def sum_dim(ctx):
    return _impls(ctx, lambda x, y: np.sum(x, 1), lambda x, y: x.sum(1), lambda x, y: x.sum(1),
                  *_pair(ctx, (1024, 1024)))


@workload("sum dim=0 of a transposed 1024x1024", "ops")
def sum_transposed(ctx):
    return _impls(ctx, lambda x, y: np.sum(x.T, 0), lambda x, y: x.t().sum(0), lambda x, y: x.t().sum(0),
                  *_pair(ctx, (1024, 1024)))


@workload("var dim=1 of 1024x1024", "ops")
def var_dim(ctx):
    return _impls(ctx, lambda x, y: np.var(x, 1, ddof=1), lambda x, y: x.var(1), lambda x, y: x.var(1),
                  *_pair(ctx, (1024, 1024)))


@workload("cumsum 1M f32", "ops")
def cumsum_1m(ctx):
    return _impls(ctx, lambda x, y: np.cumsum(x), lambda x, y: x.cumsum(0), lambda x, y: x.cumsum(0),
                  *_pair(ctx, (N,)))


def _np_softmax(x):
    e = np.exp(x - np.max(x, 1, keepdims=True))
    return e / np.sum(e, 1, keepdims=True)


@workload("softmax-like chain, 1024x1024 (max, sub, exp, sum, div)", "ops")
def softmax_chain(ctx):
    def ember_chain(x, y):
        e = (x - x.amax(1, keepdim=True)).exp()
        return e / e.sum(1, keepdim=True)
    return _impls(ctx, lambda x, y: _np_softmax(x), ember_chain, ember_chain, *_pair(ctx, (1024, 1024)))


@workload("gather 1M f32 along dim 1", "ops")
def gather_1m(ctx):
    a, b, ea, eb, ta, tb = _pair(ctx, (1024, 1024))
    idx = np.random.default_rng(2).integers(0, 1024, (1024, 1024))
    ei = ember.tensor(idx, device=ctx.device)
    ti = ctx.torch.tensor(idx, device=ctx.torch_device) if ctx.torch is not None else None
    return _impls(ctx, lambda x, i: np.take_along_axis(x, i, 1), lambda x, i: x.gather(1, i),
                  lambda x, i: x.gather(1, i), a, idx, ea, ei, ta, ti)
