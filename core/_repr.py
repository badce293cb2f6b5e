"""PyTorch-style printing of tensors: ``tensor([[1., 2.], [3., 4.]], requires_grad=True)``."""
from __future__ import annotations

import numpy as np

from . import _dtype as D

_THRESHOLD = 1000
_EDGE = 3
_PRECISION = 4


class _PrintOptions:
    precision = _PRECISION
    threshold = _THRESHOLD
    edgeitems = _EDGE
    linewidth = 80
    sci_mode = None


OPTIONS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Like ``torch.set_printoptions``."""
    if profile == "default":
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = 4, float("inf"), 3, 80
    if precision is not None:
        OPTIONS.precision = precision
    if threshold is not None:
        OPTIONS.threshold = threshold
    if edgeitems is not None:
        OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        OPTIONS.linewidth = linewidth
    OPTIONS.sci_mode = sci_mode


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    p = OPTIONS.precision
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.{p}f}"
    a = np.abs(finite)
    nz = a[a != 0]
    int_mode = bool(np.all(finite == np.round(finite)))
    sci = OPTIONS.sci_mode
    if sci is None:
        sci = nz.size > 0 and (nz.max() / nz.min() > 1000.0 or nz.max() > 1e8 or nz.min() < 1e-4)
    if int_mode and not sci:
        return lambda v: _special(v) or f"{v:.0f}."
    if sci:
        return lambda v: _special(v) or f"{v:.{p}e}"
    return lambda v: _special(v) or f"{v:.{p}f}"


def _special(v):
    if v != v:
        return "nan"
    if v == float("inf"):
        return "inf"
    if v == float("-inf"):
        return "-inf"
    return None


def _format_array(a: np.ndarray, dtype) -> str:
    summarize = a.size > OPTIONS.threshold
    if dtype.category == D._FLOAT:
        vals = a.astype(np.float64)
        fmt = _float_formatter(_sample(vals) if summarize else vals.reshape(-1))
    elif dtype.category == D._COMPLEX:
        vals = a.astype(np.complex128)
        sample = _sample(vals) if summarize else vals.reshape(-1)
        fmt = _complex_formatter(sample)
        flat = [fmt(v) for v in sample]
        return _nest(vals, fmt, 1, 0, summarize, indent=len("tensor("))
    elif dtype is D.bool:
        vals = a
        fmt = lambda v: "True" if v else "False"  # noqa: E731
    else:
        vals = a
        fmt = lambda v: str(int(v))  # noqa: E731
    flat = [fmt(v) for v in (_sample(vals) if summarize else vals.reshape(-1))]
    width = max((len(s) for s in flat), default=1)
    return _nest(vals, fmt, width, 0, summarize, indent=len("tensor("))


def _complex_formatter(values: np.ndarray):
    """PyTorch's complex elements: the real parts formatted (and right-aligned) together, the
    imaginary parts formatted together, joined by their sign: ``1.5000+2.j``."""
    fr = _float_formatter(values.real.copy())
    fi = _float_formatter(values.imag.copy())
    re = values.real
    wr = max((len(fr(v)) for v in re[np.isfinite(re)].tolist()), default=1)  # as PyTorch: finite parts only

    def fmt(v):
        v = complex(v)
        im = fi(v.imag)
        return fr(v.real).rjust(wr) + (im if im[0] == "-" else "+" + im) + "j"
    return fmt


def _sample(a):
    if a.ndim == 0:
        return a.reshape(-1)
    e = OPTIONS.edgeitems
    parts = []
    def rec(x):
        if x.ndim == 1:
            parts.extend(x[:e].tolist() + x[-e:].tolist() if x.shape[0] > 2 * e else x.tolist())
            return
        idx = list(range(min(e, x.shape[0]))) + list(range(max(x.shape[0] - e, e), x.shape[0])) \
            if x.shape[0] > 2 * e else range(x.shape[0])
        for i in idx:
            rec(x[i])
    rec(a)
    return np.array(parts)


def _nest(a, fmt, width, depth, summarize, indent):
    if a.ndim == 0:
        return fmt(a.item() if hasattr(a, "item") else a).rjust(width)
    e = OPTIONS.edgeitems
    n = a.shape[0]
    if a.ndim == 1:
        items = [fmt(v).rjust(width)
                 for v in (a[:e].tolist() + a[-e:].tolist() if summarize and n > 2 * e else a.tolist())]
        if summarize and n > 2 * e:
            items = items[:e] + ["..."] + items[e:]
        per_line = max(1, (OPTIONS.linewidth - indent - depth) // (width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + depth + 1)).join(lines) + "]"
    rows = list(range(n))
    if summarize and n > 2 * e:
        rows = list(range(e)) + [None] + list(range(n - e, n))
    parts = []
    for r in rows:
        parts.append("..." if r is None else _nest(a[r], fmt, width, depth + 1, summarize, indent))
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + depth + 1)
    return "[" + sep.join(parts) + "]"


def tensor_repr(t) -> str:
    a = t.detach()._host()
    if t._dtype is D.bfloat16:
        a = a.astype(np.float32)
    if t.numel() == 0:
        body = "[]"
    else:
        body = _format_array(a, t._dtype)
    suffix = []
    if t.numel() == 0 and t.dim() != 1:
        suffix.append(f"size={tuple(t._shape)}")
    if t._device._type != "cpu":
        suffix.append(f"device='{t._device}'")
    implicit = (D.get_default_dtype(), D.int64, D.bool, D.default_complex())
    if t._dtype not in implicit:
        suffix.append(f"dtype=ember.{t._dtype.name}")
    fn = t._grad_fn
    if fn is not None and t._requires_grad:
        suffix.append(f"grad_fn=<{fn.name()}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"


def sparse_repr(t) -> str:
    """A sparse COO tensor as PyTorch prints it: its indices, values, size, nnz and layout."""
    p = t._storage
    ind = tensor_repr(p.indices.detach()).replace("\n", "\n" + " " * 15)
    val = tensor_repr(p.values.detach()).replace("\n", "\n" + " " * 14)
    suffix = [f"size={tuple(t._shape)}", f"nnz={p.values._shape[0]}"]
    if t._dtype not in (D.get_default_dtype(), D.int64, D.bool):
        suffix.append(f"dtype=ember.{t._dtype.name}")
    if t._device._type != "cpu":
        suffix.append(f"device='{t._device}'")
    suffix.append("layout=ember.sparse_coo")
    if t._grad_fn is not None and t._requires_grad:
        suffix.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        suffix.append("requires_grad=True")
    return f"tensor(indices={ind},\n       values={val},\n       {', '.join(suffix)})"
