"""One call of an op in both libraries, its outcome, and the runnable repro of a call.

A :class:`Call` names the function by its path under the library (``add``,
``nn.functional.conv2d``, ``Tensor.view`` for a method of the first argument) and holds the
arguments, with :class:`~oracle.tensors.T` for tensors and :class:`D` for dtypes; :func:`run`
builds them in one library, calls it and records the result or the exception, and with ``grad``
the float64 input gradients of a random-weighted sum of the floating outputs.
"""
from __future__ import annotations

import numpy as np

from .tensors import FLOATS, GRAD_DTYPES, T, _fmt

__all__ = ["Call", "D", "Outcome", "run", "repro", "tensors_of", "weights_for"]


class D:
    """A dtype argument, ``D("float32")`` -> ``lib.float32``."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"D({self.name!r})"


class Call:
    def __init__(self, op, fn, args=(), kwargs=None, grad=True):
        self.op = op            # the op / function it covers (the data file's name)
        self.fn = fn            # the path called in both libraries
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.grad = grad

    def __repr__(self):
        return f"lib.{self.fn}({', '.join(_src(a, None) for a in self.args)}" + \
            "".join(f", {k}={_src(v, None)}" for k, v in self.kwargs.items()) + ")"


def tensors_of(obj):
    if isinstance(obj, T):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors_of(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in tensors_of(o)]
    return []


class Outcome:
    def __init__(self, out=None, exc=None, grads=None, grad_exc=None):
        self.out, self.exc, self.grads, self.grad_exc = out, exc, grads, grad_exc


def _resolve(lib, path):
    if path.startswith("Tensor."):
        name = path[len("Tensor."):]
        return lambda self, *a, **k: getattr(self, name)(*a, **k)
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _build(lib, obj, grad, leaves):
    if isinstance(obj, T):
        leaf, t = obj.build(lib, grad)
        leaves.append(leaf)
        return t
    if isinstance(obj, D):
        return getattr(lib, obj.name)
    if isinstance(obj, list):
        return [_build(lib, o, grad, leaves) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_build(lib, o, grad, leaves) for o in obj)
    if isinstance(obj, dict):
        return {k: _build(lib, v, grad, leaves) for k, v in obj.items()}
    return obj


def _float_outputs(lib, out):
    if isinstance(out, lib.Tensor):
        return [out] if (out.dtype.is_floating_point or out.dtype.is_complex) and out.requires_grad else []
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _float_outputs(lib, o)]
    return []


def weights_for(shape, k):
    rng = np.random.default_rng(1000 + k)
    return np.round(rng.uniform(-2.0, 2.0, size=shape), 2)


def run(lib, call, grad=False):
    leaves = []
    try:
        args = _build(lib, list(call.args), grad, leaves)
        kwargs = _build(lib, call.kwargs, grad, leaves)
        out = _resolve(lib, call.fn)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return Outcome(exc=e)
    if not grad:
        return Outcome(out=out)
    try:
        outs = _float_outputs(lib, out)
        if not outs:
            return Outcome(out=out, grads=None)
        loss = None
        for k, o in enumerate(outs):
            w = lib.tensor(weights_for(tuple(o.shape), k).ravel().tolist(), dtype=lib.float64).reshape(tuple(o.shape))
            if o.dtype.is_complex:  # a real loss: weighted real and imaginary parts
                w2 = lib.tensor(weights_for(tuple(o.shape), k + 100).ravel().tolist(), dtype=lib.float64)
                w2 = w2.reshape(tuple(o.shape)).to(o.real.dtype)
                term = (o.real * w.to(o.real.dtype)).sum() + (o.imag * w2).sum()
            else:
                term = (o * w.to(o.dtype)).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        grads = [None if leaf is None else leaf.grad for leaf in leaves]
    except Exception as e:  # noqa: BLE001
        return Outcome(out=out, grad_exc=e)
    return Outcome(out=out, grads=grads)


def _src(obj, names):
    if isinstance(obj, T):
        return names[id(obj)] if names else repr(obj)
    if isinstance(obj, D):
        return f"lib.{obj.name}"
    if isinstance(obj, list):
        return "[" + ", ".join(_src(o, names) for o in obj) + "]"
    if isinstance(obj, tuple):
        inner = ", ".join(_src(o, names) for o in obj)
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {_src(v, names)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (bool, int, float)):
        return _fmt(obj)
    return repr(obj)


def repro(call, grad=False):
    """A python snippet that builds the exact inputs and runs the call in torch and in ember."""
    lines = ["import math", "import torch", "import ember", "nan, inf = math.nan, math.inf",
             "for lib in (torch, ember):"]
    names = {}
    for i, t in enumerate(tensors_of(list(call.args) + [call.kwargs])):
        src, step = t.source("lib", grad and t.dtype in GRAD_DTYPES)
        lines.append(f"    b{i} = {src}")
        lines.append(f"    x{i} = b{i}{step}")
        names[id(t)] = f"x{i}"
    args = [_src(a, names) for a in call.args] + [f"{k}={_src(v, names)}" for k, v in call.kwargs.items()]
    if call.fn.startswith("Tensor."):
        fn = f"{args[0]}.{call.fn[len('Tensor.'):]}"
        args = args[1:]
    else:
        fn = f"lib.{call.fn}"
    lines += ["    try:", f"        out = {fn}({', '.join(args)})", "        print(lib.__name__, out)"]
    if grad:
        lines += ["        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])",
                  "                if isinstance(o, lib.Tensor) and o.requires_grad]",
                  "        import numpy as np",
                  "        ws = [np.round(np.random.default_rng(1000 + k).uniform(-2, 2, size=tuple(o.shape)), 2)",
                  "              for k, o in enumerate(outs)]",
                  "        sum((o * lib.tensor(w.tolist(), dtype=lib.float64).to(o.dtype)).sum()"
                  " for o, w in zip(outs, ws)).backward()",
                  "        print(lib.__name__, 'grads', [b.grad for b in ("
                  + ", ".join(f"b{i}" for i, t in enumerate(tensors_of(list(call.args) + [call.kwargs]))
                              if t.dtype in GRAD_DTYPES) + ",)])"]
    lines += ["    except Exception as e:", "        print(lib.__name__, 'raised', type(e).__name__, e)"]
    return "\n".join(lines)


def has_special(call):
    return any(t.dtype in FLOATS and not np.isfinite(t.values).all() for t in tensors_of(list(call.args)))

