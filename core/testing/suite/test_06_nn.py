"""Tier 6, nn: every layer's forward against a numpy float64 reference (float32 and float64, on
contiguous and strided inputs), gradients by gradcheck in float64 on small shapes, double
backward of the fused ops, and train/eval semantics. Runs on every backend (``device`` fixture):
natively where the backend has fused kernels, by the core's decompositions elsewhere."""
import itertools
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.testing import assert_close, check_grad, check_op
from ember.testing.helpers import supports


def _t(v, s):
    return (v,) * s if isinstance(v, int) else tuple(v)


# -- numpy references ---------------------------------------------------------------------------

def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    nsp = x.ndim - 2
    s, p, d = _t(stride, nsp), _t(padding, nsp), _t(dilation, nsp)
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    out_sp = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nsp)]
    N, Cin = x.shape[:2]
    Cout = w.shape[0]
    Cg, Og = Cin // groups, Cout // groups
    out = np.zeros((N, Cout) + tuple(out_sp))
    for g in range(groups):
        for kk in itertools.product(*(range(v) for v in k)):
            sl = (slice(None), slice(g * Cg, (g + 1) * Cg)) + tuple(
                slice(kk[i] * d[i], kk[i] * d[i] + (out_sp[i] - 1) * s[i] + 1, s[i]) for i in range(nsp))
            wk = w[(slice(g * Og, (g + 1) * Og), slice(None)) + kk]  # (Og, Cg)
            out[:, g * Og:(g + 1) * Og] += np.einsum("nc...,oc->no...", xp[sl], wk)
    if b is not None:
        out += b.reshape((1, Cout) + (1,) * nsp)
    return out


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nsp = x.ndim - 2
    s, p, op, d = _t(stride, nsp), _t(padding, nsp), _t(output_padding, nsp), _t(dilation, nsp)
    k = w.shape[2:]
    N, Cin = x.shape[:2]
    Og = w.shape[1]
    Cout = Og * groups
    Cg = Cin // groups
    in_sp = x.shape[2:]
    full = [(in_sp[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nsp)]
    out = np.zeros((N, Cout) + tuple(full))
    for g in range(groups):
        for kk in itertools.product(*(range(v) for v in k)):
            sl = (slice(None), slice(g * Og, (g + 1) * Og)) + tuple(
                slice(kk[i] * d[i], kk[i] * d[i] + (in_sp[i] - 1) * s[i] + 1, s[i]) for i in range(nsp))
            wk = w[(slice(g * Cg, (g + 1) * Cg), slice(None)) + kk]  # (Cg, Og)
            out[sl] += np.einsum("nc...,co->no...", x[:, g * Cg:(g + 1) * Cg], wk)
    crop = (slice(None), slice(None)) + tuple(slice(p[i], full[i] - p[i]) for i in range(nsp))
    out = out[crop]
    if b is not None:
        out = out + b.reshape((1, Cout) + (1,) * nsp)
    return out


def _pool_out(L, k, s, p, d, ceil):
    span = L + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= L + p:
        o -= 1
    return o


def np_max_pool(x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    nsp = x.ndim - 2
    k = _t(kernel, nsp)
    s = k if stride is None else _t(stride, nsp)
    p, d = _t(padding, nsp), _t(dilation, nsp)
    sp = x.shape[2:]
    out_sp = [_pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nsp)]
    N, C = x.shape[:2]
    vals = np.zeros((N, C) + tuple(out_sp))
    idx = np.zeros((N, C) + tuple(out_sp), dtype=np.int64)
    for o in itertools.product(*(range(v) for v in out_sp)):
        best = np.full((N, C), -np.inf)
        bi = np.zeros((N, C), dtype=np.int64)
        for kk in itertools.product(*(range(v) for v in k)):
            c = [o[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nsp)]
            if any(ci < 0 or ci >= sp[i] for i, ci in enumerate(c)):
                continue
            v = x[(slice(None), slice(None)) + tuple(c)]
            flat = int(np.ravel_multi_index(c, sp))
            better = v > best
            best = np.where(better, v, best)
            bi = np.where(better, flat, bi)
        vals[(slice(None), slice(None)) + o] = best
        idx[(slice(None), slice(None)) + o] = bi
    return vals, idx


def np_avg_pool(x, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    nsp = x.ndim - 2
    k = _t(kernel, nsp)
    s = k if stride is None else _t(stride, nsp)
    p = _t(padding, nsp)
    sp = x.shape[2:]
    out_sp = [_pool_out(sp[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(nsp)]
    N, C = x.shape[:2]
    out = np.zeros((N, C) + tuple(out_sp))
    for o in itertools.product(*(range(v) for v in out_sp)):
        sl, size_incl, size_excl = [], 1, 1
        for i in range(nsp):
            start = o[i] * s[i] - p[i]
            end = min(start + k[i], sp[i] + p[i])
            size_incl *= end - start
            a, b = max(start, 0), min(end, sp[i])
            size_excl *= b - a
            sl.append(slice(a, b))
        tot = x[(slice(None), slice(None)) + tuple(sl)].sum(axis=tuple(range(2, 2 + nsp)))
        div = divisor_override or (size_incl if count_include_pad else size_excl)
        out[(slice(None), slice(None)) + o] = tot / div
    return out


def np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    s = x - x.max(axis=dim, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=dim, keepdims=True))


def _np_norm(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def np_erf(x):
    return np.vectorize(math.erf)(x)


# -- linear, conv -------------------------------------------------------------------------------

def test_linear(device):
    check_op(F.linear, lambda x, w, b: x @ w.T + b, [(3, 4), (5, 4), (5,)], device=device, grad=True, name="linear")
    check_op(F.linear, lambda x, w: x @ w.T, [(2, 3, 4), (5, 4)], device=device, grad=True, name="linear")


def test_bilinear(device):
    check_op(F.bilinear, lambda a, b, w, bias: np.einsum("ni,oij,nj->no", a, w, b) + bias,
             [(3, 2), (3, 4), (5, 2, 4), (5,)], device=device, grad=True, name="bilinear")


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2), dict(groups=2),
                                dict(stride=(1, 2), padding=(0, 1))])
def test_conv2d(device, kw):
    def ref(x, w, b):
        return np_conv(x, w, b, **kw)
    check_op(lambda x, w, b: F.conv2d(x, w, b, **kw), ref, [(2, 4, 7, 6), (6, 4 // kw.get("groups", 1), 3, 3), (6,)],
             device=device, name="conv2d", layouts_=("contiguous", "transposed"))
    check_grad(lambda x, w, b: F.conv2d(x, w, b, **kw), [(1, 4, 5, 5), (2, 4 // kw.get("groups", 1), 2, 2), (2,)],
               device=device, name="conv2d")


def test_conv1d_conv3d(device):
    check_op(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), lambda x, w, b: np_conv(x, w, b, 2, 1),
             [(2, 3, 9), (4, 3, 3), (4,)], device=device, grad=True, name="conv1d")
    check_op(lambda x, w: F.conv3d(x, w, padding=1), lambda x, w: np_conv(x, w, None, 1, 1),
             [(1, 2, 4, 3, 3), (3, 2, 2, 2, 2)], device=device, name="conv3d", layouts_=("contiguous",))
    check_grad(lambda x, w: F.conv3d(x, w), [(1, 1, 3, 3, 3), (1, 1, 2, 2, 2)], device=device, name="conv3d")


def test_conv_padding_same_and_modes(device):
    check_op(lambda x, w: F.conv2d(x, w, padding="same"),
             lambda x, w: np_conv(np.pad(x, [(0, 0), (0, 0), (0, 1), (0, 1)]), w),
             [(1, 2, 5, 5), (3, 2, 2, 2)], device=device, name="conv2d_same", layouts_=("contiguous",))
    for mode, npmode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        m = nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, bias=False).to(device)
        x = ember.randn(1, 2, 5, 4, device=device)
        exp = np_conv(np.pad(x.numpy(force=True).astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)], mode=npmode),
                      m.weight.detach().numpy(force=True).astype(np.float64))
        assert_close(m(x), exp, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1), dict(dilation=2),
                                dict(groups=2, stride=2)])
def test_conv_transpose2d(device, kw):
    g = kw.get("groups", 1)
    check_op(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), lambda x, w, b: np_conv_transpose(x, w, b, **kw),
             [(2, 4, 4, 3), (4, 6 // g, 3, 3), (6,)], device=device, name="conv_transpose2d",
             layouts_=("contiguous", "transposed"))
    check_grad(lambda x, w: F.conv_transpose2d(x, w, **kw), [(1, 2, 3, 3), (2, 2 // g, 2, 2)], device=device,
               name="conv_transpose2d")


def test_conv_transpose1d_3d(device):
    check_op(lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=1),
             lambda x, w: np_conv_transpose(x, w, None, 3, 1), [(2, 3, 5), (3, 2, 4)], device=device, grad=True,
             name="conv_transpose1d")
    check_op(lambda x, w: F.conv_transpose3d(x, w, stride=2), lambda x, w: np_conv_transpose(x, w, None, 2),
             [(1, 2, 2, 3, 2), (2, 1, 2, 2, 2)], device=device, name="conv_transpose3d", layouts_=("contiguous",))


def test_conv_double_backward(device):
    if not supports(device, ember.float64):
        pytest.skip("the backend has no float64")
    x = ember.randn(1, 2, 4, 4, dtype=ember.float64, device=device, requires_grad=True)
    w = ember.randn(2, 1, 2, 2, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: F.conv2d(a, b, stride=2, padding=1, groups=2), (x, w))
    wt = ember.randn(2, 3, 2, 2, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: F.conv_transpose2d(a, b, stride=2), (x, wt))


def test_nn_empty_batch(device):
    """A batch of 0 goes through convolutions, pooling and batch norm, forward and backward; the
    parameters' gradients are zeros (not uninitialised memory)."""
    for nsp, transposed in itertools.product((1, 2), (False, True)):
        x = ember.zeros((0, 4) + (5,) * nsp, device=device, requires_grad=True)
        w = ember.randn(((4, 3) if transposed else (3, 4)) + (2,) * nsp, device=device, requires_grad=True)
        b = ember.randn(3, device=device, requires_grad=True)
        y = (F.conv_transpose1d, F.conv_transpose2d)[nsp - 1] if transposed else (F.conv1d, F.conv2d)[nsp - 1]
        out = y(x, w, b)
        assert out.shape == (0, 3) + ((6 if transposed else 4),) * nsp
        out.sum().backward()
        assert x.grad.shape == x.shape
        assert_close(w.grad, ember.zeros(w.shape, device=device))
        assert_close(b.grad, ember.zeros(3, device=device))
    x = ember.zeros(0, 3, 6, 6, device=device, requires_grad=True)
    (F.max_pool2d(x, 2).sum() + F.avg_pool2d(x, 2).sum() + F.adaptive_max_pool2d(x, 4).sum()
     + F.adaptive_avg_pool2d(x, 4).sum() + F.softmax(x, 0).sum()).backward()
    assert x.grad.shape == x.shape
    x = ember.zeros(0, 4, 5, device=device, requires_grad=True)
    wn = ember.ones(4, device=device, requires_grad=True)
    rm, rv = ember.zeros(4, device=device), ember.ones(4, device=device)
    F.batch_norm(x, rm, rv, wn, None, training=True).sum().backward()
    assert_close(wn.grad, ember.zeros(4, device=device))
    assert_close(rv, ember.ones(4, device=device))


def test_unfold_fold(device):
    def ref_unfold(x):
        N, C = x.shape[:2]
        cols = []
        xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
        oh, ow = (xp.shape[2] - 2) // 1 + 1 - 1, (xp.shape[3] - 2) // 1 + 1 - 1
        for c in range(C):
            for i in range(3):
                for j in range(3):
                    cols.append(xp[:, c, i:i + oh, j:j + ow].reshape(N, -1))
        return np.stack(cols, 1)
    check_op(lambda x: F.unfold(x, 3, padding=1), ref_unfold, [(2, 2, 4, 5)], device=device, grad=True, name="unfold")
    x = ember.randn(2, 3 * 4, 12, device=device)
    y = F.fold(x, (4, 5), 2)
    # fold is the adjoint of unfold: <fold(x), z> == <x, unfold(z)>
    z = ember.randn(2, 3, 4, 5, device=device)
    assert abs((y * z).sum().item() - (x * F.unfold(z, 2)).sum().item()) < 1e-3
    check_grad(lambda c: F.fold(c, (3, 3), 2), [(1, 4, 4)], device=device, name="fold")


# -- pooling ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=2, ceil_mode=True), dict(kernel_size=2, dilation=2)])
def test_max_pool2d(device, kw):
    def ref(x):
        return np_max_pool(x, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), kw.get("dilation", 1),
                           kw.get("ceil_mode", False))[0]
    check_op(lambda x: F.max_pool2d(x, **kw), ref, [(2, 3, 7, 5)], device=device, grad=True, name="max_pool2d")
    x = ember.tensor(np.random.default_rng(1).permutation(70).reshape(1, 2, 7, 5).astype(np.float32), device=device)
    _, idx = F.max_pool2d(x, return_indices=True, **kw)
    assert_close(idx, np_max_pool(x.numpy(force=True).astype(np.float64), kw["kernel_size"], kw.get("stride"),
                                  kw.get("padding", 0), kw.get("dilation", 1), kw.get("ceil_mode", False))[1])


def test_max_pool1d_3d_and_unpool(device):
    check_op(lambda x: F.max_pool1d(x, 3, 2, 1), lambda x: np_max_pool(x, 3, 2, 1)[0], [(2, 3, 8)], device=device,
             grad=True, name="max_pool1d")
    check_op(lambda x: F.max_pool3d(x, 2), lambda x: np_max_pool(x, 2)[0], [(1, 2, 4, 4, 3)], device=device,
             name="max_pool3d", layouts_=("contiguous",))
    x = ember.tensor(np.random.default_rng(2).permutation(32).reshape(1, 2, 4, 4).astype(np.float32), device=device)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    u = F.max_unpool2d(y, idx, 2)
    xn = x.numpy(force=True)
    keep = np.zeros_like(xn)
    for n, c, i, j in itertools.product(range(1), range(2), range(2), range(2)):
        blk = xn[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        a, b = np.unravel_index(blk.argmax(), (2, 2))
        keep[n, c, 2 * i + a, 2 * j + b] = blk.max()
    assert_close(u, keep)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, ceil_mode=True),
                                dict(kernel_size=2, stride=1, padding=1, divisor_override=3)])
def test_avg_pool2d(device, kw):
    def ref(x):
        return np_avg_pool(x, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), kw.get("ceil_mode", False),
                           kw.get("count_include_pad", True), kw.get("divisor_override"))
    check_op(lambda x: F.avg_pool2d(x, **kw), ref, [(2, 3, 6, 5)], device=device, grad=True, name="avg_pool2d")


def test_avg_pool1d_3d_lp(device):
    check_op(lambda x: F.avg_pool1d(x, 3, 2, 1), lambda x: np_avg_pool(x, 3, 2, 1), [(2, 2, 7)], device=device,
             grad=True, name="avg_pool1d")
    check_op(lambda x: F.avg_pool3d(x, 2), lambda x: np_avg_pool(x, 2), [(1, 2, 4, 2, 4)], device=device,
             name="avg_pool3d", layouts_=("contiguous",))
    check_op(lambda x: F.lp_pool2d(x, 2, 2), lambda x: np.sqrt(np_avg_pool(x * x, 2) * 4),
             [{"shape": (1, 2, 4, 4), "low": 0.5, "high": 2}], device=device, grad=True, name="lp_pool2d")


def _np_adaptive(x, out, red):
    nsp = x.ndim - 2
    res = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        sl = tuple(slice((o[i] * x.shape[2 + i]) // out[i], -(-((o[i] + 1) * x.shape[2 + i]) // out[i]))
                   for i in range(nsp))
        res[(slice(None), slice(None)) + o] = red(x[(slice(None), slice(None)) + sl], axis=tuple(range(2, 2 + nsp)))
    return res


def test_adaptive_pools(device):
    check_op(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), lambda x: _np_adaptive(x, (3, 2), np.mean), [(2, 2, 7, 5)],
             device=device, grad=True, name="adaptive_avg_pool2d")
    check_op(lambda x: F.adaptive_avg_pool2d(x, 2), lambda x: _np_adaptive(x, (2, 2), np.mean), [(1, 2, 4, 6)],
             device=device, name="adaptive_avg_pool2d")
    check_op(lambda x: F.adaptive_avg_pool1d(x, 3), lambda x: _np_adaptive(x, (3,), np.mean), [(2, 2, 7)],
             device=device, grad=True, name="adaptive_avg_pool1d")
    check_op(lambda x: F.adaptive_max_pool2d(x, (2, 3)), lambda x: _np_adaptive(x, (2, 3), np.max), [(2, 2, 5, 7)],
             device=device, grad=True, name="adaptive_max_pool2d")
    check_op(lambda x: F.adaptive_max_pool1d(x, 4), lambda x: _np_adaptive(x, (4,), np.max), [(1, 2, 9)],
             device=device, name="adaptive_max_pool1d")
    x = ember.tensor(np.random.default_rng(3).permutation(35).reshape(1, 1, 5, 7).astype(np.float32), device=device)
    v, i = F.adaptive_max_pool2d(x, (2, 3), return_indices=True)
    assert_close(x.reshape(1, 1, -1).gather(2, i.reshape(1, 1, -1)).reshape(v.shape), v.numpy(force=True))


# -- normalisation ------------------------------------------------------------------------------

def test_batch_norm_train_and_eval(device):
    def ref(x, w, b):
        return _np_norm(x, (0, 2, 3), 1e-5) * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
    check_op(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), ref, [(4, 3, 2, 3), (3,), (3,)],
             device=device, grad=True, name="batch_norm")
    m = nn.BatchNorm2d(3).to(device)
    x = ember.randn(8, 3, 4, 4, device=device) * 2 + 1
    xn = x.numpy(force=True).astype(np.float64)
    m(x)
    assert_close(m.running_mean, 0.1 * xn.mean((0, 2, 3)), rtol=1e-4, atol=1e-5)
    assert_close(m.running_var, 0.9 + 0.1 * xn.var((0, 2, 3), ddof=1), rtol=1e-4, atol=1e-5)
    assert m.num_batches_tracked.item() == 1
    m.eval()
    y = m(x)
    exp = (xn - m.running_mean.numpy(force=True).reshape(1, -1, 1, 1)) / np.sqrt(
        m.running_var.numpy(force=True).reshape(1, -1, 1, 1) + 1e-5)
    assert_close(y, exp, rtol=1e-4, atol=1e-5)
    mc = nn.BatchNorm1d(2, momentum=None).to(device)
    a, b = ember.randn(5, 2, device=device), ember.randn(5, 2, device=device)
    mc(a)
    mc(b)
    assert_close(mc.running_mean, (a.numpy(force=True).mean(0) + b.numpy(force=True).mean(0)) / 2, rtol=1e-4, atol=1e-5)


def test_batch_norm_double_backward(device):
    if not supports(device, ember.float64):
        pytest.skip("the backend has no float64")
    x = ember.randn(4, 2, 3, dtype=ember.float64, device=device, requires_grad=True)
    w = ember.randn(2, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: F.batch_norm(a, None, None, b, None, True), (x, w))
    assert ember.autograd.gradgradcheck(lambda a, b: F.layer_norm(a, (3,), b[:1].expand(3)), (x, w))


def test_layer_group_instance_rms_norm(device):
    check_op(lambda x, w, b: F.layer_norm(x, (3, 4), w, b), lambda x, w, b: _np_norm(x, (1, 2), 1e-5) * w + b,
             [(2, 3, 4), (3, 4), (3, 4)], device=device, grad=True, name="layer_norm")
    check_op(lambda x, w, b: F.group_norm(x, 2, w, b),
             lambda x, w, b: _np_norm(x.reshape(2, 2, -1), (2,), 1e-5).reshape(x.shape) * w.reshape(1, -1, 1)
             + b.reshape(1, -1, 1), [(2, 4, 3), (4,), (4,)], device=device, grad=True, name="group_norm")
    check_op(lambda x: F.instance_norm(x), lambda x: _np_norm(x, (2, 3), 1e-5), [(2, 3, 3, 4)], device=device,
             grad=True, name="instance_norm")
    check_op(lambda x, w: F.rms_norm(x, (4,), w, 1e-6),
             lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w, [(3, 4), (4,)], device=device,
             grad=True, name="rms_norm")

    def np_lrn(x, size=3, alpha=1e-4, beta=0.75, k=1.0):
        sq = x * x
        C = x.shape[1]
        div = np.zeros_like(x)
        for c in range(C):
            lo, hi = max(0, c - size // 2), min(C, c + (size - 1) // 2 + 1)
            div[:, c] = sq[:, lo:hi].sum(1)
        return x / (div * alpha / size + k) ** beta
    check_op(lambda x: F.local_response_norm(x, 3), np_lrn, [(2, 5, 3, 2)], device=device, grad=True, name="lrn")


# -- activations --------------------------------------------------------------------------------

_ACT = [
    ("relu", F.relu, lambda x: np.maximum(x, 0)),
    ("relu6", F.relu6, lambda x: np.clip(x, 0, 6)),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    ("elu", F.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    ("selu", F.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("celu", lambda x: F.celu(x, 2.0), lambda x: np.maximum(x, 0) + np.minimum(0, 2 * np.expm1(x / 2))),
    ("gelu", F.gelu, lambda x: 0.5 * x * (1 + np_erf(x / np.sqrt(2)))),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("silu", F.silu, lambda x: x / (1 + np.exp(-x))),
    ("mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("sigmoid", F.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", F.tanh, np.tanh),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0)),
    ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("softplus", lambda x: F.softplus(x, 2.0, 4.0), lambda x: np.where(2 * x > 4, x, np.log1p(np.exp(2 * x)) / 2)),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x))),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x)),
    ("hardshrink", F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0)),
    ("softshrink", F.softshrink, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0))),
    ("threshold", lambda x: F.threshold(x, 0.3, -2.0), lambda x: np.where(x > 0.3, x, -2.0)),
    ("logsigmoid", F.logsigmoid, lambda x: -np.log1p(np.exp(-x))),
    ("glu", F.glu, lambda x: x[..., :2] / (1 + np.exp(-x[..., 2:]))),
    ("softmax", lambda x: F.softmax(x, 1), lambda x: np_softmax(x, 1)),
    ("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: np_log_softmax(x, -1)),
    ("softmin", lambda x: F.softmin(x, 0), lambda x: np_softmax(-x, 0)),
]


@pytest.mark.parametrize("name,fn,ref", _ACT, ids=[a[0] for a in _ACT])
def test_activation(device, name, fn, ref):
    check_op(fn, ref, [(3, 4)], device=device, grad=True, name=name)


def test_prelu_and_modules_match_functional(device):
    check_op(lambda x, w: F.prelu(x, w), lambda x, w: np.where(x >= 0, x, w.reshape(1, -1, 1) * x),
             [(2, 3, 4), (3,)], device=device, grad=True, name="prelu")
    x = ember.randn(2, 3, 4, device=device)
    assert_close(nn.Softmax2d()(x), np_softmax(x.numpy(force=True).astype(np.float64), -3), rtol=1e-5, atol=1e-6)
    for mod, fn in ((nn.ReLU(), F.relu), (nn.GELU(), F.gelu), (nn.Tanh(), F.tanh), (nn.SiLU(), F.silu)):
        assert_close(mod(x), fn(x).numpy(force=True))
    y = x.clone()
    nn.ReLU(inplace=True)(y)
    assert_close(y, np.maximum(x.numpy(force=True), 0))


# -- losses -------------------------------------------------------------------------------------

def _targets(device, n, c, seed=0, ignore=None):
    t = np.random.default_rng(seed).integers(0, c, n)
    if ignore is not None:
        t[0] = ignore
    return ember.tensor(t, device=device), t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll(device, reduction):
    t, tn = _targets(device, 4, 5, ignore=-100)
    w = ember.tensor([1.0, 2.0, 0.5, 1.5, 1.0], device=device)
    wn = w.numpy(force=True).astype(np.float64)

    def ref(x):
        lp = np_log_softmax(x, 1)
        valid = tn != -100
        safe = np.where(valid, tn, 0)
        loss = -lp[np.arange(4), safe] * wn[safe] * valid
        if reduction == "none":
            return loss
        return loss.sum() / (wn[safe] * valid).sum() if reduction == "mean" else loss.sum()
    check_op(lambda x: F.cross_entropy(x, t, weight=w, reduction=reduction), ref, [(4, 5)], device=device, grad=True,
             name="cross_entropy")
    check_op(lambda x: F.nll_loss(x, t, reduction=reduction, ignore_index=-100),
             lambda x: (lambda l: l if reduction == "none" else l.sum() / 3 if reduction == "mean" else l.sum())(
                 np.where(tn != -100, -x[np.arange(4), np.where(tn != -100, tn, 0)], 0)),
             [(4, 5)], device=device, grad=True, name="nll_loss")


def test_cross_entropy_nd_smoothing_and_probabilities(device):
    t = ember.tensor(np.random.default_rng(0).integers(0, 3, (2, 4)), device=device)
    tn = t.numpy(force=True)

    def ref(x, ls=0.0):
        lp = np_log_softmax(x, 1)
        nll = -np.take_along_axis(lp, tn[:, None], 1)[:, 0]
        smooth = -lp.sum(1)
        return ((1 - ls) * nll + ls / 3 * smooth).mean()
    check_op(lambda x: F.cross_entropy(x, t), ref, [(2, 3, 4)], device=device, grad=True, name="cross_entropy_nd")
    check_op(lambda x: F.cross_entropy(x, t, label_smoothing=0.2), lambda x: ref(x, 0.2), [(2, 3, 4)], device=device,
             grad=True, name="cross_entropy_ls")
    check_op(lambda x, p: F.cross_entropy(x, p), lambda x, p: -(np_log_softmax(x, 1) * p).sum(1).mean(),
             [(3, 4), {"shape": (3, 4), "low": 0, "high": 1}], device=device, grad=True, name="cross_entropy_prob")


_PAIR_LOSSES = [
    ("l1", F.l1_loss, lambda x, y: np.abs(x - y).mean()),
    ("mse", F.mse_loss, lambda x, y: ((x - y) ** 2).mean()),
    ("smooth_l1", lambda x, y: F.smooth_l1_loss(x, y, beta=0.5),
     lambda x, y: np.where(np.abs(x - y) < 0.5, (x - y) ** 2, np.abs(x - y) - 0.25).mean()),
    ("huber", lambda x, y: F.huber_loss(x, y, delta=0.7, reduction="sum"),
     lambda x, y: np.where(np.abs(x - y) <= 0.7, 0.5 * (x - y) ** 2, 0.7 * (np.abs(x - y) - 0.35)).sum()),
    ("bce_logits", F.binary_cross_entropy_with_logits,
     lambda x, y: (np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))).mean()),
    ("kl_div", lambda x, y: F.kl_div(x, y, reduction="batchmean", log_target=True),
     lambda x, y: (np.exp(y) * (y - x)).sum() / x.shape[0]),
    ("poisson_nll", F.poisson_nll_loss, lambda x, y: (np.exp(x) - y * x).mean()),
    ("multilabel_soft_margin", F.multilabel_soft_margin_loss,
     lambda x, y: (-(y * -np.log1p(np.exp(-x)) + (1 - y) * -np.log1p(np.exp(x)))).mean(1).mean()),
]


@pytest.mark.parametrize("name,fn,ref", _PAIR_LOSSES, ids=[p[0] for p in _PAIR_LOSSES])
def test_pair_losses(device, name, fn, ref):
    check_op(fn, ref, [(3, 4), {"shape": (3, 4), "low": 0, "high": 1}], device=device, grad=True, name=name)


def test_soft_margin_loss(device):
    # a fixed target: it is not differentiable (PyTorch refuses one that requires grad)
    y = ember.tensor([[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, -1.0], [1.0, -1.0, -1.0, 1.0]], device=device)
    yn = y.numpy(force=True).astype(np.float64)
    check_op(lambda x: F.soft_margin_loss(x, y), lambda x: np.log1p(np.exp(-yn * x)).mean(), [(3, 4)], device=device,
             grad=True, name="soft_margin")
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'target'"):
        F.soft_margin_loss(ember.zeros(3, 4, device=device), y.clone().requires_grad_())


def test_bce_and_pos_weight(device):
    check_op(F.binary_cross_entropy, lambda p, y: -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(),
             [{"shape": (3, 4), "low": 0.05, "high": 0.95}, {"shape": (3, 4), "low": 0, "high": 1}], device=device,
             grad=True, name="bce")
    pw = ember.tensor([1.0, 2.0, 3.0, 0.5], device=device)
    pwn = pw.numpy(force=True).astype(np.float64)
    check_op(lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
             lambda x, y: (-(pwn * y * -np.log1p(np.exp(-x)) + (1 - y) * -np.log1p(np.exp(x)))).mean(),
             [(3, 4), {"shape": (3, 4), "low": 0, "high": 1}], device=device, grad=True, name="bce_pos_weight")


def test_margin_and_embedding_losses(device):
    y = ember.tensor([1.0, -1.0, 1.0], device=device)
    yn = y.numpy(force=True)
    check_op(lambda a, b: F.margin_ranking_loss(a, b, y, 0.5), lambda a, b: np.maximum(0, -yn * (a - b) + 0.5).mean(),
             [(3,), (3,)], device=device, grad=True, name="margin_ranking")
    check_op(lambda a: F.hinge_embedding_loss(a, y), lambda a: np.where(yn == 1, a, np.maximum(0, 1 - a)).mean(),
             [(3,)], device=device, grad=True, name="hinge_embedding")

    def cos_ref(a, b):
        cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
        return np.where(yn == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean()
    check_op(lambda a, b: F.cosine_embedding_loss(a, b, y, 0.1), cos_ref, [(3, 4), (3, 4)], device=device, grad=True,
             name="cosine_embedding")

    def trip_ref(a, p, n):
        d1 = np.linalg.norm(a - p + 1e-6, axis=1)
        d2 = np.linalg.norm(a - n + 1e-6, axis=1)
        return np.maximum(0, d1 - d2 + 1.0).mean()
    check_op(F.triplet_margin_loss, trip_ref, [(3, 4), (3, 4), (3, 4)], device=device, grad=True, name="triplet")
    t, tn = _targets(device, 3, 4)

    def mm_ref(x):
        xy = x[np.arange(3), tn][:, None]
        z = np.maximum(0, 1 - xy + x)
        z[np.arange(3), tn] = 0
        return (z.sum(1) / 4).mean()
    check_op(lambda x: F.multi_margin_loss(x, t), mm_ref, [(3, 4)], device=device, grad=True, name="multi_margin")


def test_gaussian_nll(device):
    check_op(lambda x, t, v: F.gaussian_nll_loss(x, t, v),
             lambda x, t, v: (0.5 * (np.log(v) + (x - t) ** 2 / v)).mean(),
             [(3, 2), (3, 2), {"shape": (3, 2), "low": 0.5, "high": 2}], device=device, grad=True, name="gaussian_nll")


def _np_ctc(lp, tgt, blank=0):
    """Brute force over all alignments (tiny T): -log sum_{paths collapsing to tgt} prod p."""
    T, C = lp.shape
    tot = -np.inf
    for path in itertools.product(range(C), repeat=T):
        col = []
        prev = None
        for s in path:
            if s != prev and s != blank:
                col.append(s)
            prev = s
        if col == list(tgt):
            tot = np.logaddexp(tot, sum(lp[t, s] for t, s in enumerate(path)))
    return -tot


def test_ctc_loss(device):
    rng = np.random.default_rng(0)
    lp = np_log_softmax(rng.standard_normal((4, 2, 3)), 2)
    targets = np.array([[1, 2], [1, 1]])
    x = ember.tensor(lp, dtype=ember.float32, device=device)
    got = F.ctc_loss(x, ember.tensor(targets, device=device), [4, 4], [2, 2], reduction="none")
    exp = [_np_ctc(lp[:, 0], [1, 2]), _np_ctc(lp[:, 1], [1, 1])]
    assert_close(got, np.array(exp), rtol=1e-4, atol=1e-4)
    got = F.ctc_loss(x, ember.tensor([1, 2, 1], device=device), [4, 3], [2, 1], reduction="sum")
    assert_close(got, _np_ctc(lp[:, 0], [1, 2]) + _np_ctc(lp[:3, 1], [1]), rtol=1e-4, atol=1e-4)
    check_grad(lambda a: F.ctc_loss(a.log_softmax(2), ember.tensor(targets, device=device), [4, 4], [2, 1]),
               [(4, 2, 3)], device=device, name="ctc_loss")


# -- embedding, dropout -------------------------------------------------------------------------

def test_embedding_and_bag(device):
    idx = ember.tensor([[0, 2, 1], [1, 1, 3]], device=device)
    idn = idx.numpy(force=True)
    check_op(lambda w: F.embedding(idx, w), lambda w: w[idn], [(4, 3)], device=device, grad=True, name="embedding")
    w = ember.randn(4, 3, device=device, requires_grad=True)
    F.embedding(idx, w, padding_idx=1).sum().backward()
    g = w.grad.numpy(force=True)
    assert g[1].tolist() == [0.0, 0.0, 0.0] and g[0].tolist() == [1.0, 1.0, 1.0] and g[3].tolist() == [1.0] * 3
    for mode, red in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        check_op(lambda w: F.embedding_bag(idx, w, mode=mode), lambda w: red(w[idn], axis=1), [(4, 3)],
                 device=device, grad=True, name=f"embedding_bag_{mode}")
    flat = ember.tensor([0, 2, 1, 3, 3], device=device)
    offs = ember.tensor([0, 2, 2], device=device)
    r = F.embedding_bag(flat, w.detach(), offs, mode="sum")
    wn = w.detach().numpy(force=True)
    assert_close(r, np.stack([wn[[0, 2]].sum(0), np.zeros(3), wn[[1, 3, 3]].sum(0)]), rtol=1e-5, atol=1e-6)


def test_dropout_statistics_and_eval(device):
    x = ember.ones(20000, device=device)
    y = F.dropout(x, 0.3, training=True)
    yn = y.numpy(force=True)
    vals = np.unique(yn)
    assert len(vals) == 2 and vals[0] == 0 and abs(vals[1] - 1 / 0.7) < 1e-6
    assert abs((yn == 0).mean() - 0.3) < 0.02
    assert F.dropout(x, 0.3, training=False) is x
    xg = ember.ones(10, device=device, requires_grad=True)
    out = F.dropout(xg, 0.5)
    out.sum().backward()
    assert_close(xg.grad, out.detach().numpy(force=True))
    m = nn.Dropout2d(0.5)
    z = m(ember.ones(4, 6, 3, 3, device=device)).numpy(force=True)
    assert all(len(np.unique(z[n, c])) == 1 for n in range(4) for c in range(6))
    m.eval()
    assert_close(m(ember.ones(2, 2, 2, 2, device=device)), np.ones((2, 2, 2, 2)))
    a = F.alpha_dropout(ember.randn(50000, device=device), 0.2, training=True).numpy(force=True)
    assert abs(a.mean()) < 0.03 and abs(a.std() - 1) < 0.03


# -- spatial utilities --------------------------------------------------------------------------

@pytest.mark.parametrize("mode,npmode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                         ("circular", "wrap")])
def test_pad(device, mode, npmode):
    check_op(lambda x: F.pad(x, (1, 2, 2, 0), mode=mode), lambda x: np.pad(x, [(0, 0), (0, 0), (2, 0), (1, 2)],
                                                                            mode=npmode),
             [(1, 2, 3, 4)], device=device, grad=True, name=f"pad_{mode}")
    check_op(lambda x: F.pad(x, (-1, 1), value=2.5),
             lambda x: np.concatenate([x[..., 1:], np.full(x.shape[:-1] + (1,), 2.5)], -1), [(2, 3)], device=device,
             grad=True, name="pad_crop")


def _np_interp_1d(x, out, align):
    L = x.shape[-1]
    res = np.zeros(x.shape[:-1] + (out,))
    for o in range(out):
        if align:
            s = o * (L - 1) / (out - 1) if out > 1 else 0
        else:
            s = max((o + 0.5) * L / out - 0.5, 0)
        i0 = min(int(np.floor(s)), L - 1)
        i1 = min(i0 + 1, L - 1)
        lam = s - i0
        res[..., o] = x[..., i0] * (1 - lam) + x[..., i1] * lam
    return res


def test_interpolate(device):
    check_op(lambda x: F.interpolate(x, scale_factor=2), lambda x: x.repeat(2, -1).repeat(2, -2), [(1, 2, 3, 3)],
             device=device, grad=True, name="interp_nearest")
    for align in (False, True):
        check_op(lambda x: F.interpolate(x, size=7, mode="linear", align_corners=align),
                 lambda x: _np_interp_1d(x, 7, align), [(2, 2, 4)], device=device, grad=True, name="interp_linear")
        check_op(lambda x: F.interpolate(x, size=(5, 3), mode="bilinear", align_corners=align),
                 lambda x: np.swapaxes(_np_interp_1d(np.swapaxes(_np_interp_1d(x, 3, align), -1, -2), 5, align),
                                       -1, -2), [(1, 2, 3, 4)], device=device, grad=True, name="interp_bilinear")
    src = ember.randn(1, 1, 4, 4, device=device)
    y = F.interpolate(src, size=(7, 7), mode="bicubic", align_corners=True)
    # with align_corners and 2n-1 outputs every other sample lands on an input pixel
    assert_close(y[:, :, ::2, ::2], src.numpy(force=True), rtol=1e-5, atol=1e-5)
    flat = F.interpolate(ember.full((1, 1, 3, 3), 2.5, device=device), size=(5, 4), mode="bicubic")
    assert_close(flat, np.full((1, 1, 5, 4), 2.5), rtol=1e-5, atol=1e-5)  # the weights sum to one
    check_op(lambda x: F.interpolate(x, size=(2, 3), mode="area"), lambda x: _np_adaptive(x, (2, 3), np.mean),
             [(1, 1, 4, 6)], device=device, name="interp_area")


def test_pixel_and_channel_shuffle(device):
    x = ember.arange(2 * 8 * 2 * 3, dtype=ember.float32, device=device).reshape(2, 8, 2, 3)
    y = F.pixel_shuffle(x, 2)
    xn = x.numpy(force=True)
    exp = xn.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    assert_close(y, exp)
    assert_close(F.pixel_unshuffle(y, 2), xn)
    assert_close(F.channel_shuffle(x, 2), xn.reshape(2, 2, 4, 2, 3).transpose(0, 2, 1, 3, 4).reshape(2, 8, 2, 3))


def test_grid_sample_and_affine_grid(device):
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device=device)
    x = ember.randn(1, 2, 4, 5, device=device)
    for ac in (False, True):
        grid = F.affine_grid(theta, (1, 2, 4, 5), align_corners=ac)
        assert_close(F.grid_sample(x, grid, align_corners=ac), x.numpy(force=True), rtol=1e-5, atol=1e-5)
    # a shift by one pixel (align_corners=True: 2/(W-1) in normalised units), zeros come in
    shift = ember.tensor([[[1.0, 0.0, 2.0 / 4], [0.0, 1.0, 0.0]]], device=device)
    g = F.affine_grid(shift, (1, 2, 4, 5), align_corners=True)
    y = F.grid_sample(x, g, align_corners=True).numpy(force=True)
    xn = x.numpy(force=True)
    assert_close(y[..., :4], xn[..., 1:], rtol=1e-5, atol=1e-5)
    assert_close(y[..., 4], np.zeros((1, 2, 4)), atol=1e-6)
    yb = F.grid_sample(x, g, padding_mode="border", align_corners=True).numpy(force=True)
    assert_close(yb[..., 4], xn[..., 4], rtol=1e-5, atol=1e-5)
    gq = ember.tensor(np.random.default_rng(0).uniform(-0.9, 0.9, (1, 3, 3, 2)), dtype=ember.float64, device=device)
    if supports(device, ember.float64):
        check_grad(lambda a: F.grid_sample(a, gq, align_corners=False), [(1, 1, 3, 3)], device=device,
                   name="grid_sample")


def test_distances_and_normalize(device):
    check_op(lambda a, b: F.cosine_similarity(a, b, 1),
             lambda a, b: (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1), [(3, 4), (3, 4)],
             device=device, grad=True, name="cosine_similarity")
    check_op(lambda a, b: F.pairwise_distance(a, b), lambda a, b: np.linalg.norm(a - b + 1e-6, axis=-1),
             [(3, 4), (3, 4)], device=device, grad=True, name="pairwise_distance")
    check_op(F.normalize, lambda a: a / np.linalg.norm(a, axis=1, keepdims=True), [(3, 4)], device=device, grad=True,
             name="normalize")
    check_op(F.pdist, lambda a: np.array([np.linalg.norm(a[i] - a[j]) for i in range(4) for j in range(i + 1, 4)]),
             [(4, 3)], device=device, grad=True, name="pdist")
    oh = F.one_hot(ember.tensor([0, 2, 1], device=device), 4)
    assert oh.dtype == ember.int64 and oh.numpy(force=True).tolist() == np.eye(4, dtype=int)[[0, 2, 1]].tolist()


# -- modules on the device ----------------------------------------------------------------------

def test_small_cnn_trains(device):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 3)).to(device)
    x = ember.randn(16, 1, 8, 8, device=device)
    t = ember.tensor(np.arange(16) % 3, device=device)
    first = None
    for _ in range(30):
        loss = F.cross_entropy(model(x), t)
        model.zero_grad()
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        first = first if first is not None else loss.item()
    assert loss.item() < 0.5 * first
    assert all(p.device == device for p in model.parameters())
    model.eval()
    with ember.no_grad():
        a, b = model(x), model(x)
    assert_close(a, b.numpy(force=True))


def test_out_of_range_targets_raise_index_error(device):
    x = ember.zeros(2, 5, device=device)
    for bad in (7, -3):
        with pytest.raises(IndexError):
            F.cross_entropy(x, ember.tensor([1, bad], device=device))
    assert F.nll_loss(x, ember.tensor([1, -100], device=device)).item() == 0.0  # ignore_index is skipped
