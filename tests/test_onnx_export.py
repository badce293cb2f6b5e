"""``ember.onnx.export``: models of the examples and the corpus exported, run in onnxruntime and
compared with ember's own outputs (float32 tolerance), traced at one batch size and run at
another where the batch axis is dynamic; names, opsets, options and the errors.

Needs the optional packages onnx and onnxruntime (``tox -e onnx``); skipped without them."""
from __future__ import annotations

import io
import math
import os
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx

onnx = pytest.importorskip("onnx", reason="ONNX export tests need the optional onnx package (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="ONNX export tests run the models in onnxruntime (pip install "
                          "onnxruntime)")

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
ATOL, RTOL = 1e-4, 1e-4


def export_bytes(model, args, **kw) -> bytes:
    buf = io.BytesIO()
    ember.onnx.export(model, args, buf, **kw)
    return buf.getvalue()


def run_onnx(data: bytes, inputs):
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(a.numpy()) for i, a in zip(sess.get_inputs(), inputs)}
    return sess.run(None, feeds)


def flat(out):
    if isinstance(out, ember.Tensor):
        return [out]
    return [t for o in out for t in flat(o)]


def check(model, args, run_args=None, dynamic_axes=None, **kw):
    """Export ``model`` traced on ``args``, run it on ``run_args`` in onnxruntime and compare
    with ember's outputs on them."""
    model.eval()
    data = export_bytes(model, args, dynamic_axes=dynamic_axes, **kw)
    run_args = args if run_args is None else run_args
    with ember.no_grad():
        expected = flat(model(*run_args))
    got = run_onnx(data, run_args)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g.shape == tuple(e.shape)
        np.testing.assert_allclose(g, e.numpy(), rtol=RTOL, atol=ATOL)
    return onnx.load_from_string(data)


# -- the models ---------------------------------------------------------------------------------

def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 16), nn.GELU(),
                         nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 5), nn.LogSoftmax(dim=-1))


def digit_net():
    sys.path.insert(0, EXAMPLES)
    try:
        import train_digits
    finally:
        sys.path.remove(EXAMPLES)
    net = train_digits.DigitNet()
    for m in net.modules():  # non-trivial running statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    return net


class BasicBlock(nn.Module):
    """The corpus ResNet's block (examples/corpus/resnet.py): conv-bn-relu(inplace)-conv-bn,
    a 1x1 strided downsample, ``out += identity``."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.block = BasicBlock(8, 16, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x = self.avgpool(self.block(self.stem(x)))
        return self.fc(ember.flatten(x, 1))


class LanguageModel(nn.Module):
    """The corpus word language model (examples/corpus/word_language_model.py): embedding, a
    two-layer LSTM (or GRU) fed the hidden state, a decoder, ``view(-1, ntoken)`` and
    log_softmax."""

    def __init__(self, rnn_type="LSTM", ntoken=20, ninp=8, nhid=12, nlayers=2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


class Encoder(nn.Module):
    """A Transformer encoder classifier: embedding, learned positions, two
    nn.TransformerEncoderLayers (batch_first, a causal mask), mean over the sequence."""

    def __init__(self, ntoken=30, d=16, nhead=4, seq=6, norm_first=False):
        super().__init__()
        self.emb = nn.Embedding(ntoken, d)
        self.pos = nn.Parameter(ember.randn(seq, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, nhead, 32, dropout=0.1, batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, 3)
        self.mask = nn.Transformer.generate_square_subsequent_mask(seq)

    def forward(self, tokens):
        x = self.emb(tokens) * math.sqrt(self.emb.embedding_dim) + self.pos
        x = self.encoder(x, mask=self.mask)
        return self.head(x.mean(1))


# -- exported and run ------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
def test_mlp(dynamic):
    x = ember.randn(4, 3, 4)
    if dynamic:
        check(mlp(), (x,), (ember.randn(9, 3, 4),), dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    else:
        check(mlp(), (x,))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
def test_digits_cnn(dynamic):
    x = ember.rand(5, 1, 8, 8)
    run = (ember.rand(3, 1, 8, 8),) if dynamic else None
    model = check(digit_net(), (x,), run, dynamic_axes={"x": [0]} if dynamic else None)
    ops = {n.op_type for n in model.graph.node}
    assert {"Conv", "MaxPool", "Gemm"} <= ops
    if dynamic:
        assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
def test_resnet_block(dynamic):
    x = ember.randn(2, 3, 16, 16)
    net = TinyResNet()
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    check(net, (x,), (ember.randn(5, 3, 16, 16),) if dynamic else None,
          dynamic_axes={"x": {0: "N"}} if dynamic else None)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
def test_recurrent_language_model(rnn_type, dynamic):
    lm = LanguageModel(rnn_type)
    T, B, B2 = 7, 3, 5

    def inputs(b):
        tokens = ember.randint(0, 20, (T, b))
        h = ember.randn(2, b, 12) * 0.5
        return (tokens, (h, ember.randn(2, b, 12) * 0.5) if rnn_type == "LSTM" else h)

    args = inputs(B)
    dyn = None
    if dynamic:
        dyn = {"input": {1: "batch"}, "hidden_0": {1: "batch"}, "hidden_1": {1: "batch"}, "hidden": {1: "batch"}}
    run = inputs(B2) if dynamic else None
    flat_run = None if run is None else (run[0],) + tuple(flat(run[1]))
    model_data = export_bytes(lm.eval(), args, dynamic_axes=dyn)
    with ember.no_grad():
        expected = flat(lm(*(run or args)))
    got = run_onnx(model_data, flat_run or (args[0],) + tuple(flat(args[1])))
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e.numpy(), rtol=RTOL, atol=ATOL)
    assert rnn_type in {n.op_type for n in onnx.load_from_string(model_data).graph.node}


def test_lstm_batch_first_bidirectional_without_state():
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(5, 6, batch_first=True, bidirectional=True)
            self.out = nn.Linear(12, 3)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.out(y[:, -1])

    check(Tagger(), (ember.randn(2, 4, 5),), (ember.randn(6, 4, 5),), dynamic_axes={"x": {0: "batch"}})


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_transformer_encoder(dynamic, norm_first):
    enc = Encoder(norm_first=norm_first)
    tokens = ember.randint(0, 30, (2, 6))
    model = check(enc, (tokens,), (ember.randint(0, 30, (5, 6)),) if dynamic else None,
                  dynamic_axes={"tokens": {0: "batch"}} if dynamic else None)
    ops = {n.op_type for n in model.graph.node}
    assert {"MatMul", "Softmax", "LayerNormalization"} <= ops


def test_multihead_attention_and_sdpa():
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2)

        def forward(self, q, kv):
            out, w = self.mha(q, kv, kv)
            qb, kb = q.transpose(0, 1), kv.transpose(0, 1)
            return out + F.scaled_dot_product_attention(qb, kb, kb).transpose(0, 1), w

    check(Attn(), (ember.randn(3, 2, 8), ember.randn(4, 2, 8)), (ember.randn(3, 6, 8), ember.randn(4, 6, 8)),
          dynamic_axes={"q": {1: "batch"}, "kv": {1: "batch"}})


def test_common_layers_and_tensor_ops():
    class Zoo(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv1d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm1d(4)
            self.ln = nn.LayerNorm(10)
            self.pool = nn.AvgPool1d(2)

        def forward(self, x):
            y = self.bn(self.c1(x))                       # (B, 4, 10)
            y = self.ln(F.leaky_relu(y, 0.1)) + F.silu(y).sigmoid()
            z = self.pool(y).permute(0, 2, 1).reshape(x.shape[0], -1)      # (B, 20)
            w = ember.cat([z, z[:, :3] * 2.0, z.sum(1, keepdim=True) / 3], dim=1)
            s = F.softmax(w, dim=-1) + w.mean(dim=1, keepdim=True) - w.transpose(0, 1).t()
            return s.unsqueeze(1).squeeze(1), F.adaptive_avg_pool1d(y, 1).flatten(1), (y[:, 1:3, ::2] ** 2).exp()

    net = Zoo()
    net.bn.running_var.fill_(1.5)
    check(net, (ember.randn(2, 3, 10),), (ember.randn(4, 3, 10),), dynamic_axes={"x": {0: "B"}})


# -- names, opsets, options ----------------------------------------------------------------------

def test_input_and_output_names_and_file_path(tmp_path):
    path = tmp_path / "mlp.onnx"
    r = ember.onnx.export(mlp(), (ember.randn(2, 3, 4),), str(path), input_names=["pixels"], output_names=["logp"],
                          dynamo=False)
    assert r is None
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["pixels"]
    assert [o.name for o in model.graph.output] == ["logp"]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert sess.run(["logp"], {"pixels": np.zeros((2, 3, 4), np.float32)})[0].shape == (2, 5)


def test_default_names_and_onnx_program():
    prog = ember.onnx.export(mlp(), (ember.randn(2, 3, 4),))
    assert isinstance(prog, ember.onnx.ONNXProgram)
    assert [i.name for i in prog.model_proto.graph.input] == ["input"]
    assert [o.name for o in prog.model_proto.graph.output] == ["output"]
    buf = io.BytesIO()
    prog.save(buf)
    assert onnx.load_from_string(buf.getvalue()).graph.node


@pytest.mark.parametrize("opset", [17, 18, 20])
def test_opset_version(opset):
    model = check(TinyResNet(), (ember.randn(1, 3, 8, 8),), opset_version=opset)
    assert [o.version for o in model.opset_import if o.domain == ""] == [opset]


def test_opset_too_old_raises():
    with pytest.raises(ValueError, match="opset_version 11 is not supported"):
        export_bytes(mlp(), (ember.randn(2, 3, 4),), opset_version=11)


def test_parameters_are_named_initializers_and_export_params_false():
    net = nn.Sequential(nn.Linear(4, 3))
    model = onnx.load_from_string(export_bytes(net, (ember.randn(2, 4),)))
    assert {"0.weight", "0.bias"} <= {i.name for i in model.graph.initializer}
    model = onnx.load_from_string(export_bytes(net, (ember.randn(2, 4),), export_params=False))
    assert {"0.weight", "0.bias"} <= {i.name for i in model.graph.input}
    assert not {"0.weight", "0.bias"} & {i.name for i in model.graph.initializer}


def test_training_mode_is_restored_and_eval_is_traced():
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    net.train()
    data = export_bytes(net, (ember.randn(3, 4),))
    assert net.training and net[1].training
    x = ember.randn(3, 4)
    with ember.no_grad():
        expected = net.eval()(x)
    np.testing.assert_allclose(run_onnx(data, (x,))[0], expected.numpy(), rtol=RTOL, atol=ATOL)


def test_kwargs_and_is_in_onnx_export():
    seen = []

    class M(nn.Module):
        def forward(self, x, scale=1.0, bias=None):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * scale + bias

    x, b = ember.randn(2, 3), ember.randn(2, 3)
    data = export_bytes(M(), (x, {"bias": b}))
    assert seen == [True] and not ember.onnx.is_in_onnx_export()
    np.testing.assert_allclose(run_onnx(data, (x, b))[0], (x + b).numpy(), rtol=RTOL, atol=ATOL)


# -- errors ----------------------------------------------------------------------------------------

def test_unmapped_op_names_the_op_and_the_module():
    class Sorter(nn.Module):
        def forward(self, x):
            return ember.sort(x, dim=1).values

    model = nn.Sequential(nn.Linear(3, 3), Sorter())
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError, match=r"op 'sort' \(in module '1'\) has no ONNX "
                       "mapping"):
        export_bytes(model, (ember.randn(2, 3),))
    assert issubclass(ember.onnx.errors.UnsupportedOperatorError, RuntimeError)
    # the tracer is gone: ops run normally again
    assert ember.sort(ember.tensor([3.0, 1.0])).values.tolist() == [1.0, 3.0]


def test_write_into_a_slice_is_refused():
    class Writer(nn.Module):
        def forward(self, x):
            y = x * 2
            y[:, 0] = 0.0
            return y

    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError, match="in-place write into a view"):
        export_bytes(Writer(), (ember.randn(2, 3),))


def test_dynamo_only_options_raise():
    with pytest.raises(NotImplementedError, match="dynamic_shapes= is not supported"):
        export_bytes(mlp(), (ember.randn(2, 3, 4),), dynamic_shapes={"input": {0: "b"}})


def test_reductions_casts_and_transposed_convolution():
    class Stats(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1)

        def forward(self, x):
            y = self.up(x).flatten(2)                                   # (B, 3, 64)
            v, i = y.max(dim=2)
            return (y.var(2), y.std(2, keepdim=True), y.logsumexp(2), y.amax((1, 2)), v, i, y.argmax(2),
                    ember.where(y > 0, y, 0.5).clamp(max=1.0), (y * 10).to(ember.int64), y.cumsum(2))

    check(Stats(), (ember.randn(2, 2, 4, 4),), (ember.randn(3, 2, 4, 4),), dynamic_axes={"x": {0: "B"}})
