"""Fused recurrent layers: one op runs a whole layer (one direction) of an Elman RNN, an LSTM or a
GRU over every time step, so a layer records one autograd node, not dozens per step.

The input projection ``x @ W_ih^T + b_ih`` of all time steps is hoisted out (one big matmul,
done by the caller with ``linear``); the ops take it as ``xg`` (T, B, G*H) with PyTorch's gate
order (LSTM i, f, g, o; GRU r, z, n) and run the recurrence::

    rnn:  h' = act(xg_t + h W_hh^T)                              (b_hh folded into xg)
    lstm: i, f, g, o = sig, sig, tanh, sig(xg_t + h W_hh^T)      (b_hh folded into xg)
          c' = f * c + i * g ;  h' = (o * tanh(c')) [W_hr^T]      (W_hr: proj_size)
    gru:  hg = h W_hh^T + b_hh ;  r, z = sig(xg_t[r, z] + hg[r, z])
          n = tanh(xg_t[n] + r * hg[n]) ;  h' = (1 - z) * n + z * h

Packed sequences run padded: ``batch_sizes`` (a tuple of python ints, non-increasing) says how
many leading rows of step ``t`` are real; the others keep their state, read nothing and get
zero outputs and gradients. ``reverse`` runs the steps from last to first (the backward
direction of a bidirectional layer); a sequence then starts from ``h0`` at its own last step.

Each op returns ``(out, h_n[, c_n], ws)``: ``ws`` is a workspace of saved activations (LSTM:
i, f, g, o, c per step, (T, B, 5H); GRU: r, z, n, h W_hn^T + b_hn, (T, B, 4H); RNN: none, its
output suffices). The first-order backward is one op per layer too (``*_layer_backward``),
which a backend may implement (cpu_numpy does); its decomposition here is back-propagation
through time in ember ops. Under ``create_graph`` the backward recomputes the forward with
recorded ops first, so double backward is exact on every backend. The step geometry (``steps``,
``rows``, ``prev_rows``) is :mod:`ember.backend.shapes`', which the backends' kernels use too.

The layer ops are internal: ``nn.RNN``/``nn.LSTM``/``nn.GRU`` validate the arguments and call
:func:`rnn_layer`, :func:`lstm_layer` and :func:`gru_layer`, which drop the workspace.
"""
from __future__ import annotations

from ... import _state
from ..._tensor import Tensor
from ...backend.shapes import prev_rows, rows, steps
from .. import creation as CR
from .. import linalg as LA
from .. import shape as SH
from ..registry import dispatch, register_op

__all__: list = []

_grad = _state.grad


# -- helpers of the decompositions -------------------------------------------------------------

def _pad_rows(x: Tensor, B: int) -> Tensor:
    """(bs, F) -> (B, F) with zero rows below."""
    bs = x._shape[0]
    if bs == B:
        return x
    return SH.cat([x, CR.zeros((B - bs,) + tuple(x._shape[1:]), dtype=x._dtype, device=x._device)], 0)


def _keep_rows(new: Tensor, old: Tensor) -> Tensor:
    """State after a step: the updated leading rows, the rest unchanged."""
    bs = new._shape[0]
    return new if bs == old._shape[0] else SH.cat([new, old[bs:]], 0)


def _zeros_like(t):
    return CR.zeros(tuple(t._shape), dtype=t._dtype, device=t._device)


def _zeros_of(meta):
    """Zeros for an output the backward did not save (``ctx.out_meta``: shape, dtype, device)."""
    shape, dtype, device = meta
    return CR.zeros(tuple(shape), dtype=dtype, device=device)


def _t_mm(a: Tensor, b: Tensor) -> Tensor:
    """sum over steps and rows of a_t^T b_t for (T, B, m), (T, B, n): one (m, n) matmul."""
    m, n = a._shape[-1], b._shape[-1]
    return LA.matmul(a.reshape(-1, m).t(), b.reshape(-1, n))


# -- Elman RNN (tanh / relu) --------------------------------------------------------------------

def _act(x: Tensor, relu: bool) -> Tensor:
    return x.relu() if relu else x.tanh()


def _rnn_decomp(xg, h0, w_hh, batch_sizes, reverse, relu):
    T, B = xg._shape[0], xg._shape[1]
    wt = w_hh.t()
    h = h0
    outs = [None] * T
    for t in steps(T, reverse):
        bs = rows(batch_sizes, t, B)
        hn = _act(xg[t, :bs] + LA.matmul(h[:bs], wt), relu)
        outs[t] = _pad_rows(hn, B)
        h = _keep_rows(hn, h)
    out = SH.stack(outs, 0) if T else xg[:, :, :h0._shape[-1]] * 0
    return out, h


def _rnn_backward_decomp(g_out, g_hn, xg, h0, w_hh, out, batch_sizes, reverse, relu):
    if _grad.enabled:  # create_graph: the forward as recorded ops, for exact double backward
        out, _ = _rnn_decomp(xg, h0, w_hh, batch_sizes, reverse, relu)
    T, B = xg._shape[0], xg._shape[1]
    dh = g_hn
    gx = [None] * T
    hps = [None] * T
    for t in reversed(steps(T, reverse)):
        bs = rows(batch_sizes, t, B)
        h = out[t, :bs]
        d = dh[:bs] + g_out[t, :bs]
        d = d * (h > 0).to(d._dtype) if relu else d * (1 - h * h)
        gx[t] = _pad_rows(d, B)
        hps[t] = _pad_rows(prev_rows(out, h0, t, bs, batch_sizes, reverse, SH.cat), B)
        dh = _keep_rows(LA.matmul(d, w_hh), dh)
    if not T:
        return xg * 0, dh, w_hh * 0
    gxg = SH.stack(gx, 0)
    return gxg, dh, _t_mm(gxg, SH.stack(hps, 0))


def _rnn_bw(ctx, grads):
    xg, h0, w_hh, batch_sizes, reverse, relu = ctx.args
    out = ctx.out[0]
    g_out = grads[0] if grads[0] is not None else _zeros_like(out)
    g_hn = grads[1] if grads[1] is not None else _zeros_of(ctx.out_meta[1])
    return dispatch(RNN_LAYER_BACKWARD, xg._device, (g_out, g_hn, xg, h0, w_hh, out, batch_sizes, reverse, relu),
                    (g_out, g_hn, xg, h0, w_hh))


RNN_LAYER = register_op("rnn_layer", decomposition=_rnn_decomp, backward=_rnn_bw, save_output=(0,), group="nn",
                        doc="one direction of an Elman RNN layer over all steps: (out, h_n)")
RNN_LAYER_BACKWARD = register_op("rnn_layer_backward", decomposition=_rnn_backward_decomp, group="nn",
                                 doc="(grad_xg, grad_h0, grad_w_hh) of rnn_layer (BPTT)")


def rnn_layer(xg: Tensor, h0: Tensor, w_hh: Tensor, batch_sizes, reverse: bool, relu: bool):
    """``(out, h_n)`` of one direction of an RNN layer (arguments validated by ``nn.RNN``)."""
    return dispatch(RNN_LAYER, xg._device, (xg, h0, w_hh, batch_sizes, bool(reverse), bool(relu)), (xg, h0, w_hh))


# -- LSTM ------------------------------------------------------------------------------------

def _lstm_decomp(xg, h0, c0, w_hh, w_hr, batch_sizes, reverse):
    T, B = xg._shape[0], xg._shape[1]
    H = c0._shape[-1]
    wt = w_hh.t()
    rt = None if w_hr is None else w_hr.t()
    h, c = h0, c0
    outs, wss = [None] * T, [None] * T
    for t in steps(T, reverse):
        bs = rows(batch_sizes, t, B)
        gates = xg[t, :bs] + LA.matmul(h[:bs], wt)
        i = gates[:, :H].sigmoid()
        f = gates[:, H:2 * H].sigmoid()
        g = gates[:, 2 * H:3 * H].tanh()
        o = gates[:, 3 * H:].sigmoid()
        cn = f * c[:bs] + i * g
        hn = o * cn.tanh()
        if rt is not None:
            hn = LA.matmul(hn, rt)
        outs[t] = _pad_rows(hn, B)
        wss[t] = _pad_rows(SH.cat([i, f, g, o, cn], 1), B)
        h, c = _keep_rows(hn, h), _keep_rows(cn, c)
    if not T:
        e = xg[:, :, :1] * 0
        return e.expand(0, B, h0._shape[-1]) * 1, h, c, e.expand(0, B, 5 * H) * 1
    return SH.stack(outs, 0), h, c, SH.stack(wss, 0)


def _lstm_backward_decomp(g_out, g_hn, g_cn, xg, h0, c0, w_hh, w_hr, out, ws, batch_sizes, reverse):
    if _grad.enabled:  # create_graph: the forward as recorded ops, for exact double backward
        out, _, _, ws = _lstm_decomp(xg, h0, c0, w_hh, w_hr, batch_sizes, reverse)
    T, B = xg._shape[0], xg._shape[1]
    H = c0._shape[-1]
    dh, dc = g_hn, g_cn
    cs = [ws[t, :, 4 * H:] for t in range(T)]
    gx, hps, dhs, hpres = [None] * T, [None] * T, [None] * T, [None] * T
    for t in reversed(steps(T, reverse)):
        bs = rows(batch_sizes, t, B)
        w = ws[t, :bs]
        i, f, g, o, c = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:4 * H], w[:, 4 * H:]
        cp = prev_rows(cs, c0, t, bs, batch_sizes, reverse, SH.cat)
        d = dh[:bs] + g_out[t, :bs]
        tc = c.tanh()
        if w_hr is not None:
            dhs[t] = _pad_rows(d, B)
            hpres[t] = _pad_rows(o * tc, B)
            d = LA.matmul(d, w_hr)
        dct = dc[:bs] + d * o * (1 - tc * tc)
        dgates = SH.cat([dct * g * i * (1 - i), dct * cp * f * (1 - f), dct * i * (1 - g * g), d * tc * o * (1 - o)], 1)
        gx[t] = _pad_rows(dgates, B)
        hps[t] = _pad_rows(prev_rows(out, h0, t, bs, batch_sizes, reverse, SH.cat), B)
        dh = _keep_rows(LA.matmul(dgates, w_hh), dh)
        dc = _keep_rows(dct * f, dc)
    if not T:
        return xg * 0, dh, dc, w_hh * 0, None if w_hr is None else w_hr * 0
    gxg = SH.stack(gx, 0)
    gw_hr = None if w_hr is None else _t_mm(SH.stack(dhs, 0), SH.stack(hpres, 0))
    return gxg, dh, dc, _t_mm(gxg, SH.stack(hps, 0)), gw_hr


def _lstm_bw(ctx, grads):
    xg, h0, c0, w_hh, w_hr, batch_sizes, reverse = ctx.args
    out, _, _, ws = ctx.out
    g_out = grads[0] if grads[0] is not None else _zeros_like(out)
    g_hn = grads[1] if grads[1] is not None else _zeros_of(ctx.out_meta[1])
    g_cn = grads[2] if grads[2] is not None else _zeros_of(ctx.out_meta[2])
    ins = (g_out, g_hn, g_cn, xg, h0, c0, w_hh) + (() if w_hr is None else (w_hr,))
    r = dispatch(LSTM_LAYER_BACKWARD, xg._device,
                 (g_out, g_hn, g_cn, xg, h0, c0, w_hh, w_hr, out, ws, batch_sizes, reverse), ins)
    return tuple(r[:4]) if w_hr is None else tuple(r)


LSTM_LAYER = register_op("lstm_layer", decomposition=_lstm_decomp, backward=_lstm_bw, save_output=(0, 3), group="nn",
                         doc="one direction of an LSTM layer over all steps: (out, h_n, c_n, workspace)")
LSTM_LAYER_BACKWARD = register_op("lstm_layer_backward", decomposition=_lstm_backward_decomp, group="nn",
                                  doc="(grad_xg, grad_h0, grad_c0, grad_w_hh, grad_w_hr) of lstm_layer (BPTT)")


def lstm_layer(xg: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, w_hr, batch_sizes, reverse: bool):
    """``(out, h_n, c_n)`` of one direction of an LSTM layer (arguments validated by ``nn.LSTM``)."""
    ins = (xg, h0, c0, w_hh) + (() if w_hr is None else (w_hr,))
    out, hn, cn, _ = dispatch(LSTM_LAYER, xg._device, (xg, h0, c0, w_hh, w_hr, batch_sizes, bool(reverse)), ins)
    return out, hn, cn


# -- GRU ---------------------------------------------------------------------------------------

def _gru_decomp(xg, h0, w_hh, b_hh, batch_sizes, reverse):
    T, B = xg._shape[0], xg._shape[1]
    H = h0._shape[-1]
    wt = w_hh.t()
    h = h0
    outs, wss = [None] * T, [None] * T
    for t in steps(T, reverse):
        bs = rows(batch_sizes, t, B)
        hp = h[:bs]
        hg = LA.matmul(hp, wt)
        if b_hh is not None:
            hg = hg + b_hh
        x = xg[t, :bs]
        r = (x[:, :H] + hg[:, :H]).sigmoid()
        z = (x[:, H:2 * H] + hg[:, H:2 * H]).sigmoid()
        hgn = hg[:, 2 * H:]
        n = (x[:, 2 * H:] + r * hgn).tanh()
        hn = n + z * (hp - n)
        outs[t] = _pad_rows(hn, B)
        wss[t] = _pad_rows(SH.cat([r, z, n, hgn], 1), B)
        h = _keep_rows(hn, h)
    if not T:
        e = xg[:, :, :1] * 0
        return e.expand(0, B, H) * 1, h, e.expand(0, B, 4 * H) * 1
    return SH.stack(outs, 0), h, SH.stack(wss, 0)


def _gru_backward_decomp(g_out, g_hn, xg, h0, w_hh, b_hh, out, ws, batch_sizes, reverse):
    if _grad.enabled:  # create_graph: the forward as recorded ops, for exact double backward
        out, _, ws = _gru_decomp(xg, h0, w_hh, b_hh, batch_sizes, reverse)
    T, B = xg._shape[0], xg._shape[1]
    H = h0._shape[-1]
    dh = g_hn
    gx, ghs, hps = [None] * T, [None] * T, [None] * T
    for t in reversed(steps(T, reverse)):
        bs = rows(batch_sizes, t, B)
        w = ws[t, :bs]
        r, z, n, hgn = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
        hp = prev_rows(out, h0, t, bs, batch_sizes, reverse, SH.cat)
        d = dh[:bs] + g_out[t, :bs]
        dn = d * (1 - z) * (1 - n * n)
        dr = dn * hgn * r * (1 - r)
        dz = d * (hp - n) * z * (1 - z)
        gx[t] = _pad_rows(SH.cat([dr, dz, dn], 1), B)
        dhg = SH.cat([dr, dz, dn * r], 1)
        ghs[t] = _pad_rows(dhg, B)
        hps[t] = _pad_rows(hp, B)
        dh = _keep_rows(d * z + LA.matmul(dhg, w_hh), dh)
    if not T:
        return xg * 0, dh, w_hh * 0, None if b_hh is None else b_hh * 0
    dhg_all = SH.stack(ghs, 0)
    gb = None if b_hh is None else dhg_all.sum((0, 1))
    return SH.stack(gx, 0), dh, _t_mm(dhg_all, SH.stack(hps, 0)), gb


def _gru_bw(ctx, grads):
    xg, h0, w_hh, b_hh, batch_sizes, reverse = ctx.args
    out, _, ws = ctx.out
    g_out = grads[0] if grads[0] is not None else _zeros_like(out)
    g_hn = grads[1] if grads[1] is not None else _zeros_of(ctx.out_meta[1])
    ins = (g_out, g_hn, xg, h0, w_hh) + (() if b_hh is None else (b_hh,))
    r = dispatch(GRU_LAYER_BACKWARD, xg._device, (g_out, g_hn, xg, h0, w_hh, b_hh, out, ws, batch_sizes, reverse),
                 ins)
    return tuple(r[:3]) if b_hh is None else tuple(r)


GRU_LAYER = register_op("gru_layer", decomposition=_gru_decomp, backward=_gru_bw, save_output=(0, 2), group="nn",
                        doc="one direction of a GRU layer over all steps: (out, h_n, workspace)")
GRU_LAYER_BACKWARD = register_op("gru_layer_backward", decomposition=_gru_backward_decomp, group="nn",
                                 doc="(grad_xg, grad_h0, grad_w_hh, grad_b_hh) of gru_layer (BPTT)")


def gru_layer(xg: Tensor, h0: Tensor, w_hh: Tensor, b_hh, batch_sizes, reverse: bool):
    """``(out, h_n)`` of one direction of a GRU layer (arguments validated by ``nn.GRU``)."""
    ins = (xg, h0, w_hh) + (() if b_hh is None else (b_hh,))
    out, hn, _ = dispatch(GRU_LAYER, xg._device, (xg, h0, w_hh, b_hh, batch_sizes, bool(reverse)), ins)
    return out, hn
