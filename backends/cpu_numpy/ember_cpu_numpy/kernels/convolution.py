"""Convolution by im2col and GEMM: ``convolution``, its first-order gradients together
(``convolution_backward``) or one at a time (``conv_transpose``, ``conv_weight_grad``, which
double backward and transposed-convolution layers call), and ``im2col``/``col2im`` (unfold/fold).

Two layouts: (N, C*K, L) columns with one GEMM per sample (or per sample and group), and for
narrow maps without groups the batch-last layout (C*K, L*N) with one GEMM for the whole batch,
whose rows are (row x N) long: numpy's per-row cost then stops dominating im2col/col2im.
"""
from __future__ import annotations

import itertools
import math
import weakref

from ember.backend import dtypes as D
from ember.backend.shapes import conv_out, conv_transpose_out

from .base import KernelGroup
from .rules import back, work
from .windows import sliding_windows, spatial_pad

# The weight gradient of a convolution needs the same columns as its forward pass: when the
# weight requires grad, the forward keeps them for the backward of that very input tensor
# (checked by identity, version counter and geometry), within a memory budget.
_COLS_CACHE: dict = {}
_COLS_BUDGET = 256 << 20


def _cols_key(x, kernel, dilation, padding, stride):
    return (x._version[0], x._offset, x._shape, x._stride, tuple(kernel), tuple(dilation), tuple(padding),
            tuple(stride))


def _cache_cols(x, key, cols, out_sp):
    tid = id(x)
    if cols.nbytes > _COLS_BUDGET // 4:
        return
    used = sum(e[2].nbytes for e in _COLS_CACHE.values())
    while _COLS_CACHE and used + cols.nbytes > _COLS_BUDGET:
        old = _COLS_CACHE.pop(next(iter(_COLS_CACHE)))  # the oldest entry
        used -= old[2].nbytes
    ref = weakref.ref(x, lambda _r, tid=tid: _COLS_CACHE.pop(tid, None))
    _COLS_CACHE[tid] = (ref, key, cols, out_sp)


def batch_last(shape, groups) -> bool:
    """Whether the convolution family works in the batch-last layout (C, *sp, N) for inputs of
    ``shape`` (N, C, *sp): for narrow maps numpy's per-row cost dominates im2col/col2im copies in
    the (N, C, *sp) layout, whose rows are one map row long; batch-last rows are (row x N) long."""
    return groups == 1 and shape[0] > 1 and len(shape) > 2 and shape[-1] <= 16


def transposed_size(in_sp, stride, padding, output_padding, dilation, kernel):
    """The spatial size of a transposed convolution of an ``in_sp`` input."""
    return tuple(conv_transpose_out(in_sp[i], kernel[i], stride[i], padding[i], output_padding[i], dilation[i])
                 for i in range(len(kernel)))


def _block_slices(kk, in_sp, out_sp, dilation, padding, stride):
    """For kernel offset ``kk``: the (dst, src) slices per spatial dim through which col2im adds
    a column block (input positions lo..hi land at start, start + stride, ...), or None when the
    block falls outside the output."""
    dst, src = [], []
    for i in range(len(kk)):
        off = kk[i] * dilation[i] - padding[i]
        s_ = stride[i]
        lo = (-off + s_ - 1) // s_ if off < 0 else 0  # first input position landing at >= 0
        hi = min(in_sp[i], (out_sp[i] - 1 - off) // s_ + 1) if out_sp[i] - 1 - off >= 0 else 0
        if hi <= lo:
            return None
        start = off + lo * s_
        dst.append(slice(start, start + (hi - lo - 1) * s_ + 1, s_))
        src.append(slice(lo, hi))
    return dst, src


class Convolution(KernelGroup):
    """The convolution family."""

    def __init__(self, ns):
        super().__init__(ns)
        self.strided = ns.strided

    # -- layouts ------------------------------------------------------------------------------------
    def cols(self, a, kernel, dilation, padding, stride):
        """im2col: columns (N, C*K, L) of (N, C, *sp) ``a`` (zero padded), one copy of the windows."""
        xp = self.xp
        nsp = len(kernel)
        out_sp = tuple(conv_out(a.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
        N, C = a.shape[:2]
        if all(k == 1 for k in kernel) and all(s == 1 for s in stride) and not any(padding):
            return xp.ascontiguousarray(a).reshape(N, C, math.prod(a.shape[2:])), out_sp
        xpad = xp.ascontiguousarray(spatial_pad(xp, a, padding, padding))
        # (N, C, *k, *out): the (N, C*K, L) order
        win = sliding_windows(self.strided, xpad, kernel, dilation, stride, out_sp)
        return xp.ascontiguousarray(win).reshape(N, C * math.prod(kernel), math.prod(out_sp)), out_sp

    def batch_to_last(self, a):
        """(N, *rest) -> contiguous (prod(rest), N). For a few dozen rows and long ones numpy's
        transposing copy runs twice as fast through (N, M/64, 64) -> (M/64, N, 64) blocks
        (32 x 8192 float32: 0.21 -> 0.11 ms); small arrays go straight."""
        xp = self.xp
        N = a.shape[0]
        m = a.reshape(N, math.prod(a.shape[1:]))  # (no -1 anywhere here: N may be 0)
        M = m.shape[1]
        if N > 64 or M < 4096 or M % 64:
            return xp.ascontiguousarray(m.T)
        blocks = xp.ascontiguousarray(m.reshape(N, M // 64, 64).transpose(1, 0, 2))
        return xp.ascontiguousarray(blocks.transpose(0, 2, 1)).reshape(M, N)

    def cols_last(self, a, kernel, dilation, padding, stride):
        """im2col in the batch-last layout: columns (C*K, L*N) of (N, C, *sp) ``a``: one transposing
        copy into a zero-padded (C, *padded, N) buffer, then one copy of its windows."""
        xp = self.xp
        nsp = len(kernel)
        sp = a.shape[2:]
        out_sp = tuple(conv_out(sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(nsp))
        N, C = a.shape[:2]
        buf = xp.zeros((C,) + tuple(sp[i] + 2 * padding[i] for i in range(nsp)) + (N,), dtype=a.dtype)
        buf[(slice(None),) + tuple(slice(p, p + n) for p, n in zip(padding, sp))] = \
            self.batch_to_last(a).reshape((C,) + tuple(sp) + (N,))
        st = buf.strides
        win = self.strided(buf, (C,) + tuple(kernel) + out_sp + (N,),
                           (st[0],) + tuple(st[1 + i] * dilation[i] for i in range(nsp))
                           + tuple(st[1 + i] * stride[i] for i in range(nsp)) + (st[-1],))
        return xp.ascontiguousarray(win).reshape(C * math.prod(kernel), math.prod(out_sp) * N), out_sp

    def cached_cols(self, x, a, kernel, dilation, padding, stride, last):
        """The forward's columns of ``x`` when it kept them (see ``_COLS_CACHE``), else new ones."""
        e = _COLS_CACHE.pop(id(x), None)
        if e is not None and e[0]() is x and e[1] == _cols_key(x, kernel, dilation, padding, stride) + (last,):
            return e[2], e[3]
        return (self.cols_last if last else self.cols)(a, kernel, dilation, padding, stride)

    def col2im_cols(self, cols, C, out_sp, kernel, dilation, padding, stride, in_sp):
        """Sum columns (N, C*K, L_in) into (N, C, *out_sp): the adjoint of :meth:`cols`. Each kernel
        offset adds its (clipped) block straight into the output, without a padded buffer."""
        N = cols.shape[0]
        out = self.xp.zeros((N, C) + tuple(out_sp), dtype=cols.dtype)
        c = cols.reshape((N, C) + tuple(kernel) + tuple(in_sp))
        full = (slice(None), slice(None))
        for kk in itertools.product(*(range(k) for k in kernel)):
            sl = _block_slices(kk, in_sp, out_sp, dilation, padding, stride)
            if sl is not None:
                out[full + tuple(sl[0])] += c[full + kk + tuple(sl[1])]
        return out

    def col2im_last(self, cols, C, out_sp, kernel, dilation, padding, stride, in_sp):
        """:meth:`col2im_cols` in the batch-last layout: columns (C*K, L_in*N) into (C, *out_sp, N).
        Every block add then runs over rows of (width x N) contiguous elements instead of
        width-long rows, which is what makes col2im cheap for small images (numpy pays per inner
        loop)."""
        N = cols.shape[1] // math.prod(in_sp)
        out = self.xp.zeros((C,) + tuple(out_sp) + (N,), dtype=cols.dtype)
        c = cols.reshape((C,) + tuple(kernel) + tuple(in_sp) + (N,))
        for kk in itertools.product(*(range(k) for k in kernel)):
            sl = _block_slices(kk, in_sp, out_sp, dilation, padding, stride)
            if sl is not None:
                out[(slice(None),) + tuple(sl[0])] += c[(slice(None),) + kk + tuple(sl[1])]
        return out

    # -- kernels ------------------------------------------------------------------------------------
    def convolution(self, x, w, b, stride, padding, dilation, groups):
        xp = self.xp
        a, wt = self.nd(x), self.nd(w)
        dt = a.dtype
        a, wt = work(a), work(wt)
        N = a.shape[0]
        Cout = wt.shape[0]
        kernel = wt.shape[2:]
        G = groups
        last = batch_last(a.shape, G)
        # (Cin*K, L*N) batch-last, else (N, Cin*K, L)
        cols, out_sp = (self.cols_last if last else self.cols)(a, kernel, dilation, padding, stride)
        if w._requires_grad and x._dtype is not D.bfloat16:
            _cache_cols(x, _cols_key(x, kernel, dilation, padding, stride) + (last,), cols, out_sp)
        if last:  # one GEMM for the whole batch, then back to (N, Cout, *out_sp)
            r = xp.matmul(wt.reshape(Cout, -1), cols).reshape((Cout,) + out_sp + (N,))
            if b is not None:
                r += work(self.nd(b)).reshape((Cout,) + (1,) * (len(out_sp) + 1))
            return self.wrap(back(xp.ascontiguousarray(xp.moveaxis(r, -1, 0)), dt), x._device)
        if G == 1:
            r = xp.matmul(wt.reshape(Cout, -1), cols)  # one GEMM per sample, output already (N, Cout, L)
        else:
            cg = cols.reshape(N, G, cols.shape[1] // G, cols.shape[2])
            r = xp.matmul(wt.reshape(G, Cout // G, -1), cg).reshape(N, Cout, cols.shape[2])
        if b is not None:
            r += work(self.nd(b))[:, None]
        return self.wrap(back(r.reshape((N, Cout) + out_sp), dt), x._device)

    def _transposed(self, a, al, wt, groups, out_sp, kernel, dilation, padding, stride):
        """conv_transpose of (N, Cin, *in_sp) ``a`` with weight ``wt`` (Cin, Cout/G, *k), without
        bias: (N, Cout, *out_sp). ``al``: ``a`` batch-last (Cin, L_in*N), or None for the (N, C*K,
        L) layout. Batch-last is one GEMM (Cout*K, Cin) @ (Cin, L_in*N), col2im on long rows, and
        the way back to (N, Cout, *out_sp): for narrow inputs the two transposing copies cost less
        than col2im's short rows (LeNet's second conv: 1.48 -> 0.71 ms; 8x8 maps 1.30 -> 1.02);
        from about 32 columns on, rows are long enough and the copies would not pay."""
        xp = self.xp
        N, Cin = a.shape[:2]
        in_sp = a.shape[2:]
        Cout = wt.shape[1] * groups
        if al is not None:
            cols = xp.matmul(wt.reshape(Cin, -1).T, al)
            r = self.col2im_last(cols, Cout, out_sp, kernel, dilation, padding, stride, in_sp)
            return xp.ascontiguousarray(xp.moveaxis(r, -1, 0))
        L = math.prod(in_sp)
        xm = xp.ascontiguousarray(a).reshape(N, Cin, L)  # (no -1: N may be 0)
        if groups == 1:
            cols = xp.matmul(wt.reshape(Cin, -1).T, xm)  # (N, Cout*K, L_in)
        else:
            wg = wt.reshape(groups, Cin // groups, -1).transpose(0, 2, 1)
            cols = xp.matmul(wg, xm.reshape(N, groups, Cin // groups, L)).reshape(N, Cout * math.prod(kernel), L)
        return self.col2im_cols(cols, Cout, out_sp, kernel, dilation, padding, stride, in_sp)

    def _weight_grad(self, x, gg, gl, wshape, groups, dilation, padding, stride):
        """The weight gradient for input ``x`` and output gradient (N, Cout, *out_sp) ``gg``, from
        the forward's columns. ``gl``: ``gg`` batch-last (Cout, L*N), then one GEMM over all
        samples and positions (Cout, L*N) @ (L*N, Cin*K); or None for the (N, C*K, L) layout."""
        xp = self.xp
        kernel = tuple(wshape[2:])
        cols, _ = self.cached_cols(x, work(self.nd(x)), kernel, dilation, padding, stride, gl is not None)
        if gl is not None:
            return xp.ascontiguousarray(xp.matmul(gl, cols.T).reshape(tuple(wshape)))
        N, Cout = gg.shape[0], wshape[0]
        L = math.prod(gg.shape[2:])
        gm = xp.ascontiguousarray(gg).reshape(N, Cout, L)  # (no -1: N may be 0)
        if groups == 1:
            r = xp.matmul(gm, cols.transpose(0, 2, 1)).sum(0)
        else:
            cg = cols.reshape(N, groups, cols.shape[1] // groups, cols.shape[2])
            r = xp.matmul(gm.reshape(N, groups, Cout // groups, L), cg.transpose(0, 1, 3, 2)).sum(0)
        return xp.ascontiguousarray(r.reshape(tuple(wshape)))

    def _to_last(self, a, last):
        """(N, C, *sp) ``a`` as batch-last (C, L*N) when ``last``, else None."""
        return self.batch_to_last(a).reshape(a.shape[1], math.prod(a.shape[2:]) * a.shape[0]) if last else None

    def conv_transpose(self, x, w, b, stride, padding, output_padding, dilation, groups):
        a, wt = self.nd(x), self.nd(w)
        dt = a.dtype
        a, wt = work(a), work(wt)
        kernel = wt.shape[2:]
        out_sp = transposed_size(a.shape[2:], stride, padding, output_padding, dilation, kernel)
        r = self._transposed(a, self._to_last(a, batch_last(a.shape, groups)), wt, groups, out_sp, kernel, dilation,
                             padding, stride)
        if b is not None:
            r += work(self.nd(b)).reshape((1, -1) + (1,) * len(kernel))
        return self.wrap(back(r, dt), x._device)

    def conv_weight_grad(self, x, g, wshape, stride, padding, dilation, groups):
        dt = self.nd(x).dtype
        gg = work(self.nd(g))
        gl = self._to_last(gg, batch_last(x._shape, groups))  # the layout convolution made its columns in
        return self.wrap(back(self._weight_grad(x, gg, gl, wshape, groups, dilation, padding, stride), dt), x._device)

    def convolution_backward(self, g, x, w, stride, padding, dilation, groups, output_mask):
        """``(grad_input, grad_weight, grad_bias)``, each None unless ``output_mask`` asks for it,
        computed together: the batch-last copy of g is made once for all of them. Each part picks
        its layout as its own kernel would: the input gradient (a transposed convolution of g) by
        g's shape, the weight gradient by x's (the forward's columns)."""
        need_x, need_w, need_b = output_mask
        gg, wt = work(self.nd(g)), work(self.nd(w))
        dt = self.nd(g).dtype
        dev = g._device
        last_x = need_x and batch_last(gg.shape, groups)
        last_w = need_w and batch_last(x._shape, groups)
        gl = self._to_last(gg, last_x or last_w)  # (Cout, L*N)
        gx = gw = gb = None
        if need_x:
            r = self._transposed(gg, gl if last_x else None, wt, groups, x._shape[2:], wt.shape[2:], dilation, padding,
                                 stride)
            gx = self.wrap(back(r, dt), dev)
        if need_w:
            r = self._weight_grad(x, gg, gl if last_w else None, wt.shape, groups, dilation, padding, stride)
            gw = self.wrap(back(r, dt), dev)
        if need_b:
            r = gl.sum(axis=1) if gl is not None else gg.sum(axis=(0,) + tuple(range(2, gg.ndim)))
            gb = self.wrap(back(r, dt), dev)
        return gx, gw, gb

    def im2col(self, x, kernel, dilation, padding, stride):
        cols, _ = self.cols(self.nd(x), kernel, dilation, padding, stride)
        return self.wrap(self.xp.ascontiguousarray(cols), x._device)

    def col2im(self, cols, out_sp, kernel, dilation, padding, stride):
        c = self.nd(cols)
        C = c.shape[1] // math.prod(kernel)
        in_sp = tuple(conv_out(out_sp[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(len(kernel)))
        return self.wrap(self.col2im_cols(self.xp.ascontiguousarray(c), C, tuple(out_sp), kernel, dilation, padding,
                                          stride, in_sp), cols._device)

    def table(self) -> dict:
        return {"convolution": self.convolution, "conv_transpose": self.conv_transpose,
                "conv_weight_grad": self.conv_weight_grad, "convolution_backward": self.convolution_backward,
                "im2col": self.im2col, "col2im": self.col2im}
