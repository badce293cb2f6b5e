"""Tier 6b, sequence layers: RNN / LSTM (proj_size) / GRU and their cells, packed sequences,
scaled dot-product and multi-head attention, Transformer layers. Forward against numpy float64
references written here (from the module's own parameters), backward by gradcheck in float64 on
tiny shapes (the fused layer ops and their double backward), packed against padded runs, and
mask semantics. Runs on every backend: natively where it has the fused kernels, by the core's
decompositions elsewhere."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.utils import rnn as rnn_utils
from ember.ops.nn import recurrent as rnn_ops
from ember.testing import assert_close, check_grad, check_op
from ember.testing.helpers import supports, to_numpy64


def _f64(device):
    if not supports(device, ember.float64):
        pytest.skip("the backend has no float64")


def _np(t):
    return to_numpy64(t)


def _params(m):
    return {k: _np(v) for k, v in m.named_parameters()}


# -- numpy references -------------------------------------------------------------------------

def sig(x):
    return 1 / (1 + np.exp(-x))


def np_rnn_direction(mode, x, h, c, p, sfx, reverse, lengths=None):
    """One direction of one layer; ``p`` holds numpy weights by PyTorch name suffix."""
    T, B = x.shape[:2]
    w_ih, w_hh = p["weight_ih" + sfx], p["weight_hh" + sfx]
    b_ih = p.get("bias_ih" + sfx, 0.0)
    b_hh = p.get("bias_hh" + sfx, 0.0)
    w_hr = p.get("weight_hr" + sfx)
    outs = np.zeros((T, B, h.shape[1]))
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        gi = x[t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        cn = c
        if mode == "LSTM":
            H = c.shape[1]
            g = gi + gh
            i, f, gg, o = sig(g[:, :H]), sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), sig(g[:, 3 * H:])
            cn = f * c + i * gg
            hn = o * np.tanh(cn)
            if w_hr is not None:
                hn = hn @ w_hr.T
        elif mode == "GRU":
            H = h.shape[1]
            r = sig(gi[:, :H] + gh[:, :H])
            z = sig(gi[:, H:2 * H] + gh[:, H:2 * H])
            n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
            hn = (1 - z) * n + z * h
        else:
            a = gi + gh
            hn = np.maximum(a, 0) if mode == "RNN_RELU" else np.tanh(a)
        live = np.ones((B, 1), bool) if lengths is None else (np.asarray(lengths) > t)[:, None]
        h = np.where(live, hn, h)
        if c is not None:
            c = np.where(live, cn, c)
        outs[t] = np.where(live, hn, 0.0)
    return outs, h, c


def np_rnn(m, x, h0=None, c0=None, lengths=None):
    """A whole RNNBase module in numpy: (out (T, B, D*P), h_n, c_n)."""
    p = _params(m)
    D = 2 if m.bidirectional else 1
    T, B = x.shape[:2]
    P = m.proj_size or m.hidden_size
    h0 = np.zeros((m.num_layers * D, B, P)) if h0 is None else h0
    c0 = np.zeros((m.num_layers * D, B, m.hidden_size)) if (c0 is None and m.mode == "LSTM") else c0
    hs, cs = [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            o, h, c = np_rnn_direction(m.mode, x, h0[k], None if c0 is None else c0[k], p, sfx, d == 1, lengths)
            outs.append(o)
            hs.append(h)
            cs.append(c)
        x = np.concatenate(outs, -1)
    return x, np.stack(hs), (np.stack(cs) if m.mode == "LSTM" else None)


def np_softmax(x):
    with np.errstate(invalid="ignore"):  # rows that are all -inf give NaN here (ember gives zeros)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = (q @ np.swapaxes(k, -1, -2)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return np_softmax(s) @ v


def np_mha(m, q, k, v, key_padding_mask=None, attn_mask=None):
    """MultiheadAttention (same kdim/vdim, no bias_kv) on (L, N, E) inputs: (out, mean weights)."""
    p = _params(m)
    E, Hh = m.embed_dim, m.num_heads
    hd = E // Hh
    W, b = p["in_proj_weight"], p.get("in_proj_bias", np.zeros(3 * E))
    qp, kp, vp = q @ W[:E].T + b[:E], k @ W[E:2 * E].T + b[E:2 * E], v @ W[2 * E:].T + b[2 * E:]
    L, N, S = q.shape[0], q.shape[1], k.shape[0]

    def heads(a, n):
        return a.reshape(n, N, Hh, hd).transpose(1, 2, 0, 3)  # (N, Hh, n, hd)
    s = heads(qp, L) @ np.swapaxes(heads(kp, S), -1, -2) / math.sqrt(hd)
    if attn_mask is not None:
        s = np.where(attn_mask, -np.inf, s) if attn_mask.dtype == bool else s + attn_mask
    if key_padding_mask is not None:
        s = np.where(key_padding_mask[:, None, None, :], -np.inf, s)
    w = np_softmax(s)
    o = (w @ heads(vp, S)).transpose(2, 0, 1, 3).reshape(L, N, E)
    o = o @ p["out_proj.weight"].T + p.get("out_proj.bias", 0.0)
    return o, w.mean(1)


def np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_encoder_layer(m, x, src_mask=None, kpm=None):
    p = _params(m)
    sa, _ = np_mha(m.self_attn, x, x, x, kpm, src_mask)

    def ff(a):
        return np.maximum(a @ p["linear1.weight"].T + p["linear1.bias"], 0) @ p["linear2.weight"].T + p["linear2.bias"]
    x = np_layer_norm(x + sa, p["norm1.weight"], p["norm1.bias"])
    return np_layer_norm(x + ff(x), p["norm2.weight"], p["norm2.bias"])


# -- recurrent layers -------------------------------------------------------------------------

_RNN_CASES = [
    ("lstm", lambda: nn.LSTM(3, 4)),
    ("lstm_2l_bi", lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True)),
    ("lstm_proj", lambda: nn.LSTM(3, 5, proj_size=2, bidirectional=True)),
    ("gru_2l", lambda: nn.GRU(3, 4, num_layers=2)),
    ("gru_bi_nobias", lambda: nn.GRU(3, 4, bias=False, bidirectional=True)),
    ("rnn_tanh", lambda: nn.RNN(3, 4, bidirectional=True)),
    ("rnn_relu_2l", lambda: nn.RNN(3, 4, num_layers=2, nonlinearity="relu")),
]


@pytest.mark.parametrize("name,make", _RNN_CASES, ids=[c[0] for c in _RNN_CASES])
def test_rnn_forward_backward_vs_numpy(device, name, make):
    ember.manual_seed(0)
    m = make().to(device)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3, 3))
    D = 2 if m.bidirectional else 1
    P = m.proj_size or m.hidden_size
    h0 = rng.standard_normal((m.num_layers * D, 3, P)) * 0.5
    c0 = rng.standard_normal((m.num_layers * D, 3, m.hidden_size)) * 0.5
    xe = ember.tensor(x, dtype=ember.float32, device=device).requires_grad_()
    he = ember.tensor(h0, dtype=ember.float32, device=device)
    ce = ember.tensor(c0, dtype=ember.float32, device=device)
    out, hn = m(xe, (he, ce) if m.mode == "LSTM" else he)
    eo, eh, ec = np_rnn(m, _np(xe), _np(he), _np(ce) if m.mode == "LSTM" else None)
    assert_close(out, eo, rtol=1e-4, atol=1e-5)
    if m.mode == "LSTM":
        assert_close(hn[0], eh, rtol=1e-4, atol=1e-5)
        assert_close(hn[1], ec, rtol=1e-4, atol=1e-5)
    else:
        assert_close(hn, eh, rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert xe.grad is not None and tuple(xe.grad.shape) == (5, 3, 3)
    for n, prm in m.named_parameters():
        assert prm.grad is not None and prm.grad.shape == prm.shape, n
    # the gradient of sum(out) w.r.t. the input, by central differences of the numpy reference
    eps = 1e-6
    num = np.zeros_like(x)
    for idx in [(0, 0, 0), (2, 1, 2), (4, 2, 1)]:
        xp, xm = _np(xe).copy(), _np(xe).copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = (np_rnn(m, xp, _np(he), _np(ce) if m.mode == "LSTM" else None)[0].sum()
                    - np_rnn(m, xm, _np(he), _np(ce) if m.mode == "LSTM" else None)[0].sum()) / (2 * eps)
        assert abs(_np(xe.grad)[idx] - num[idx]) < 1e-3 * max(1.0, abs(num[idx])), (name, idx)


def test_rnn_batch_first_unbatched_and_default_state(device):
    m = nn.GRU(3, 4, batch_first=True).to(device)
    x = ember.randn(2, 5, 3, device=device)
    out, h = m(x)
    ref, rh, _ = np_rnn(m, _np(x).transpose(1, 0, 2))
    assert_close(out, ref.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    assert_close(h, rh, rtol=1e-4, atol=1e-5)
    lstm = nn.LSTM(3, 4).to(device)
    xu = ember.randn(5, 3, device=device)
    out, (h, c) = lstm(xu)
    ref, rh, rc = np_rnn(lstm, _np(xu)[:, None])
    assert tuple(out.shape) == (5, 4) and tuple(h.shape) == (1, 4) and tuple(c.shape) == (1, 4)
    assert_close(out, ref[:, 0], rtol=1e-4, atol=1e-5)
    assert_close(c, rc[:, 0], rtol=1e-4, atol=1e-5)


_LAYER_OPS = [
    ("rnn_tanh", lambda xg, h0, w, bs, rev: rnn_ops.rnn_layer(xg, h0, w, bs, rev, False), 1),
    ("rnn_relu", lambda xg, h0, w, bs, rev: rnn_ops.rnn_layer(xg, h0, w, bs, rev, True), 1),
    ("lstm", lambda xg, h0, w, bs, rev: rnn_ops.lstm_layer(xg, h0, h0 * 0.5, w, None, bs, rev), 4),
    ("gru", lambda xg, h0, w, bs, rev: rnn_ops.gru_layer(xg, h0, w, w[:, 0] * 1.5, bs, rev), 3),
]


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("name,fn,G", _LAYER_OPS, ids=[c[0] for c in _LAYER_OPS])
def test_layer_op_gradcheck(device, name, fn, G, reverse, packed):
    bs = (3, 2, 2, 1) if packed else None
    H = 2
    check_grad(lambda xg, h0, w: fn(xg, h0, w, bs, reverse), [(4, 3, G * H), {"shape": (3, H), "low": -1, "high": 1},
                                                             {"shape": (G * H, H), "low": -0.7, "high": 0.7}],
               device=device, name=f"{name}_layer")


def test_lstm_proj_layer_gradcheck_and_double_backward(device):
    _f64(device)
    check_grad(lambda xg, h0, c0, w, wr: rnn_ops.lstm_layer(xg, h0, c0, w, wr, (2, 2, 1), True),
               [(3, 2, 12), (2, 2), (2, 3), (12, 2), (2, 3)], device=device, name="lstm_layer_proj")
    kw = dict(dtype=ember.float64, device=device, requires_grad=True)
    xg, h0, c0, w = (ember.randn(2, 2, 8, **kw), ember.randn(2, 2, **kw), ember.randn(2, 2, **kw),
                     ember.randn(8, 2, **kw))
    assert ember.autograd.gradgradcheck(lambda *a: rnn_ops.lstm_layer(*a, None, (2, 1), False)[0], (xg, h0, c0, w))
    wg = ember.randn(6, 2, **kw)
    assert ember.autograd.gradgradcheck(lambda a, b, c: rnn_ops.gru_layer(a, b, c, None, None, True)[1],
                                        (ember.randn(2, 2, 6, **kw), h0, wg))


def test_cells_vs_numpy_and_gradcheck(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    for cell, mode in ((nn.RNNCell(4, 5), "RNN_TANH"), (nn.RNNCell(4, 5, nonlinearity="relu"), "RNN_RELU"),
                       (nn.LSTMCell(4, 5), "LSTM"), (nn.GRUCell(4, 5), "GRU")):
        cell = cell.to(device)
        p = {k + "_l0": v for k, v in _params(cell).items()}
        h = rng.standard_normal((3, 5))
        c = rng.standard_normal((3, 5))
        xe = ember.tensor(x, dtype=ember.float32, device=device)
        he = ember.tensor(h, dtype=ember.float32, device=device)
        ce = ember.tensor(c, dtype=ember.float32, device=device)
        got = cell(xe, (he, ce)) if mode == "LSTM" else cell(xe, he)
        o, rh, rc = np_rnn_direction(mode, _np(xe)[None], _np(he), _np(ce) if mode == "LSTM" else None, p, "_l0",
                                     False)
        if mode == "LSTM":
            assert_close(got[0], rh, rtol=1e-4, atol=1e-5)
            assert_close(got[1], rc, rtol=1e-4, atol=1e-5)
        else:
            assert_close(got, rh, rtol=1e-4, atol=1e-5)
    if supports(device, ember.float64):
        cell = nn.GRUCell(3, 2).to(device).double()
        check_grad(lambda a, b: cell(a, b), [(2, 3), (2, 2)], device=device, name="GRUCell")
        lcell = nn.LSTMCell(3, 2).to(device).double()
        check_grad(lambda a, b, c: lcell(a, (b, c))[1], [(2, 3), (2, 2), (2, 2)], device=device, name="LSTMCell")


# -- packed sequences ---------------------------------------------------------------------------

@pytest.mark.ember_requires(cpu=True)  # batch_sizes live on cpu, as in PyTorch
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_packed_equals_per_sequence_runs(device, mode):
    ember.manual_seed(0)
    m = getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True).to(device)
    lengths = [3, 5, 1, 4]
    seqs = [ember.randn(n, 3, device=device) for n in lengths]
    packed = rnn_utils.pack_sequence(seqs, enforce_sorted=False)
    out, hn = m(packed)
    assert isinstance(out, rnn_utils.PackedSequence)
    padded, lens = rnn_utils.pad_packed_sequence(out, batch_first=True)
    assert lens.tolist() == lengths
    h_all = hn[0] if mode == "LSTM" else hn
    for b, s in enumerate(seqs):
        o1, h1 = m(s.unsqueeze(1))
        assert_close(padded[b, :lengths[b]], _np(o1[:, 0]), rtol=1e-4, atol=1e-5)
        assert_close(padded[b, lengths[b]:], np.zeros((5 - lengths[b], 8)))
        assert_close(h_all[:, b], _np((h1[0] if mode == "LSTM" else h1)[:, 0]), rtol=1e-4, atol=1e-5)
    # and the numpy reference on the padded batch with lengths
    xpad = rnn_utils.pad_sequence(seqs)
    ref, rh, _ = np_rnn(m, _np(xpad), lengths=lengths)
    assert_close(padded, ref.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    assert_close(h_all, rh, rtol=1e-4, atol=1e-5)


@pytest.mark.ember_requires(cpu=True)  # batch_sizes live on cpu, as in PyTorch
def test_packed_backward_matches_per_sequence(device):
    m = nn.LSTM(2, 3).to(device)
    seqs = [ember.randn(n, 2, device=device, requires_grad=True) for n in (4, 2)]
    out, _ = m(rnn_utils.pack_sequence(seqs))
    out.data.sum().backward()
    g_packed = [_np(s.grad) for s in seqs]
    w_packed = _np(m.weight_hh_l0.grad)
    m.zero_grad()
    for s in seqs:
        s.grad = None
        m(s.unsqueeze(1))[0].sum().backward()
    for s, g in zip(seqs, g_packed):
        assert_close(s.grad, g, rtol=1e-4, atol=1e-5)
    assert_close(m.weight_hh_l0.grad, w_packed, rtol=1e-4, atol=1e-5)


@pytest.mark.ember_requires(cpu=True)  # batch_sizes live on cpu, as in PyTorch
def test_pack_pad_round_trip(device):
    x = ember.randn(4, 3, 2, device=device)
    p = rnn_utils.pack_padded_sequence(x, [4, 2, 3], enforce_sorted=False)
    assert p.batch_sizes.tolist() == [3, 3, 2, 1] and p.sorted_indices.tolist() == [0, 2, 1]
    assert p.unsorted_indices.tolist() == [0, 2, 1]
    xn = _np(x)
    assert_close(p.data[:3], xn[0, [0, 2, 1]])
    padded, lengths = rnn_utils.pad_packed_sequence(p, padding_value=-1.0, total_length=6)
    assert tuple(padded.shape) == (6, 3, 2) and lengths.tolist() == [4, 2, 3]
    ref = np.full((6, 3, 2), -1.0)
    for b, n in enumerate([4, 2, 3]):
        ref[:n, b] = xn[:n, b]
    assert_close(padded, ref)
    seqs = rnn_utils.unpack_sequence(p)
    assert [tuple(s.shape) for s in seqs] == [(4, 2), (2, 2), (3, 2)]
    un = rnn_utils.unpad_sequence(padded, lengths)
    assert_close(un[2], xn[:3, 2])
    left = rnn_utils.pad_sequence(seqs, batch_first=True, padding_side="left")
    assert_close(left[1, 2:], xn[:2, 1])
    assert_close(left[1, :2], np.zeros((2, 2)))


# -- attention --------------------------------------------------------------------------------------

def test_sdpa_vs_numpy(device):
    specs = [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2)]
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), np_sdpa, specs, device=device, grad=True,
             name="sdpa", layouts_=("contiguous", "transposed"))
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
             lambda q, k, v: np_sdpa(q, k, v, causal=True, scale=0.3), specs, device=device, grad=True,
             name="sdpa_causal", layouts_=("contiguous",))
    mask = np.random.default_rng(0).random((4, 6)) > 0.4
    mask[:, 0] = True
    me = ember.tensor(mask, device=device)
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=me),
             lambda q, k, v: np_sdpa(q, k, v, mask), specs, device=device, grad=True, name="sdpa_bool_mask",
             layouts_=("contiguous",))
    check_op(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
             lambda q, k, v, m: np_sdpa(q, k, v, m), specs + [(2, 1, 4, 6)], device=device, grad=True,
             name="sdpa_float_mask", layouts_=("contiguous",))


def test_sdpa_fully_masked_rows_are_zero_and_gqa(device):
    q, k, v = (ember.randn(1, 2, 3, 4, device=device) for _ in range(3))
    mask = ember.tensor([[True, True, False], [False, False, False], [True, False, False]], device=device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    o = _np(out)
    assert np.isfinite(o).all() and np.abs(o[:, :, 1]).max() == 0
    assert_close(out[:, :, 0], np_sdpa(_np(q), _np(k), _np(v), _np(mask).astype(bool))[:, :, 0], rtol=1e-4, atol=1e-5)
    kg, vg = ember.randn(1, 1, 3, 4, device=device), ember.randn(1, 1, 3, 4, device=device)
    got = F.scaled_dot_product_attention(q, kg, vg, enable_gqa=True)
    assert_close(got, np_sdpa(_np(q), np.repeat(_np(kg), 2, 1), np.repeat(_np(vg), 2, 1)), rtol=1e-4, atol=1e-5)


def test_sdpa_dropout_only_when_asked(device):
    q = ember.randn(2, 8, 4, device=device)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
    assert_close(a, np_sdpa(_np(q), _np(q), _np(q)), rtol=1e-4, atol=1e-5)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.9)
    assert not np.allclose(_np(b), _np(a))


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "sdpa_path"])
def test_multihead_attention_vs_numpy(device, need_weights):
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2).to(device)
    with ember.no_grad():
        m.in_proj_bias.copy_(ember.randn(24, device=device) * 0.1)
    q, k = ember.randn(4, 3, 8, device=device), ember.randn(6, 3, 8, device=device)
    kpm = ember.tensor([[False] * 6, [False] * 4 + [True] * 2, [True] + [False] * 5], device=device)
    am = ember.tensor(np.triu(np.ones((4, 6), bool), 3), device=device)
    out, w = m(q, k, k, key_padding_mask=kpm, attn_mask=am, need_weights=need_weights)
    ro, rw = np_mha(m, _np(q), _np(k), _np(k), _np(kpm).astype(bool), _np(am).astype(bool))
    assert_close(out, ro, rtol=1e-4, atol=1e-5)
    if need_weights:
        assert_close(w, rw, rtol=1e-4, atol=1e-5)
    else:
        assert w is None
    if supports(device, ember.float64):
        md = m.double()
        check_grad(lambda a, b: md(a, b, b, key_padding_mask=kpm, need_weights=need_weights)[0],
                   [(2, 3, 8), (6, 3, 8)], device=device, name="MultiheadAttention")


def test_multihead_attention_float_and_bool_masks_agree(device):
    m = nn.MultiheadAttention(4, 1, batch_first=True).to(device)
    x = ember.randn(2, 5, 4, device=device)
    bool_mask = ember.tensor(np.triu(np.ones((5, 5), bool), 1), device=device)
    float_mask = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    a, wa = m(x, x, x, attn_mask=bool_mask)
    b, wb = m(x, x, x, attn_mask=float_mask)
    c, _ = m(x, x, x, attn_mask=float_mask, is_causal=True, need_weights=False)
    assert_close(a, _np(b), rtol=1e-5, atol=1e-6)
    assert_close(c, _np(b), rtol=1e-4, atol=1e-5)
    assert np.abs(np.triu(_np(wa)[0], 1)).max() == 0


def test_transformer_encoder_layer_vs_numpy(device):
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0).to(device)
    x = ember.randn(5, 2, 8, device=device)
    mask = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    kpm = ember.tensor([[False] * 5, [False] * 3 + [True] * 2], device=device)
    assert_close(layer(x), np_encoder_layer(layer, _np(x)), rtol=1e-4, atol=1e-4)
    assert_close(layer(x, src_mask=mask, src_key_padding_mask=kpm),
                 np_encoder_layer(layer, _np(x), _np(mask), _np(kpm).astype(bool)), rtol=1e-4, atol=1e-4)
    enc = nn.TransformerEncoder(layer, 2).to(device)
    r = _np(x)
    for lyr in enc.layers:
        r = np_encoder_layer(lyr, r, _np(mask))
    assert_close(enc(x, mask=mask), r, rtol=1e-4, atol=1e-4)
    if supports(device, ember.float64):
        enc64 = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, norm_first=True), 1)
        enc64 = enc64.to(device).double()
        check_grad(lambda a: enc64(a), [(3, 2, 4)], device=device, name="TransformerEncoder")


def test_transformer_train_eval_dropout(device):
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.5).to(device)
    src, tgt = ember.randn(4, 2, 8, device=device), ember.randn(3, 2, 8, device=device)
    model.eval()
    a, b = model(src, tgt), model(src, tgt)
    assert_close(a, _np(b))
    model.train()
    c, d = model(src, tgt), model(src, tgt)
    assert not np.allclose(_np(c), _np(d))
    assert tuple(c.shape) == (3, 2, 8)
    c.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
