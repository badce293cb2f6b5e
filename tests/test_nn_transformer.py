"""ember.nn attention and Transformer layers (cpu): printed reprs and state-dict names as
PyTorch, PyTorch's initialisation, errors naming the shapes, dropout only in training, masks."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

MHA_REPR = """MultiheadAttention(
  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
)"""

ENC_LAYER_REPR = """TransformerEncoderLayer(
  (self_attn): MultiheadAttention(
    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
  )
  (linear1): Linear(in_features=8, out_features=16, bias=True)
  (dropout): Dropout(p=0.1, inplace=False)
  (linear2): Linear(in_features=16, out_features=8, bias=True)
  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (dropout1): Dropout(p=0.1, inplace=False)
  (dropout2): Dropout(p=0.1, inplace=False)
)"""


def test_reprs():
    assert repr(nn.MultiheadAttention(8, 2)) == MHA_REPR
    assert repr(nn.TransformerEncoderLayer(8, 2, 16)) == ENC_LAYER_REPR
    r = repr(nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU()))
    assert r.rstrip(")").rstrip().endswith("(activation): GELU(approximate='none')")
    enc = repr(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2))
    assert enc.startswith("TransformerEncoder(\n  (layers): ModuleList(\n    (0-1): 2 x TransformerEncoderLayer(")


def test_mha_parameter_names_and_init():
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, add_bias_kv=True)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes == {"in_proj_weight": (24, 8), "in_proj_bias": (24,), "bias_k": (1, 1, 8), "bias_v": (1, 1, 8),
                      "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    assert list(shapes) == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"]
    assert np.all(m.in_proj_bias.detach().numpy() == 0) and np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = np.sqrt(6 / (24 + 8))  # xavier_uniform over (3E, E)
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False)
    assert {k: tuple(v.shape) for k, v in sep.state_dict().items()} == {
        "q_proj_weight": (8, 8), "k_proj_weight": (8, 3), "v_proj_weight": (8, 5), "out_proj.weight": (8, 8)}
    assert sep.in_proj_weight is None and sep.in_proj_bias is None


def test_transformer_state_dict_names():
    t = nn.Transformer(8, 2, 2, 1, 16)
    keys = list(t.state_dict())
    assert "encoder.layers.1.self_attn.in_proj_weight" in keys
    assert "decoder.layers.0.multihead_attn.out_proj.bias" in keys
    assert "decoder.layers.0.norm3.weight" in keys
    assert "encoder.norm.weight" in keys and "decoder.norm.bias" in keys
    assert len([k for k in keys if k.startswith("encoder.layers.0.")]) == 12
    dec = [k for k in keys if k.startswith("decoder.layers.0.")]
    assert len(dec) == 18
    # every parameter of 2+ dims is xavier-uniform: the layers are no longer identical copies
    a = t.encoder.layers[0].linear1.weight.detach().numpy()
    b = t.encoder.layers[1].linear1.weight.detach().numpy()
    assert not np.array_equal(a, b)


def test_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(3)
    assert m.dtype is ember.float32
    assert m.tolist() == [[0.0, float("-inf"), float("-inf")], [0.0, 0.0, float("-inf")], [0.0, 0.0, 0.0]]


def test_errors_name_shapes():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    m = nn.MultiheadAttention(8, 2)
    x = ember.randn(4, 2, 8)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(3, 4\), but should be \(4, 4\)"):
        m(x, x, x, attn_mask=ember.zeros(3, 4))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match=r"expecting key_padding_mask shape of \(2, 4\)"):
        m(x, x, x, key_padding_mask=ember.zeros(2, 5, dtype=ember.bool))
    with pytest.raises(RuntimeError, match="expected `key` and `value` to be 3-D"):
        m(x, x[0], x[0])
    q = ember.randn(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3, dtype=ember.bool), is_causal=True)
    with pytest.raises(RuntimeError, match=r"query and key must have the same embedding size.*float32\[1, 2, 3, 5\]"):
        F.scaled_dot_product_attention(q, ember.randn(1, 2, 3, 5), q)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.zeros(4, 4))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    t = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(ember.randn(3, 2, 8), ember.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model=8"):
        t(ember.randn(3, 2, 8), ember.randn(3, 2, 6))


def test_dropout_only_in_training():
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.randn(5, 2, 8)
    m.eval()
    a, wa = m(x, x, x)
    b, _ = m(x, x, x)
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    assert np.allclose(wa.detach().numpy().sum(-1), 1.0, atol=1e-6)
    m.train()
    c, wc = m(x, x, x)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3), 2)
    enc.eval()
    assert np.array_equal(enc(x).detach().numpy(), enc(x).detach().numpy())


def test_is_causal_detected_from_the_mask():
    ember.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2)
    x = ember.randn(5, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    a = enc(x, mask=mask)
    b = enc(x, mask=mask, is_causal=True)
    assert np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)
    # causality: the first position does not see the later ones
    x2 = x.clone()
    x2[4] = 10.0
    assert np.allclose(enc(x2, mask=mask)[0].detach().numpy(), a[0].detach().numpy(), atol=1e-5)


def test_fully_masked_query_gives_zeros_not_nan():
    m = nn.MultiheadAttention(4, 1)
    x = ember.randn(3, 1, 4)
    kpm = ember.ones(1, 3, dtype=ember.bool)
    out, w = m(x, x, x, key_padding_mask=kpm)
    assert np.isfinite(out.detach().numpy()).all()
    assert np.all(w.detach().numpy() == 0)


def test_unbatched_and_batch_first_agree():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    x = ember.randn(2, 5, 8)
    full = layer(x)
    single = layer(x[1])
    assert tuple(single.shape) == (5, 8)
    assert np.allclose(full[1].detach().numpy(), single.detach().numpy(), atol=1e-5)


def test_decoder_shapes_and_backward():
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, norm_first=True), 2, norm=nn.LayerNorm(8))
    tgt, mem = ember.randn(4, 3, 8, requires_grad=True), ember.randn(6, 3, 8)
    out = dec(tgt, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4),
              memory_key_padding_mask=ember.zeros(3, 6, dtype=ember.bool))
    assert tuple(out.shape) == (4, 3, 8)
    out.sum().backward()
    assert tgt.grad is not None and all(p.grad is not None for p in dec.parameters())
