"""Histograms with bin edges: histogram (1-D, of all elements) and histogramdd (of the points in
the rows of the input's last dim), equal-width bins over a range or given edges, optionally
weighted and normalised to a density. Written in searchsorted and scatter_add; not
differentiable (see docs/math.md). ``histc`` is in :mod:`.sorting`."""
from __future__ import annotations

import math
import numbers

from ... import _dtype as D
from ... import return_types as RT
from ..._tensor import Tensor
from .. import _args as U
from .. import comparison as CMP
from .. import creation as CR
from .. import reduction as R
from ..declare import composite
from . import scatter_gather as SG
from . import sorting as SO

__all__ = ["histogram", "histogramdd"]

_CNAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
           "bool": "bool"}


def _fmt(v: float) -> str:
    return f"{v:g}"


def _edges(x, bins, rng, op):
    """One 1-D edges tensor per dim of the points ``x`` (n, N)."""
    n_dims = x._shape[1]
    if isinstance(bins, Tensor) or (isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor)):
        seqs = [bins] if isinstance(bins, Tensor) else list(bins)
        if len(seqs) != n_dims:
            raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
        for d, e in enumerate(seqs):
            if e._dtype is not x._dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                                   f"got input with dtype {_CNAMES[x._dtype.name]} and bins for dimension {d} with "
                                   f"dtype {_CNAMES[e._dtype.name]}")
            if e.dim() != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {e.dim()} "
                                   f"dimensions in the bins tensor for dimension {d}")
            if e.numel() == 0:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
                                   f"in the bins tensor for dimension {d}")
            if e.numel() == 1:
                raise RuntimeError(f"torch.{op}(): bins must be > 0, but got 0 for dimension {d}")
        return [e.detach() for e in seqs]
    counts = [bins] * n_dims if isinstance(bins, numbers.Integral) else list(bins)
    if len(counts) != n_dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    for d, c in enumerate(counts):
        if int(c) <= 0:
            raise RuntimeError(f"torch.{op}(): bins must be > 0, but got {int(c)} for dimension {d}")
    if rng is not None:
        rng = [float(v) for v in rng]
        if len(rng) != 2 * n_dims:
            raise RuntimeError(f"torch.histogramdd: for a {n_dims}-dimensional histogram range should have "
                               f"{2 * n_dims} elements, but got {len(rng)}")
        lo, hi = rng[0::2], rng[1::2]
    elif x._shape[0]:
        mn, mx = R.aminmax(x, dim=0)
        lo, hi = [float(v) for v in mn.tolist()], [float(v) for v in mx.tolist()]
    else:
        lo, hi = [0.0] * n_dims, [1.0] * n_dims
    out = []
    for d in range(n_dims):
        a, b = lo[d], hi[d]
        if not (math.isfinite(a) and math.isfinite(b)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_fmt(a)}, {_fmt(b)}] is not finite")
        if a > b:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_fmt(a)} max {_fmt(b)} for "
                               f"dimension {d}")
        if a == b:  # an empty range is widened, as numpy
            a, b = a - 0.5, b + 0.5
        out.append(CR.linspace(a, b, int(counts[d]) + 1, dtype=x._dtype, device=x._device))
    return out


def _histdd(input, bins, rng, weight, density, op):
    x = U.tensor_arg(input, op)
    if x.numel() == 0 and x._dtype.category != D._FLOAT:
        raise U.dtype_not_implemented("histogram_cpu", x._dtype)
    if x._dtype.category != D._FLOAT and x.numel():  # half and bfloat16 compute (PyTorch has no kernel)
        raise U.dtype_not_implemented("histogramdd", x._dtype)
    if x.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if weight is not None:
        if not isinstance(weight, Tensor):
            raise TypeError(f"{op}(): argument 'weight' must be Tensor, not {type(weight).__name__}")
        if weight._dtype is not x._dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({_CNAMES[x._dtype.name]}), and "
                               f"weight({_CNAMES[weight._dtype.name]})")
        if weight._shape != x._shape[:-1]:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               "input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(x._shape)} and weight with shape {list(weight._shape)}")
    pts = x.detach().reshape(-1, x._shape[-1])
    edges = _edges(pts, bins, rng, op)
    sizes = [e.numel() - 1 for e in edges]
    flat = CR.zeros((pts._shape[0],), dtype=D.int64, device=x._device)
    inside = CR.ones((pts._shape[0],), dtype=D.bool, device=x._device)
    for d, e in enumerate(edges):
        v = pts.select(1, d).contiguous()
        pos = SO.searchsorted(e, v, right=True) - 1
        pos = pos.clamp(max=sizes[d] - 1)  # the last edge closes the last bin
        ok = CMP.logical_and(CMP.ge(v, e[0]), CMP.le(v, e[-1]))  # NaN is in no bin
        inside = CMP.logical_and(inside, ok)
        flat = flat * sizes[d] + pos.clamp(min=0)
    w = weight.detach().reshape(-1) if weight is not None else CR.ones((pts._shape[0],), dtype=x._dtype,
                                                                       device=x._device)
    w = w * inside.to(x._dtype)
    total = math.prod(sizes)
    hist = SG.scatter_add(CR.zeros((total,), dtype=x._dtype, device=x._device), 0, flat, w).reshape(tuple(sizes))
    if density:
        hist = hist / R.sum(hist)
        for d, e in enumerate(edges):
            widths = e[1:] - e[:-1]
            hist = hist / widths.reshape(tuple(sizes[d] if i == d else 1 for i in range(len(sizes))))
    return hist, tuple(edges)


@composite("histogram")
def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):
    """The histogram of all elements: ``bins`` equal bins over ``range`` (the data's min and max
    by default) or the given edges (a 1-D tensor); ``(hist, bin_edges)``. Values outside the
    edges and NaN are left out; the last bin includes its right edge."""
    x = U.tensor_arg(input, "histogram")
    if isinstance(bins, (list, tuple)):
        raise TypeError("histogram(): argument 'bins' must be int or Tensor, not " + type(bins).__name__)
    if isinstance(bins, Tensor) and bins.dim() != 1:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {bins.dim()} dimensions "
                           "in the bins tensor for dimension 0")
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): range= goes with an int bins, not with a bins tensor")
    w = weight.reshape(-1, 1)[:, 0] if isinstance(weight, Tensor) and weight._shape == x._shape else weight
    if isinstance(weight, Tensor) and weight._shape != x._shape:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{[x.numel(), 1]} and weight with shape {list(weight._shape)}")
    hist, edges = _histdd(x.reshape(-1, 1), [bins] if isinstance(bins, Tensor) else bins, range, w, density,
                          "histogram")
    return RT.histogram(hist, edges[0])


@composite("histogramdd", out=False, method=False)
def histogramdd(input, bins, *, range=None, weight=None, density: bool = False):
    """The N-dimensional histogram of the points in the last dim of ``input`` (..., N): ``bins``
    an int, N ints or N edge tensors; ``range`` a flat list of N (min, max) pairs;
    ``(hist, bin_edges)`` with one edges tensor per dim."""
    hist, edges = _histdd(input, bins, range, weight, density, "histogram")
    return RT.histogramdd(hist, edges)
