"""Whole training iterations of issue 24, each "(eager)" and "(compiled step)" (the whole iteration,
forward, ``loss.backward()`` and the optimizer, in one ``ember.compile``d function) beside PyTorch
eager, and "(torch.compile)": ember's compiled step beside PyTorch's ``torch.compile`` of the same
function (skipped by ``--quick``: inductor compiles C++ for a minute or more in the warm-up).

* GPT-style: 4 pre-LayerNorm blocks, d_model 128, 4 heads, context 64, batch 16, causal
  ``scaled_dot_product_attention``, GELU MLP, tied embedding and head, AdamW (weight decay 0.1);
* word-level LSTM language model (PyTorch's word_language_model example at its small size):
  embedding 200, 2-layer LSTM 200, vocabulary 10000, 35 steps x batch 20, the hidden state carried
  (detached) from one iteration to the next, ``clip_grad_norm_(0.25)``, plain SGD on ``p.data``;
* the model steps of :mod:`w60_compile` (MLP, LeNet, conv+BN, LSTM, Transformer encoder: a
  squared-mean loss, SGD with momentum) as whole compiled steps.
"""
import numpy as np

import ember
from benchmarks.registry import workload
from benchmarks.workloads.w20_models import _copy_weights
from benchmarks.workloads.w60_compile import MODELS, _first

VOCAB, D, HEADS, LAYERS, CTX, BATCH = 256, 128, 4, 4, 64, 16
WORDS, EMB, SEQ, WBATCH = 10000, 200, 35, 20


def _gpt(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, D), nn.Embedding(CTX, D)
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
            self.ln = nn.LayerNorm(D)
            self.head = nn.Linear(D, VOCAB, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, idx, targets):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1], device=idx.device))
            for b in self.blocks:
                x = b(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    return GPT()


def _gpt_parts(lib, model, device, wrap):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                          lr=3e-4, betas=(0.9, 0.95))
    rng = np.random.default_rng(0)
    data = rng.integers(0, VOCAB, (BATCH, CTX + 1))
    x = lib.tensor(data[:, :-1], device=device)
    y = lib.tensor(data[:, 1:], device=device)

    def step():
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        opt.step()
        return loss
    return wrap(step)


def _word_lm(lib):
    nn = lib.nn

    class WordLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(WORDS, EMB)
            self.rnn = nn.LSTM(EMB, EMB, 2)
            self.decoder = nn.Linear(EMB, WORDS)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.encoder(x), hidden)
            return self.decoder(out).view(-1, WORDS), hidden

    return WordLM()


def _word_parts(lib, model, device, wrap):
    rng = np.random.default_rng(0)
    data = rng.integers(0, WORDS, (SEQ + 1, WBATCH))
    x = lib.tensor(data[:-1], device=device)
    y = lib.tensor(data[1:].reshape(-1), device=device)
    hidden = [tuple(lib.zeros(2, WBATCH, EMB, device=device) for _ in range(2))]
    crit = lib.nn.CrossEntropyLoss()
    params = list(model.parameters())

    def step(h):
        model.zero_grad()
        out, h = model(x, h)
        loss = crit(out, y)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(params, 0.25)
        for p in params:
            p.data.add_(p.grad, alpha=-0.1)
        return loss, tuple(t.detach() for t in h)
    fn = wrap(step)

    def call():  # the hidden state carried from one iteration to the next
        loss, hidden[0] = fn(hidden[0])
        return loss
    return call


def _model_parts(name):
    build, shape = MODELS[name]

    def make(lib, model, device, wrap):
        opt = lib.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        x = lib.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32), device=device)

        def step():
            opt.zero_grad()
            loss = _first(model(x)).square().mean()
            loss.backward()
            opt.step()
            return loss
        return wrap(step)
    return build, make


def _impls(ctx, build, make, mode):
    """ember's step (eager, or compiled whole with ``mode != "eager"``) and torch's (eager, or
    torch.compile'd with ``mode == "torch.compile"``); ``make(lib, model, device, wrap)`` builds the
    step, passing the function of tensors to compile through ``wrap``."""
    ember.manual_seed(0)
    model = build(ember).to(ctx.device)
    e_step = make(ember, model, ctx.device, (lambda f: f) if mode == "eager" else ember.compile)

    def e_run():
        e_step()
        ctx.sync()
    out = {"ember": e_run}
    if ctx.torch is not None:
        torch = ctx.torch
        torch.manual_seed(0)
        tmodel = build(torch).to(ctx.torch_device)
        _copy_weights(model, tmodel)
        t_step = make(torch, tmodel, ctx.torch_device, torch.compile if mode == "torch.compile" else lambda f: f)

        def t_run():
            t_step()
            ctx.torch_sync()
        out["torch"] = t_run
    return out


GPT_NAME = "GPT-style iteration (4x d128 h4, ctx 64, batch 16, AdamW)"
WORD_NAME = "word LSTM LM step (2x200, vocab 10k, 35x20, clip, SGD)"


def _register(name, build, make):
    for mode, label, quick in (("eager", "eager", True), ("step", "compiled step", True),
                               ("torch.compile", "torch.compile", False)):
        workload(f"{name} ({label})", "compile", quick=quick)(
            lambda ctx, mode=mode: _impls(ctx, build, make, mode))


_register(GPT_NAME, _gpt, _gpt_parts)
_register(WORD_NAME, _word_lm, _word_parts)
for _name in MODELS:
    _b, _m = _model_parts(_name)
    workload(f"train step {_name} (compiled step)", "compile")(
        lambda ctx, b=_b, m=_m: _impls(ctx, lambda lib: b(lib.nn), m, "step"))
