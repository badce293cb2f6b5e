"""Padding and sliding windows, shared by constant padding, convolution and pooling."""
from __future__ import annotations


def pad_array(xp, a, lohi, value):
    """``a`` padded with ``value`` by ``(lo, hi)`` per dim; negative amounts crop."""
    if all(lo >= 0 and hi >= 0 for lo, hi in lohi):
        if not any(lo or hi for lo, hi in lohi):
            return a
        out = xp.full(tuple(s + lo + hi for s, (lo, hi) in zip(a.shape, lohi)), value, dtype=a.dtype)
        out[tuple(slice(lo, lo + s) for s, (lo, _) in zip(a.shape, lohi))] = a
        return out
    src = a[tuple(slice(max(-lo, 0), s - max(-hi, 0)) for s, (lo, hi) in zip(a.shape, lohi))]
    return pad_array(xp, src, [(max(lo, 0), max(hi, 0)) for lo, hi in lohi], value)


def spatial_pad(xp, a, lo, hi, value=0.0):
    """(N, C, *sp) ``a`` padded in its spatial dims."""
    return pad_array(xp, a, [(0, 0), (0, 0)] + list(zip(lo, hi)), value)


def sliding_windows(strided, xpad, kernel, dilation, stride, out_sp):
    """(N, C, *kernel, *out) strided view of the windows of contiguous (N, C, *sp) ``xpad``
    (``strided``: the namespace's ``as_strided``)."""
    st = xpad.strides
    nsp = len(kernel)
    shape = xpad.shape[:2] + tuple(kernel) + tuple(out_sp)
    strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(nsp)) + tuple(st[2 + i] * stride[i]
                                                                                  for i in range(nsp))
    return strided(xpad, shape, strides)
