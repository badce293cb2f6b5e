"""Complex elementwise ops: complex64 add, mul, exp and abs on 1M elements (issue 22's target:
within 1.5x of the same numpy call) and on 8x8 (the per-call overhead), against numpy and torch."""
import numpy as np

import ember
from benchmarks.registry import workload

N = 1 << 20


def _cplx(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _case(ctx, fn, shape, arity):
    """The same callable ``fn(*operands)`` on numpy arrays, ember tensors and torch tensors."""
    rng = np.random.default_rng(0)
    xs = [_cplx(rng, shape) for _ in range(arity)]
    out = {"numpy": lambda: fn(*xs)}
    es = [ember.tensor(x, device=ctx.device) for x in xs]

    def e():
        fn(*es)
        ctx.sync()
    out["ember"] = e
    if ctx.torch is not None:
        ts = [ctx.torch.tensor(x, device=ctx.torch_device) for x in xs]

        def t():
            fn(*ts)
            ctx.torch_sync()
        out["torch"] = t
    return out


def _ops():
    yield "add", (lambda a, b: a + b), 2
    yield "mul", (lambda a, b: a * b), 2
    yield "exp", (lambda a: a.exp() if hasattr(a, "exp") else np.exp(a)), 1
    yield "abs", abs, 1


def _register():
    for name, fn, arity in _ops():
        for label, shape in (("1M", (N,)), ("8x8", (8, 8))):
            def make(ctx, fn=fn, shape=shape, arity=arity):
                return _case(ctx, fn, shape, arity)
            make.__name__ = f"complex_{name}_{label.lower()}"
            workload(f"complex {name} {label} c64", "complex")(make)


_register()
