"""Shape arithmetic shared by the core's op front ends and the backends' kernels: broadcasting,
row-major strides, the output geometry of convolutions and pooling, and the step geometry of
packed sequences. Pure python on tuples of ints; no tensors.

Part of the public backend API: a backend computes geometry with these functions, so that its
kernels and the core's decompositions agree by construction.
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["broadcast_shapes", "contiguous_strides", "conv_out", "conv_transpose_out", "pool_out", "pool_pads",
           "avg_divisor",
           "steps", "rows", "prev_rows"]


def contiguous_strides(shape: Iterable[int]) -> tuple:
    """Row-major strides (in elements) of ``shape``."""
    strides = []
    acc = 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= s if s > 1 else 1
    return tuple(reversed(strides))


def broadcast_shapes(a: tuple, b: tuple, op: str = "") -> tuple:
    """The broadcast of two shapes; RuntimeError (PyTorch's message, naming the innermost
    mismatching dim) when they don't broadcast."""
    if a == b:
        return a
    la, lb = len(a), len(b)
    n = la if la > lb else lb
    out = []
    for i in range(n):
        da = a[i - n + la] if i - n + la >= 0 else 1
        db = b[i - n + lb] if i - n + lb >= 0 else 1
        if da == db or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            _broadcast_error(a, b, op)
    return tuple(out)


def _broadcast_error(a, b, op):
    n = max(len(a), len(b))
    for i in range(n - 1, -1, -1):
        da = a[i - n + len(a)] if i - n + len(a) >= 0 else 1
        db = b[i - n + len(b)] if i - n + len(b) >= 0 else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(
                f"{op + ': ' if op else ''}The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                f"non-singleton dimension {i} (shapes {list(a)} and {list(b)})")


# -- convolution and pooling ------------------------------------------------------------------------

def conv_out(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution along one spatial dim."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_out(size: int, kernel: int, stride: int, padding: int, output_padding: int, dilation: int) -> int:
    """Output length of a transposed convolution along one spatial dim (the input length of the
    convolution it is the gradient of, plus ``output_padding``)."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1 + output_padding


def pool_out(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output length along one dim (a ceil-mode window must start inside the
    input or its left padding)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pool_pads(in_sp, out_sp, kernel, stride, padding, dilation) -> tuple:
    """Right padding per spatial dim so that every output window lies inside the padded input."""
    return tuple(max(0, (out_sp[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - in_sp[i] - padding[i])
                 for i in range(len(kernel)))


def avg_divisor(in_sp, out_sp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """Per spatial dim, the list of window sizes average pooling divides by (the divisor of an
    output element is the product over dims); None with ``divisor_override``."""
    if divisor_override:
        return None
    per_dim = []
    for i in range(len(kernel)):
        sizes = []
        for o in range(out_sp[i]):
            start = o * stride[i] - padding[i]
            end = min(start + kernel[i], in_sp[i] + padding[i])
            if count_include_pad:
                sizes.append(end - start)
            else:
                sizes.append(min(end, in_sp[i]) - max(start, 0))
        per_dim.append(sizes)
    return per_dim


# -- packed sequences (the fused recurrent layers) -------------------------------------------------

def steps(T: int, reverse: bool) -> range:
    """Time steps in processing order."""
    return range(T - 1, -1, -1) if reverse else range(T)


def rows(batch_sizes, t: int, B: int) -> int:
    """Number of real rows at step ``t`` (``batch_sizes`` None: all ``B``)."""
    return B if batch_sizes is None else batch_sizes[t]


def prev_rows(seq, init, t: int, bs: int, batch_sizes, reverse: bool, cat_fn):
    """Rows ``:bs`` of the state before step ``t``: the output of the previous step where that
    row was real, else the initial state (a reverse-direction sequence starts at its own end).
    ``seq`` holds the per-step outputs so far; ``cat_fn`` concatenates along dim 0."""
    T = len(seq)
    p = t + 1 if reverse else t - 1
    if p < 0 or p >= T:
        return init[:bs]
    pb = rows(batch_sizes, p, bs)
    if pb >= bs:
        return seq[p][:bs]
    return cat_fn([seq[p][:pb], init[pb:bs]], 0)
