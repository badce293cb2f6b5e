"""Fast numpy kernels for ember's fused recurrent layers (``ember.ops.nn.recurrent``): one GEMM per time
step for all gates, the gate nonlinearities in place on preallocated buffers, and in backward
one GEMM per step for the state gradient plus a single big GEMM for the weight gradient of all
steps. The core's decompositions define the semantics (the conformance suite compares both);
the step geometry of packed sequences (``steps``, ``rows``, ``prev_rows``) is shared with them.

16-bit floats compute in float32 and are cast back, as in the other nn kernels. numpy only (the
other kernel groups are written over an array namespace; these call numpy and scipy directly).
"""
from __future__ import annotations

import numpy as np

from ember.backend.shapes import prev_rows, rows, steps

from ..arrays import nd, wrap

try:  # one ufunc pass for the logistic function
    from scipy.special import expit as _expit
except ImportError:  # pragma: no cover - scipy is a dependency; kept for minimal environments
    def _expit(x, out=None):
        out = np.negative(x, out=out)
        np.exp(out, out=out)
        out += 1
        return np.reciprocal(out, out=out)


def _wdt(a: np.ndarray):
    return np.float64 if a.dtype == np.float64 else np.float32


def _arr(t, dt) -> np.ndarray:
    return nd(t).astype(dt, copy=False)


def _back(a: np.ndarray, like) -> np.ndarray:
    dt = nd(like).dtype
    return a if a.dtype == dt else a.astype(dt)


def _cat(parts, axis):
    return np.concatenate(parts, axis)


def _t_mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1]).T @ b.reshape(-1, b.shape[-1])


# -- Elman RNN ----------------------------------------------------------------------------------

def k_rnn_layer(xg, h0, w_hh, batch_sizes, reverse, relu):
    dt = _wdt(nd(xg))
    X, W = _arr(xg, dt), _arr(w_hh, dt)
    T, B, H = X.shape
    WT = np.ascontiguousarray(W.T)
    h = np.array(_arr(h0, dt), copy=True)
    out = np.zeros((T, B, H), dt)
    for t in steps(T, reverse):
        bs = rows(batch_sizes, t, B)
        o = out[t, :bs]
        np.matmul(h[:bs], WT, out=o)
        o += X[t, :bs]
        if relu:
            np.maximum(o, 0, out=o)
        else:
            np.tanh(o, out=o)
        h[:bs] = o
    dev = xg._device
    return wrap(_back(out, xg), dev), wrap(_back(h, h0), dev)


def k_rnn_layer_backward(g_out, g_hn, xg, h0, w_hh, out, batch_sizes, reverse, relu):
    dt = _wdt(nd(xg))
    GO, W, O, H0 = _arr(g_out, dt), _arr(w_hh, dt), _arr(out, dt), _arr(h0, dt)
    T, B, H = O.shape
    dh = np.array(_arr(g_hn, dt), copy=True)
    gx = np.zeros((T, B, H), dt)
    hp = np.zeros((T, B, H), dt)
    for t in reversed(steps(T, reverse)):
        bs = rows(batch_sizes, t, B)
        h = O[t, :bs]
        d = gx[t, :bs]
        np.add(dh[:bs], GO[t, :bs], out=d)
        if relu:
            d *= h > 0
        else:
            d *= 1 - h * h
        hp[t, :bs] = prev_rows(O, H0, t, bs, batch_sizes, reverse, _cat)
        dh[:bs] = d @ W
    dev = xg._device
    return wrap(_back(gx, xg), dev), wrap(_back(dh, h0), dev), wrap(_back(_t_mm(gx, hp), w_hh), dev)


# -- LSTM ---------------------------------------------------------------------------------------

def _gate_scales(H: int, dt):
    """sigmoid(x) = 0.5 * tanh(x / 2) + 0.5: the gate pre-activations are scaled by (1/2, 1/2, 1, 1/2)
    so that one tanh pass covers all four gates, then (a, b) = (1/2, 1/2, 1, 1/2), (1/2, 1/2, 0, 1/2)
    turn the i, f, o columns into sigmoids (numpy's tanh is vectorised, its logistic is not)."""
    pre = np.full(4 * H, 0.5, dt)
    pre[2 * H:3 * H] = 1.0
    post_b = np.full(4 * H, 0.5, dt)
    post_b[2 * H:3 * H] = 0.0
    return pre, pre, post_b


def _prev_all(seq, init, batch_sizes, reverse, dt):
    """(T, B, F): the state before each step (rows that are not real at a step are zero)."""
    T, B = seq.shape[:2]
    out = np.zeros(seq.shape, dt)
    if batch_sizes is None:
        if reverse:
            out[:-1] = seq[1:]
            out[-1] = init
        else:
            out[1:] = seq[:-1]
            out[0] = init
        return out
    for t in range(T):
        bs = rows(batch_sizes, t, B)
        out[t, :bs] = prev_rows(seq, init, t, bs, batch_sizes, reverse, _cat)
    return out


def k_lstm_layer(xg, h0, c0, w_hh, w_hr, batch_sizes, reverse):
    dt = _wdt(nd(xg))
    X, W = _arr(xg, dt), _arr(w_hh, dt)
    T, B, G = X.shape
    H = G // 4
    pre, post_a, post_b = _gate_scales(H, dt)
    XS = X * pre  # one pass over all steps
    WT = np.ascontiguousarray(W.T) * pre
    RT = None if w_hr is None else np.ascontiguousarray(_arr(w_hr, dt).T)
    h = np.array(_arr(h0, dt), copy=True)
    c = np.array(_arr(c0, dt), copy=True)
    P = h.shape[-1]
    out = np.zeros((T, B, P), dt)
    ws = np.zeros((T, B, 5 * H), dt)
    gbuf = np.empty((B, G), dt)
    tmp = np.empty((B, H), dt)
    for t in steps(T, reverse):
        bs = rows(batch_sizes, t, B)
        g = gbuf[:bs]
        np.matmul(h[:bs], WT, out=g)
        g += XS[t, :bs]
        np.tanh(g, out=g)
        g *= post_a
        g += post_b
        w = ws[t, :bs]
        w[:, :G] = g
        cn = w[:, G:]
        np.multiply(g[:, H:2 * H], c[:bs], out=cn)
        tb = tmp[:bs]
        np.multiply(g[:, :H], g[:, 2 * H:3 * H], out=tb)
        cn += tb
        c[:bs] = cn
        np.tanh(cn, out=tb)
        tb *= g[:, 3 * H:]
        if RT is None:
            out[t, :bs] = tb
        else:
            np.matmul(tb, RT, out=out[t, :bs])
        h[:bs] = out[t, :bs]
    dev = xg._device
    return (wrap(_back(out, xg), dev), wrap(_back(h, h0), dev), wrap(_back(c, c0), dev),
            wrap(_back(ws, xg), dev))


def k_lstm_layer_backward(g_out, g_hn, g_cn, xg, h0, c0, w_hh, w_hr, out, ws, batch_sizes, reverse):
    dt = _wdt(nd(xg))
    GO, W, O, WS = _arr(g_out, dt), _arr(w_hh, dt), _arr(out, dt), _arr(ws, dt)
    H0, C0 = _arr(h0, dt), _arr(c0, dt)
    R = None if w_hr is None else _arr(w_hr, dt)
    T, B, H5 = WS.shape
    H = H5 // 5
    P = O.shape[-1]
    # everything that does not depend on the recursion, for all steps at once
    Ig, Fg, Gg, Og, C = (WS[:, :, k * H:(k + 1) * H] for k in range(5))
    TC = np.tanh(C)
    CP = _prev_all(C, C0, batch_sizes, reverse, dt)
    HP = _prev_all(O, H0, batch_sizes, reverse, dt)
    Ai = Gg * Ig * (1 - Ig)
    Af = CP * Fg * (1 - Fg)
    Ag = Ig * (1 - Gg * Gg)
    O1 = Og * (1 - TC * TC)
    O2 = TC * Og * (1 - Og)
    dh = np.array(_arr(g_hn, dt), copy=True)
    dc = np.array(_arr(g_cn, dt), copy=True)
    gx = np.zeros((T, B, 4 * H), dt)
    if R is not None:
        dhs = np.zeros((T, B, P), dt)
    dbuf = np.empty((B, P), dt)
    dct = np.empty((B, H), dt)
    for t in reversed(steps(T, reverse)):
        bs = rows(batch_sizes, t, B)
        d = np.add(dh[:bs], GO[t, :bs], out=dbuf[:bs])
        if R is not None:
            dhs[t, :bs] = d
            d = d @ R
        dg = gx[t, :bs]
        np.multiply(d, O2[t, :bs], out=dg[:, 3 * H:])
        dcb = np.multiply(d, O1[t, :bs], out=dct[:bs])
        dcb += dc[:bs]
        np.multiply(dcb, Ai[t, :bs], out=dg[:, :H])
        np.multiply(dcb, Af[t, :bs], out=dg[:, H:2 * H])
        np.multiply(dcb, Ag[t, :bs], out=dg[:, 2 * H:3 * H])
        np.matmul(dg, W, out=dh[:bs])
        np.multiply(dcb, Fg[t, :bs], out=dc[:bs])
    dev = xg._device
    gw_hr = None if R is None else wrap(_back(_t_mm(dhs, Og * TC), w_hr), dev)
    return (wrap(_back(gx, xg), dev), wrap(_back(dh, h0), dev), wrap(_back(dc, c0), dev),
            wrap(_back(_t_mm(gx, HP), w_hh), dev), gw_hr)


# -- GRU ----------------------------------------------------------------------------------------

def k_gru_layer(xg, h0, w_hh, b_hh, batch_sizes, reverse):
    dt = _wdt(nd(xg))
    X, W = _arr(xg, dt), _arr(w_hh, dt)
    T, B, G = X.shape
    H = G // 3
    WT = np.ascontiguousarray(W.T)
    bh = None if b_hh is None else _arr(b_hh, dt)
    h = np.array(_arr(h0, dt), copy=True)
    out = np.zeros((T, B, H), dt)
    ws = np.zeros((T, B, 4 * H), dt)
    hg = np.empty((B, G), dt)
    for t in steps(T, reverse):
        bs = rows(batch_sizes, t, B)
        hp = h[:bs]
        g = hg[:bs]
        np.matmul(hp, WT, out=g)
        if bh is not None:
            g += bh
        x = X[t, :bs]
        w = ws[t, :bs]
        rz = w[:, :2 * H]
        np.add(x[:, :2 * H], g[:, :2 * H], out=rz)
        _expit(rz, out=rz)
        w[:, 3 * H:] = g[:, 2 * H:]
        n = w[:, 2 * H:3 * H]
        np.multiply(w[:, :H], g[:, 2 * H:], out=n)
        n += x[:, 2 * H:]
        np.tanh(n, out=n)
        o = out[t, :bs]
        np.subtract(hp, n, out=o)
        o *= w[:, H:2 * H]
        o += n
        h[:bs] = o
    dev = xg._device
    return wrap(_back(out, xg), dev), wrap(_back(h, h0), dev), wrap(_back(ws, xg), dev)


def k_gru_layer_backward(g_out, g_hn, xg, h0, w_hh, b_hh, out, ws, batch_sizes, reverse):
    dt = _wdt(nd(xg))
    GO, W, O, WS, H0 = _arr(g_out, dt), _arr(w_hh, dt), _arr(out, dt), _arr(ws, dt), _arr(h0, dt)
    T, B, H4 = WS.shape
    H = H4 // 4
    dh = np.array(_arr(g_hn, dt), copy=True)
    gx = np.zeros((T, B, 3 * H), dt)
    ghg = np.zeros((T, B, 3 * H), dt)
    hps = np.zeros((T, B, H), dt)
    for t in reversed(steps(T, reverse)):
        bs = rows(batch_sizes, t, B)
        w = WS[t, :bs]
        r, z, n, hgn = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
        hp = hps[t, :bs]
        hp[...] = prev_rows(O, H0, t, bs, batch_sizes, reverse, _cat)
        d = dh[:bs] + GO[t, :bs]
        dx = gx[t, :bs]
        dn = dx[:, 2 * H:]
        np.multiply(d, 1 - z, out=dn)
        dn *= 1 - n * n
        np.multiply(dn, hgn * r * (1 - r), out=dx[:, :H])
        np.multiply(d, (hp - n) * z * (1 - z), out=dx[:, H:2 * H])
        dhg = ghg[t, :bs]
        dhg[:, :2 * H] = dx[:, :2 * H]
        np.multiply(dn, r, out=dhg[:, 2 * H:])
        dnew = dhg @ W
        d *= z
        dnew += d
        dh[:bs] = dnew
    dev = xg._device
    gb = None if b_hh is None else wrap(_back(ghg.sum((0, 1)), b_hh), dev)
    return (wrap(_back(gx, xg), dev), wrap(_back(dh, h0), dev), wrap(_back(_t_mm(ghg, hps), w_hh), dev), gb)


KERNELS = {
    "rnn_layer": k_rnn_layer, "rnn_layer_backward": k_rnn_layer_backward,
    "lstm_layer": k_lstm_layer, "lstm_layer_backward": k_lstm_layer_backward,
    "gru_layer": k_gru_layer, "gru_layer_backward": k_gru_layer_backward,
}
