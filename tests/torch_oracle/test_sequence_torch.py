"""Real PyTorch as the oracle for the sequence layers: a torch state dict loads one to one into the
ember layer of the same architecture, and outputs, final states and gradients agree (float64);
packed sequences have torch's layout; reprs are torch's."""
import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as tu

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.nn.utils import rnn as eu


def E(t):
    return ember.tensor(t.detach().numpy())


def close(a, b, tol=1e-10):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    b = b.detach().numpy()
    assert a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol), np.abs(a - b).max()


def load(em, tm):
    r = em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
    assert not r.missing_keys and not r.unexpected_keys
    assert list(em.state_dict()) == list(tm.state_dict())


def _tup(h):
    return h if isinstance(h, tuple) else (h,)


RNNS = [("LSTM", dict(num_layers=2, bidirectional=True)), ("LSTM", dict(proj_size=3, bidirectional=True)),
        ("LSTM", dict(batch_first=True)), ("GRU", dict(num_layers=2, bidirectional=True)),
        ("GRU", dict(bias=False)), ("RNN", dict(nonlinearity="relu", num_layers=2)),
        ("RNN", dict(batch_first=True, bidirectional=True))]


@pytest.mark.parametrize("cls,kw", RNNS, ids=[f"{c}-{'-'.join(k)}" for c, k in RNNS])
def test_recurrent_layers_match_torch(cls, kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 5, **kw).double()
    em = getattr(enn, cls)(4, 5, **kw).double()
    load(em, tm)
    assert repr(em) == repr(tm)
    bf = kw.get("batch_first", False)
    x = torch.randn(*((3, 6, 4) if bf else (6, 3, 4)), dtype=torch.float64, requires_grad=True)
    xe = E(x).requires_grad_()
    to, th = tm(x)
    eo, eh = em(xe)
    close(eo, to)
    for a, b in zip(_tup(eh), _tup(th)):
        close(a, b)
    (to.sum() + sum((t * t).sum() for t in _tup(th))).backward()
    (eo.sum() + sum((t * t).sum() for t in _tup(eh))).backward()
    close(xe.grad, x.grad, 1e-9)
    tp = dict(tm.named_parameters())
    for n, p in em.named_parameters():
        close(p.grad, tp[n].grad, 1e-9)
    # packed, unsorted lengths
    xp = torch.randn(6, 3, 4, dtype=torch.float64)
    if bf:
        xp = xp.transpose(0, 1).contiguous()
    tpk = tu.pack_padded_sequence(xp, [4, 6, 2], batch_first=bf, enforce_sorted=False)
    epk = eu.pack_padded_sequence(E(xp), [4, 6, 2], batch_first=bf, enforce_sorted=False)
    close(epk.data, tpk.data)
    assert epk.batch_sizes.tolist() == tpk.batch_sizes.tolist()
    assert epk.sorted_indices.tolist() == tpk.sorted_indices.tolist()
    to, th = tm(tpk)
    eo, eh = em(epk)
    close(eo.data, to.data)
    for a, b in zip(_tup(eh), _tup(th)):
        close(a, b)
    tpad, tl = tu.pad_packed_sequence(to, batch_first=bf, padding_value=-2.0, total_length=7)
    epad, el = eu.pad_packed_sequence(eo, batch_first=bf, padding_value=-2.0, total_length=7)
    close(epad, tpad)
    assert el.tolist() == tl.tolist()


@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)),
                                    ("LSTMCell", {}), ("GRUCell", {})])
def test_cells_match_torch(cls, kw):
    tm = getattr(torch.nn, cls)(4, 5, **kw).double()
    em = getattr(enn, cls)(4, 5, **kw).double()
    load(em, tm)
    assert repr(em) == repr(tm)
    x = torch.randn(3, 4, dtype=torch.float64)
    for a, b in zip(_tup(em(E(x))), _tup(tm(x))):
        close(a, b)
    for a, b in zip(_tup(em(E(x[0]))), _tup(tm(x[0]))):
        close(a, b)


def test_pad_sequence_matches_torch():
    seqs = [torch.randn(n, 2) for n in (3, 1, 4)]
    for kw in (dict(), dict(batch_first=True, padding_value=-1.0), dict(padding_side="left")):
        close(eu.pad_sequence([E(s) for s in seqs], **kw), tu.pad_sequence(seqs, **kw))
    tp = tu.pack_sequence(seqs, enforce_sorted=False)
    ep = eu.pack_sequence([E(s) for s in seqs], enforce_sorted=False)
    close(ep.data, tp.data)
    for a, b in zip(eu.unpack_sequence(ep), tu.unpack_sequence(tp)):
        close(a, b)


def test_sdpa_matches_torch():
    q = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    k = torch.randn(2, 3, 6, 4, dtype=torch.float64)
    v = torch.randn(2, 3, 6, 7, dtype=torch.float64)
    bm = torch.rand(5, 6) > 0.3
    fm = torch.randn(2, 1, 5, 6, dtype=torch.float64)
    for kw in ({}, dict(is_causal=True), dict(attn_mask=bm), dict(attn_mask=fm), dict(scale=0.3)):
        ekw = {n: (E(t) if isinstance(t, torch.Tensor) else t) for n, t in kw.items()}
        close(EF.scaled_dot_product_attention(E(q), E(k), E(v), **ekw),
              torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw))


MHAS = [dict(), dict(batch_first=True), dict(kdim=3, vdim=5), dict(add_bias_kv=True, add_zero_attn=True),
        dict(bias=False)]


@pytest.mark.parametrize("kw", MHAS, ids=["default", "batch_first", "kdim_vdim", "bias_kv_zero_attn", "no_bias"])
def test_multihead_attention_matches_torch(kw):
    tm = torch.nn.MultiheadAttention(8, 2, **kw).double()
    em = enn.MultiheadAttention(8, 2, **kw).double()
    load(em, tm)
    assert repr(em) == repr(tm)
    bf = kw.get("batch_first", False)

    def sh(L, d):
        return (3, L, d) if bf else (L, 3, d)
    x = torch.randn(*sh(5, 8), dtype=torch.float64)
    k = torch.randn(*sh(6, kw.get("kdim", 8)), dtype=torch.float64)
    v = torch.randn(*sh(6, kw.get("vdim", 8)), dtype=torch.float64)
    kpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [True] + [False] * 5])
    am = torch.rand(5, 6) > 0.8
    for fkw in (dict(), dict(key_padding_mask=kpm),
                dict(attn_mask=am, key_padding_mask=kpm, average_attn_weights=False),
                dict(need_weights=False, attn_mask=am)):
        a = tm(x, k, v, **fkw)
        b = em(E(x), E(k), E(v), **{n: (E(t) if isinstance(t, torch.Tensor) else t) for n, t in fkw.items()})
        close(b[0], a[0])
        assert (a[1] is None) == (b[1] is None)
        if a[1] is not None:
            close(b[1], a[1])


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, activation="gelu", batch_first=True), dict(bias=False)],
                         ids=["post_norm", "pre_norm_gelu_bf", "no_bias"])
def test_transformer_layers_match_torch(kw):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    el = enn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    load(el, tl)
    assert repr(el) == repr(tl)
    te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8).double(), enable_nested_tensor=False)
    ee = enn.TransformerEncoder(el, 2, norm=enn.LayerNorm(8).double())
    load(ee, te)
    bf = kw.get("batch_first", False)
    x = torch.randn(*((3, 5, 8) if bf else (5, 3, 8)), dtype=torch.float64)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    kpm = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [True] + [False] * 4])
    close(ee(E(x)), te(x), 1e-9)
    close(ee(E(x), mask=E(mask)), te(x, mask=mask), 1e-9)
    close(ee(E(x), src_key_padding_mask=E(kpm)), te(x, src_key_padding_mask=kpm), 1e-9)
    td = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    ed = enn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw).double()
    load(ed, td)
    m = torch.randn(*((3, 6, 8) if bf else (6, 3, 8)), dtype=torch.float64)
    close(ed(E(x), E(m), tgt_mask=E(mask)), td(x, m, tgt_mask=mask), 1e-9)


def test_transformer_matches_torch():
    torch.manual_seed(0)
    tt = torch.nn.Transformer(8, 2, 2, 2, 16, dropout=0.0).double()
    et = enn.Transformer(8, 2, 2, 2, 16, dropout=0.0).double()
    load(et, tt)
    assert repr(et) == repr(tt)
    src, tgt = torch.randn(6, 3, 8, dtype=torch.float64), torch.randn(5, 3, 8, dtype=torch.float64)
    mask = tt.generate_square_subsequent_mask(5, dtype=torch.float64)
    close(et(E(src), E(tgt), tgt_mask=E(mask)), tt(src, tgt, tgt_mask=mask), 1e-9)
    close(enn.Transformer.generate_square_subsequent_mask(4), torch.nn.Transformer.generate_square_subsequent_mask(4))
