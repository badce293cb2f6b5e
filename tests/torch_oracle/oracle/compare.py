"""Comparing the outcomes of one call in torch and in ember: whether each raised and the builtin
class of the exception, then the structure of the result, each tensor's dtype, shape and values
(dtype-aware tolerances, NaN where NaN, infinities equal), and the float64 input gradients."""
from __future__ import annotations

import builtins

import numpy as np
import torch

import ember

__all__ = ["Mismatch", "compare", "builtin_class", "TOLERANCES"]

#: (rtol, atol) by the result's dtype
TOLERANCES = {"float64": (1e-7, 1e-9), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-2)}


class Mismatch(Exception):
    def __init__(self, phase, detail):
        super().__init__(f"[{phase}] {detail}")
        self.phase, self.detail = phase, detail


def builtin_class(exc):
    for cls in type(exc).__mro__:
        if getattr(builtins, cls.__name__, None) is cls and cls is not Exception:
            return cls
    return Exception


def _dname(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _np(t):
    t = t.detach()
    if _dname(t.dtype) == "bfloat16":
        t = t.float()
    return t.numpy() if isinstance(t, ember.Tensor) else t.numpy(force=True)  # (a lazy conj or zero tensor)


def _flat(obj, lib):
    if isinstance(obj, lib.Tensor):
        return [("tensor", obj)]
    if isinstance(obj, (torch.Size, ember.Size)):
        return [("value", tuple(obj))]
    if isinstance(obj, (list, tuple)):
        return [("seq", len(obj))] + [x for o in obj for x in _flat(o, lib)]
    if isinstance(obj, (torch.dtype, ember.dtype)):
        return [("value", _dname(obj))]
    return [("value", obj)]


def close(a, b, dtype):
    """Where ``a`` (ember) and ``b`` (torch) differ beyond the dtype's tolerance: an index or None."""
    if a.shape != b.shape:
        return ()
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        # complex: within the tolerance of the modulus where finite; else each part equal (NaN too)
        rtol, atol = TOLERANCES.get({"complex64": "float32", "complex128": "float64"}.get(dtype, dtype), (1e-7, 1e-9))
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        parts = [(x == y) | (np.isnan(x) & np.isnan(y))
                 | (np.isfinite(x) & np.isfinite(y) & (np.abs(x - y) <= atol + rtol * np.abs(y)))
                 for x, y in ((a.real, b.real), (a.imag, b.imag))]
        same = parts[0] & parts[1]
        fin = np.isfinite(a) & np.isfinite(b)
        same |= fin & (np.abs(a - b) <= atol + rtol * np.abs(b))
        bad = np.argwhere(~np.asarray(same))
        return tuple(bad[0]) if len(bad) else None
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        rtol, atol = TOLERANCES.get(dtype, (1e-7, 1e-9))
        a, b = a.astype(np.float64), b.astype(np.float64)
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        fin = np.isfinite(a) & np.isfinite(b)
        scale = np.maximum(np.abs(b), 1.0) if dtype in ("float16", "bfloat16") else np.abs(b)
        same |= fin & (np.abs(a - b) <= atol + rtol * scale)
    else:
        same = a == b
    bad = np.argwhere(~np.asarray(same))
    return tuple(bad[0]) if len(bad) else None


def _compare_values(e_out, t_out, phase, values=True, loose=False):
    ef, tf = _flat(e_out, ember), _flat(t_out, torch)
    if [k for k, _ in ef] != [k for k, _ in tf] or [v for k, v in ef if k == "seq"] != [v for k, v in tf if k == "seq"]:
        raise Mismatch("structure", f"ember returned {_kinds(ef)}, torch {_kinds(tf)}")
    for i, ((_, e), (kind, t)) in enumerate(zip(ef, tf)):
        if kind == "seq":
            continue
        if kind == "value":
            if isinstance(t, float) and isinstance(e, (float, int)) and (e == t or (e != e and t != t)):
                continue
            if type(e) is not type(t) or e != t:
                raise Mismatch(phase if phase == "grad" else "value", f"item {i}: ember {e!r}, torch {t!r}")
            continue
        if _dname(e.dtype) != _dname(t.dtype):
            raise Mismatch("dtype" if phase != "grad" else "grad",
                           f"item {i}: ember {_dname(e.dtype)}, torch {_dname(t.dtype)}")
        if tuple(e.shape) != tuple(t.shape):
            raise Mismatch("shape" if phase != "grad" else "grad",
                           f"item {i}: ember {tuple(e.shape)}, torch {tuple(t.shape)}")
        if not values:
            continue
        a, b = _np(e), _np(t)
        at = close(a, b, "float32" if loose else _dname(t.dtype))
        if at is not None:
            raise Mismatch(phase, f"item {i} ({_dname(t.dtype)}{tuple(t.shape)}) at {at}: ember {a[at]!r}, "
                                  f"torch {b[at]!r}")


def _kinds(flat):
    return [k if k != "value" else type(v).__name__ for k, v in flat]


def compare(e, t, phase="value", values=True, loose=False):
    """Raises :class:`Mismatch` where the ember outcome ``e`` differs from torch's ``t``."""
    if t.exc is not None or e.exc is not None:
        if e.exc is None:
            raise Mismatch("exception", f"torch raised {type(t.exc).__name__}: {str(t.exc)[:300]}; ember returned")
        if t.exc is None:
            raise Mismatch("exception", f"ember raised {type(e.exc).__name__}: {str(e.exc)[:300]}; torch returned")
        want = builtin_class(t.exc)
        if not isinstance(e.exc, want):
            raise Mismatch("exception_type", f"torch raised {want.__name__} ({str(t.exc)[:200]}), ember "
                                             f"{type(e.exc).__name__} ({str(e.exc)[:200]})")
        return
    if phase == "grad":
        if t.grad_exc is not None or e.grad_exc is not None:
            if t.grad_exc is None:
                raise Mismatch("grad", f"ember's backward raised {type(e.grad_exc).__name__}: {e.grad_exc}")
            if e.grad_exc is None:
                raise Mismatch("grad", f"torch's backward raised {type(t.grad_exc).__name__}, ember's did not")
            return
        if t.grads is None and e.grads is None:
            return
        if (t.grads is None) != (e.grads is None):
            raise Mismatch("grad", f"torch output requires grad: {t.grads is not None}, ember: {e.grads is not None}")
        for a, b in zip(e.grads, t.grads):
            if a is None and b is None:
                continue
            if a is None:
                a = ember.zeros(tuple(b.shape), dtype=getattr(ember, _dname(b.dtype)))
            if b is None:
                b = torch.zeros(tuple(a.shape), dtype=getattr(torch, _dname(a.dtype)))
            _compare_values(a, b, "grad", loose=loose)
        return
    _compare_values(e.out, t.out, phase, values)
