"""Sequence models: LSTM(128->256) forward+backward on seq 35 x batch 32 (ember, torch and a
hand-written numpy LSTM), GRU of the same size, and a small Transformer encoder training step
(2 layers, d_model 128, 4 heads, ff 512, seq 35 x batch 32, Adam)."""
import numpy as np

import ember
from benchmarks.registry import workload

T, B, I, H = 35, 32, 128, 256


def _copy_weights(src, dst):
    import torch
    dst.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in src.state_dict().items()})


def _rnn_impls(ctx, cls_name):
    import ember.nn as enn
    ember.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((T, B, I)).astype(np.float32)
    m = getattr(enn, cls_name)(I, H).to(ctx.device)
    ex = ember.tensor(x, device=ctx.device).requires_grad_()

    def e():
        out, _ = m(ex)
        out.sum().backward()
        ctx.sync()
    impls = {"ember": e}
    if ctx.torch is not None:
        torch = ctx.torch
        tm = getattr(torch.nn, cls_name)(I, H).to(ctx.torch_device)
        _copy_weights(m, tm)
        tx = torch.tensor(x, device=ctx.torch_device).requires_grad_()

        def t():
            out, _ = tm(tx)
            out.sum().backward()
            ctx.torch_sync()
        impls["torch"] = t
    return impls


def _numpy_lstm(x):
    """Forward and backward (BPTT) of one LSTM layer written directly in numpy: the speed floor."""
    rng = np.random.default_rng(0)
    s = 1 / np.sqrt(H)
    w_ih = rng.uniform(-s, s, (4 * H, I)).astype(np.float32)
    w_hh = rng.uniform(-s, s, (4 * H, H)).astype(np.float32)
    b = rng.uniform(-s, s, 4 * H).astype(np.float32)

    def sig(a):
        return 1 / (1 + np.exp(-a))

    def run():
        xg = (x.reshape(-1, I) @ w_ih.T + b).reshape(T, B, 4 * H)
        h = np.zeros((B, H), np.float32)
        c = np.zeros((B, H), np.float32)
        hs, cs, acts = [h], [c], []
        for t in range(T):
            g = xg[t] + h @ w_hh.T
            i, f, gg, o = sig(g[:, :H]), sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), sig(g[:, 3 * H:])
            c = f * c + i * gg
            h = o * np.tanh(c)
            hs.append(h)
            cs.append(c)
            acts.append((i, f, gg, o))
        dh = np.zeros((B, H), np.float32)
        dc = np.zeros((B, H), np.float32)
        dgs = np.empty((T, B, 4 * H), np.float32)
        for t in range(T - 1, -1, -1):
            i, f, gg, o = acts[t]
            dh = dh + 1.0  # d(sum(out))/dh_t
            tc = np.tanh(cs[t + 1])
            dc = dc + dh * o * (1 - tc * tc)
            dgs[t] = np.concatenate([dc * gg * i * (1 - i), dc * cs[t] * f * (1 - f), dc * i * (1 - gg * gg),
                                     dh * tc * o * (1 - o)], 1)
            dh = dgs[t] @ w_hh
            dc = dc * f
        dg2 = dgs.reshape(-1, 4 * H)
        gw_hh = dg2.T @ np.stack(hs[:-1]).reshape(-1, H)
        gw_ih = dg2.T @ x.reshape(-1, I)
        gx = dg2 @ w_ih
        return gw_hh, gw_ih, dg2.sum(0), gx
    return run


@workload("LSTM(128->256) forward+backward, seq 35 x batch 32", "sequence")
def lstm_fwd_bwd(ctx):
    impls = _rnn_impls(ctx, "LSTM")
    impls["numpy"] = _numpy_lstm(np.random.default_rng(0).standard_normal((T, B, I)).astype(np.float32))
    return impls


@workload("GRU(128->256) forward+backward, seq 35 x batch 32", "sequence")
def gru_fwd_bwd(ctx):
    return _rnn_impls(ctx, "GRU")


@workload("LSTM(128->256) inference, seq 35 x batch 32", "sequence")
def lstm_infer(ctx):
    import ember.nn as enn
    x = np.random.default_rng(0).standard_normal((T, B, I)).astype(np.float32)
    m = enn.LSTM(I, H).to(ctx.device)
    ex = ember.tensor(x, device=ctx.device)

    def e():
        with ember.no_grad():
            m(ex)
        ctx.sync()
    impls = {"ember": e}
    if ctx.torch is not None:
        torch = ctx.torch
        tm = torch.nn.LSTM(I, H).to(ctx.torch_device)
        tx = torch.tensor(x, device=ctx.torch_device)

        def t():
            with torch.no_grad():
                tm(tx)
            ctx.torch_sync()
        impls["torch"] = t
    return impls


def _encoder(nn):
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


@workload("Transformer encoder (2x d128 h4 ff512) Adam step, batch 32 x seq 35", "sequence")
def encoder_step(ctx):
    import ember.nn as enn
    ember.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((B, T, 128)).astype(np.float32)
    model = _encoder(enn).to(ctx.device)
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    ex = ember.tensor(x, device=ctx.device)

    def e():
        opt.zero_grad()
        (model(ex) ** 2).mean().backward()
        opt.step()
        ctx.sync()
    impls = {"ember": e}
    if ctx.torch is not None:
        torch = ctx.torch
        tmodel = _encoder(torch.nn).to(ctx.torch_device)
        _copy_weights(model, tmodel)
        topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
        tx = torch.tensor(x, device=ctx.torch_device)

        def t():
            topt.zero_grad()
            (tmodel(tx) ** 2).mean().backward()
            topt.step()
            ctx.torch_sync()
        impls["torch"] = t
    return impls
