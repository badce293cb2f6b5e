"""Autocast and GradScaler against PyTorch itself (an oracle only, collected when torch is
installed): the output dtype of each op under ``autocast('cpu')`` (bfloat16 and float16) for
float32, low-precision and mixed inputs, the gradients' dtypes, and GradScaler's scale and skipped
steps over the same sequence of finite and non-finite gradients."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 4)).astype(np.float32)
B = RNG.standard_normal((4, 4)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
B3 = RNG.standard_normal((2, 4, 4)).astype(np.float32)
IMG = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
W2 = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
PROB = (1 / (1 + np.exp(-A))).astype(np.float32)
IDX = np.array([0, 2, 1, 3])

# (name, fn(lib, F, tensor-maker)); t(array, low) makes a tensor, low: cast it to the low dtype first
OPS = {
    "mm": lambda L, F, t: L.mm(t(A), t(B, True)),
    "matmul": lambda L, F, t: L.matmul(t(A, True), t(B)),
    "@": lambda L, F, t: t(A) @ t(B),
    "bmm": lambda L, F, t: L.bmm(t(B3), t(B3)),
    "addmm": lambda L, F, t: L.addmm(t(A), t(A, True), t(B)),
    "baddbmm": lambda L, F, t: L.baddbmm(t(B3), t(B3), t(B3)),
    "addbmm": lambda L, F, t: L.addbmm(t(A), t(B3), t(B3)),
    "linear": lambda L, F, t: F.linear(t(A, True), t(B), t(V)),
    "conv2d": lambda L, F, t: F.conv2d(t(IMG), t(W2, True)),
    "prelu": lambda L, F, t: F.prelu(t(A, True), t(np.array([0.25], np.float32))),
    "sdpa": lambda L, F, t: F.scaled_dot_product_attention(t(B3), t(B3, True), t(B3)),
    "mse_loss": lambda L, F, t: F.mse_loss(t(A, True), t(B, True)),
    "l1_loss": lambda L, F, t: F.l1_loss(t(A, True), t(B)),
    "smooth_l1_loss": lambda L, F, t: F.smooth_l1_loss(t(A, True), t(B, True)),
    "cross_entropy": lambda L, F, t: F.cross_entropy(t(A, True), L.tensor(IDX)),
    "nll_loss": lambda L, F, t: F.nll_loss(t(A, True), L.tensor(IDX)),
    "bce": lambda L, F, t: F.binary_cross_entropy(t(PROB, True), t(PROB, True)),
    "bce_logits": lambda L, F, t: F.binary_cross_entropy_with_logits(t(A, True), t(PROB, True)),
    "kl_div": lambda L, F, t: F.kl_div(t(A, True), t(PROB, True), reduction="batchmean"),
    "prod": lambda L, F, t: L.prod(t(A, True)),
    "trace": lambda L, F, t: L.trace(t(A, True)),
    "cat": lambda L, F, t: L.cat([t(A, True), t(B)]),
    "cat_low": lambda L, F, t: L.cat([t(A, True), t(B, True)]),
    "stack": lambda L, F, t: L.stack([t(A), t(B, True)]),
    "index_copy": lambda L, F, t: L.index_copy(t(A, True), 0, L.tensor(IDX), t(B)),
    # not on the cpu lists: they keep their inputs' dtypes
    "softmax": lambda L, F, t: L.softmax(t(A, True), 0),
    "log_softmax": lambda L, F, t: F.log_softmax(t(A, True), 1),
    "exp": lambda L, F, t: L.exp(t(A, True)),
    "sum": lambda L, F, t: t(A, True).sum(),
    "add": lambda L, F, t: t(A, True) + t(B),
    "layer_norm": lambda L, F, t: F.layer_norm(t(A, True), (4,)),
    "gelu": lambda L, F, t: F.gelu(t(A, True)),
    "float64 mm": lambda L, F, t: L.mm(t(A).double(), t(B).double()),
    "relu": lambda L, F, t: L.relu(t(A)),
}


def _maker(lib, low):
    def t(a, cast=False):
        x = lib.tensor(a)
        return x.to(low) if cast else x
    return t


def _name(dt) -> str:
    return str(dt).split(".")[-1]


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_cpu_autocast_output_dtype_matches_torch(name, low):
    fn = OPS[name]
    with torch.autocast("cpu", dtype=getattr(torch, low)):
        want = fn(torch, TF, _maker(torch, getattr(torch, low)))
    with ember.autocast("cpu", dtype=getattr(ember, low)):
        got = fn(ember, EF, _maker(ember, getattr(ember, low)))
    assert _name(got.dtype) == _name(want.dtype), name


def test_gradient_dtypes_match_torch():
    out = {}
    for lib, F in ((torch, TF), (ember, EF)):
        lib.manual_seed(0)
        w = lib.tensor(B, requires_grad=True)
        b = lib.tensor(V, requires_grad=True)
        x = lib.tensor(A)
        with lib.autocast("cpu"):
            h = F.linear(x, w, b)
            loss = F.mse_loss(h, lib.zeros(4, 4))
        loss.backward()
        out[lib.__name__] = (_name(h.dtype), _name(loss.dtype), _name(w.grad.dtype), _name(b.grad.dtype),
                             w.grad.to(lib.float64).numpy())
    t, e = out["torch"], out["ember"]
    assert t[:4] == e[:4]
    np.testing.assert_allclose(e[4], t[4], rtol=2e-2, atol=2e-2)


def test_grad_scaler_sequence_matches_torch():
    """The same gradients (some with inf/NaN) give the same scales, steps and growth tracker."""
    grads = [1.0, float("inf"), 2.0, 3.0, float("nan"), 1.0, 1.0, 1.0, 1.0]
    runs = {}
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.SGD([p], lr=0.1)
        sc = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=3)
        seen = []
        for g in grads:
            opt.zero_grad()
            sc.scale((p * g).sum()).backward()
            sc.step(opt)
            sc.update()
            seen.append((sc.get_scale(), sc._get_growth_tracker(), p.detach().numpy().copy().tolist()))
        runs[lib.__name__] = (seen, sc.state_dict())
    assert runs["ember"] == runs["torch"]
