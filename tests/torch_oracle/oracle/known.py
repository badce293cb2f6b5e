"""The data file ``known_differences.toml``: deliberate differences (each with its reason and the
words of docs/differences.md that state it), ops not compared (each with its reason), and the
pending bugs: cases that still fail, one line each, run as ``xfail(strict=False)`` until fixed.

``when`` is a python expression over the call and the mismatch (see :func:`context`).
"""
from __future__ import annotations

import math
import pathlib
import tomllib

import numpy as np
import torch

import ember

from .calls import Call, D, run, repro, tensors_of
from .compare import Mismatch, compare
from .tensors import ALL, COMPLEX, FLOATS, GRAD_DTYPES, T

__all__ = ["DATA", "load", "check", "context", "parse_repro", "OracleFailure"]

DATA = pathlib.Path(__file__).resolve().parent.parent / "known_differences.toml"
_SAFE = {"any": any, "all": all, "len": len, "isinstance": isinstance, "float": float, "int": int, "bool": bool,
         "str": str, "slice": slice, "tuple": tuple, "list": list, "set": set, "min": min, "max": max, "abs": abs}


class OracleFailure(AssertionError):
    pass


_CACHE = {}


def load():
    if "data" not in _CACHE:
        with open(DATA, "rb") as f:
            _CACHE["data"] = tomllib.load(f)
    return _CACHE["data"]


def _scalars(obj):
    if isinstance(obj, bool | int | float) and not isinstance(obj, T):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [s for o in obj for s in _scalars(o)]
    return []


def context(call, mismatch=None, t=None, e=None):
    ts = tensors_of(list(call.args) + [call.kwargs])
    floats = [x.values for x in ts if x.dtype in FLOATS + COMPLEX]
    return {
        "op": call.op, "fn": call.fn, "args": call.args, "kwargs": call.kwargs,
        "phase": mismatch.phase if mismatch else None, "detail": mismatch.detail if mismatch else "",
        "dtypes": [x.dtype for x in ts], "shapes": [x.shape for x in ts], "ndims": [len(x.shape) for x in ts],
        "layouts": [x.layout for x in ts], "scalars": _scalars(list(call.args) + list(call.kwargs.values())),
        "has_nan": any(np.isnan(v).any() for v in floats), "has_inf": any(np.isinf(v).any() for v in floats),
        "zero_size": any(x.values.size == 0 for x in ts),
        "has_complex": any(x.dtype in COMPLEX for x in ts),
        # a complex input with a zero part (signed zeros pick the branch) or a tiny element
        "complex_tiny": any(bool(((np.abs(x.values) < 1e-50) | (x.values.real == 0) | (x.values.imag == 0)).any())
                            for x in ts if x.dtype in COMPLEX),
        "torch_exc": type(t.exc).__name__ if t is not None and t.exc is not None else None,
        "ember_exc": type(e.exc).__name__ if e is not None and e.exc is not None else None,
        "torch_msg": str(t.exc) if t is not None and t.exc is not None else "",
        "ember_msg": str(e.exc) if e is not None and e.exc is not None else "",
        "nan": math.nan, "inf": math.inf,
    }


def _matches(entries, op, env):
    for entry in entries:
        if entry["op"] in (op, "*") and eval(entry.get("when", "True"), {"__builtins__": _SAFE, **env}):  # noqa: S307
            return entry
    return None


def _values_compared(call):
    data = load()
    return not any(d["op"] == call.op and d.get("compare") == "shape_dtype" for d in data.get("difference", []))


def check(call, *, pending=True, stats=None):
    """Runs ``call`` in both libraries and compares; a known difference or (with ``pending``) a
    pending bug that matches the mismatch is accepted; anything else raises :class:`OracleFailure`
    with a runnable repro. Returns None, or the entry that accepted the mismatch."""
    data = load()
    values = _values_compared(call)
    t, e = run(torch, call), run(ember, call)
    phase_grad = False
    try:
        compare(e, t, "value", values)
        ts = tensors_of(list(call.args) + [call.kwargs])
        if (values and call.grad and t.exc is None and any(x.dtype in GRAD_DTYPES for x in ts)
                and all(x.finite() for x in ts)):
            phase_grad = True
            t, e = run(torch, call, grad=True), run(ember, call, grad=True)
            # a float64 gradient computed through a lower-precision dtype= argument: float32's tolerance
            loose = any(isinstance(v, D) and v.name != "float64" for v in list(call.args) + list(call.kwargs.values()))
            compare(e, t, "grad", loose=loose)
    except Mismatch as m:
        env = context(call, m, t, e)
        hit = _matches(data.get("difference", []), call.op, env)
        if hit is None and pending:
            hit = _matches(data.get("pending", []), call.op, env)
        if hit is not None:
            if stats is not None:
                stats.append(hit.get("id", hit["op"]))
            return hit
        line = (f'{{id = "{call.op.rsplit(".", 1)[-1]}-{m.phase}", op = "{call.op}", when = "phase == \'{m.phase}\'", '
                f'repro = "{call!r}"}},')
        raise OracleFailure(f"{call.op}: {m}\n--- repro ---\n{repro(call, phase_grad)}\n--- pending line ---\n"
                            f"{line}") from None
    return None


class _Recorder:
    def __init__(self, op, path=""):
        self._op, self._path = op, path

    def __getattr__(self, name):
        if not self._path and name in ALL:  # ``lib.int64`` in a repro: the dtype argument
            return D(name)
        return _Recorder(self._op, f"{self._path}.{name}" if self._path else name)

    def __call__(self, *args, **kwargs):
        return Call(self._op, self._path, args, kwargs)


def parse_repro(entry):
    """The :class:`Call` of a pending entry's ``repro``: ``lib.add(T([1, 2], 'int64'), 2, alpha=1.5)``."""
    env = {"lib": _Recorder(entry["op"]), "T": T, "D": D, "nan": math.nan, "inf": math.inf}
    return eval(entry["repro"], {"__builtins__": _SAFE}, env)  # noqa: S307

