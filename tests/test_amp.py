"""Mixed precision: ``ember.autocast`` (PyTorch's cpu and cuda op lists, nesting, decorator,
per-thread state, the weight cast cache, custom_fwd/custom_bwd) and ``ember.amp.GradScaler``
(scaling, unscaling, skipped steps, the scale's growth and backoff, the per-optimizer state
machine, state dicts), with PyTorch's expected values written out (the side-by-side comparison
with torch is tests/torch_oracle/test_amp_oracle.py)."""
import pickle
import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ops import autocast as AC


def _w(*shape, requires_grad=True):
    return ember.randn(*shape, requires_grad=requires_grad)


# -- the state ------------------------------------------------------------------------------------------

def _installed(device_type: str) -> bool:
    try:
        ember.empty(0, device=device_type)
    except RuntimeError:
        return False
    return True


def test_state_defaults_and_context_manager():
    assert ember.is_autocast_enabled("cpu") is False
    assert ember.get_autocast_dtype("cpu") is ember.bfloat16
    assert ember.get_autocast_dtype("cuda") is ember.float16
    if _installed("opencl"):  # (the cpu_numpy env has no opencl backend, and then no such device type)
        assert ember.get_autocast_dtype("opencl") is ember.float16
    assert ember.is_autocast_cache_enabled() is True
    with ember.autocast("cpu") as ac:
        assert isinstance(ac, ember.autocast)
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("cuda")
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(_w(2, 2), _w(2, 2)).dtype is ember.float32
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") is ember.float16
            assert ember.mm(_w(2, 2), _w(2, 2)).dtype is ember.float16
        assert ember.get_autocast_dtype("cpu") is ember.bfloat16
        assert ember.mm(_w(2, 2), _w(2, 2)).dtype is ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(_w(2, 2), _w(2, 2)).dtype is ember.float32


def test_state_restored_after_an_exception_and_as_decorator():
    with pytest.raises(ValueError):
        with ember.autocast("cpu"):
            raise ValueError("x")
    assert not ember.is_autocast_enabled("cpu")

    @ember.autocast("cpu")
    def f(a, b):
        return ember.is_autocast_enabled("cpu"), a @ b

    on, r = f(_w(3, 3), _w(3, 3))
    assert on and r.dtype is ember.bfloat16 and not ember.is_autocast_enabled("cpu")
    assert f.__name__ == "f"
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)


def test_setters_and_nesting_counter():
    ember.set_autocast_enabled("cpu", True)
    try:
        assert ember.mm(_w(2, 2), _w(2, 2)).dtype is ember.bfloat16
    finally:
        ember.set_autocast_enabled("cpu", False)
    assert len(AC._ac.cache) == 2  # both weights' casts, kept until cleared (no region exit here)
    ember.clear_autocast_cache()
    assert len(AC._ac.cache) == 0
    ember.set_autocast_dtype("cpu", ember.float16)
    try:
        assert ember.get_autocast_dtype("cpu") is ember.float16
    finally:
        ember.set_autocast_dtype("cpu", ember.bfloat16)
    assert ember.autocast_increment_nesting() == 1
    assert ember.autocast_decrement_nesting() == 0
    with pytest.raises(TypeError):
        ember.set_autocast_enabled("cpu", "yes")
    with pytest.raises(RuntimeError, match="device type"):
        ember.get_autocast_dtype("nope")
    with pytest.warns(DeprecationWarning, match="is_autocast_enabled"):
        assert ember.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_cpu_dtype() is ember.bfloat16


def test_bad_arguments():
    with pytest.raises(ValueError, match="device_type"):
        ember.autocast(ember.device("cpu"))
    with pytest.raises(RuntimeError, match="device type at start of device string: nope"):
        ember.autocast("nope")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'nope'"):
        ember.autocast("nope", dtype=ember.bfloat16)
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        ac = ember.autocast("cpu", dtype=ember.float32)
    with ac:
        assert not ember.is_autocast_enabled("cpu")
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            with ember.autocast("cuda"):
                assert not ember.is_autocast_enabled("cuda")


def test_state_is_per_thread():
    seen = []

    def worker():
        seen.append((ember.is_autocast_enabled("cpu"), ember.get_autocast_dtype("cpu"),
                     ember.mm(_w(2, 2), _w(2, 2)).dtype))
        with ember.autocast("cpu", dtype=ember.float16):
            seen.append(ember.mm(_w(2, 2), _w(2, 2)).dtype)

    with ember.autocast("cpu", dtype=ember.float16):
        ember.set_autocast_cache_enabled(False)
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_cache_enabled()
    assert ember.is_autocast_cache_enabled()  # restored by the region's exit
    assert seen == [(False, ember.bfloat16, ember.float32), ember.float16]


# -- the op lists --------------------------------------------------------------------------------------

def test_cpu_lists():
    a, b = _w(4, 4), _w(4, 4)
    lo = a.bfloat16()
    with ember.autocast("cpu"):
        for r in (a @ b, ember.mm(a, b), ember.matmul(a, b), a.mm(b), F.linear(lo, b, _w(4)),
                  ember.addmm(a, lo, b), ember.bmm(a[None], b[None]),
                  F.conv2d(ember.randn(1, 2, 4, 4), lo.reshape(4, 2, 1, 2))):
            assert r.dtype is ember.bfloat16
        # the fp32 list on cpu: losses, prod, trace
        for r in (F.mse_loss(lo, lo), F.cross_entropy(lo, ember.tensor([0, 1, 2, 3])), ember.prod(lo), ember.trace(lo),
                  F.binary_cross_entropy(ember.sigmoid(lo), ember.sigmoid(lo))):
            assert r.dtype is ember.float32
        # promote: the widest of bfloat16 and the inputs
        assert ember.cat([lo, a]).dtype is ember.float32
        assert ember.cat([lo, lo]).dtype is ember.bfloat16
        assert ember.stack([lo, a.half()]).dtype is ember.float32
        # not listed on cpu: dtypes as without autocast
        assert ember.softmax(lo, 0).dtype is ember.bfloat16
        assert ember.exp(lo).dtype is ember.bfloat16
        assert (lo + a).dtype is ember.float32
        assert (a + b).dtype is ember.float32


def test_what_is_not_eligible():
    a, b = _w(3, 3), _w(3, 3)
    with ember.autocast("cpu"):
        assert ember.mm(a.double(), b.double()).dtype is ember.float64  # float64 is never cast
        assert ember.mm(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, 2, dtype=ember.int64)).dtype is ember.int64
        out = ember.empty(3, 3)
        ember.mm(a.detach(), b.detach(), out=out)  # out= calls run as written
        assert out.dtype is ember.float32
        c = a.detach().clone()
        c.addmm_(a.detach(), b.detach())  # in-place forms too
        assert c.dtype is ember.float32
        with pytest.raises(RuntimeError):
            ember.mm(a.double(), b)  # float64 stays: the dtype mismatch is reported as without autocast


def test_cuda_lists_serve_other_devices():
    # the cuda policies (used by cuda, opencl and plugin devices), read from the tables
    cuda = AC.POLICIES["default"]
    assert cuda["mm"] == "lower" and cuda["linear"] == "lower" and cuda["convolution"] == "lower"
    assert cuda["exp"] == cuda["layer_norm"] == cuda["mse_loss"] == cuda["pow"] == "fp32"
    assert cuda["softmax"] == cuda["sum"] == cuda["log_softmax"] == cuda["cumsum"] == "fp32_dtype"
    assert cuda["addcdiv"] == cuda["index_put"] == cuda["scatter_add"] == "promote"
    assert cuda["binary_cross_entropy"] == "banned"
    assert "cat" not in cuda and "softmax" not in AC.POLICIES["cpu"] and AC.POLICIES["cpu"]["cat"] == "promote"


def test_cuda_policies_on_a_device(monkeypatch):
    """The cuda lists applied to cpu tensors (the tables are per device type; this borrows cpu's
    slot to run them without a GPU)."""
    monkeypatch.setitem(AC.POLICIES, "cpu", AC.POLICIES["default"])
    lo = ember.randn(4, 4).half()
    with ember.autocast("cpu", dtype=ember.float16):
        assert ember.softmax(lo, 0).dtype is ember.float32
        assert ember.softmax(lo, 0, dtype=ember.float16).dtype is ember.float16  # an explicit dtype= is kept
        assert lo.sum().dtype is ember.float32
        assert ember.exp(lo).dtype is ember.float32
        assert (lo ** 2).dtype is ember.float32
        assert F.layer_norm(lo, (4,)).dtype is ember.float32
        assert ember.addcmul(lo, lo, ember.randn(4, 4)).dtype is ember.float32
        assert ember.mm(ember.randn(4, 4), ember.randn(4, 4)).dtype is ember.float16
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(ember.sigmoid(lo), ember.sigmoid(lo))


def test_gradients_flow_back_in_the_parameters_dtype():
    w, b = _w(4, 4), _w(4)
    x = ember.randn(8, 4)
    with ember.autocast("cpu"):
        h = F.linear(x, w, b)
        loss = F.mse_loss(h, ember.zeros(8, 4))
    assert h.dtype is ember.bfloat16 and loss.dtype is ember.float32
    loss.backward()
    assert w.grad.dtype is ember.float32 and b.grad.dtype is ember.float32
    expected = (2 / 32) * (h.float().detach().T @ x).T.T  # d mean((xW^T+b)^2) / dW = 2/N h^T x
    np.testing.assert_allclose(w.grad.numpy(), expected.numpy(), rtol=5e-2, atol=5e-2)


def test_weight_cast_cache():
    w = _w(4, 4)
    x = ember.randn(2, 4)
    with ember.autocast("cpu"):
        r1, r2 = ember.mm(x, w), ember.mm(x, w)
        # one cast of w serves both: the two products share its graph node
        assert r1.grad_fn.next_functions[1][0] is r2.grad_fn.next_functions[1][0]
        assert len(AC._ac.cache) == 1
        with ember.autocast("cpu"):
            ember.mm(x, w)
        assert len(AC._ac.cache) == 1  # an inner region's exit keeps the outer region's cache
    assert len(AC._ac.cache) == 0  # the outermost exit drops it
    with ember.autocast("cpu", cache_enabled=False):
        r1, r2 = ember.mm(x, w), ember.mm(x, w)
        assert r1.grad_fn.next_functions[1][0] is not r2.grad_fn.next_functions[1][0]
    (r1.float().sum() + r2.float().sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.broadcast_to(x.sum(0).numpy()[:, None], (4, 4)), atol=0.05)


def test_no_grad_casts_are_not_cached():
    w = _w(3, 3)
    with ember.autocast("cpu"):
        with ember.no_grad():
            ember.mm(ember.randn(2, 3), w)
        r = ember.mm(ember.randn(2, 3), w)
    assert r.requires_grad  # a cast made without grad would have cut the weight out of the graph
    r.float().sum().backward()
    assert w.grad is not None


def test_decompositions_run_without_autocast(monkeypatch):
    """An op without a kernel runs its decomposition below autocast, as PyTorch's kernels do."""
    seen = []
    op = ember.ops.OPS["hypot"]
    orig = op.decomposition

    def spy(*args):
        seen.append(ember.ops.autocast._ac.active)
        return orig(*args)
    monkeypatch.setattr(op, "decomposition", spy)
    dev = ember.tensor(1.0)._device
    monkeypatch.delitem(dev._kernels, "hypot", raising=False)
    with ember.autocast("cpu"):
        assert ember.hypot(ember.tensor([3.0]), ember.tensor([4.0])).item() == 5.0
        assert ember.is_autocast_enabled("cpu") and ember.ops.autocast._ac.active
    assert seen == [False]


# -- custom_fwd / custom_bwd -----------------------------------------------------------------------------

class _MyMM(ember.autograd.Function):
    @staticmethod
    @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.seen = (a.dtype, b.dtype, ember.is_autocast_enabled("cpu"))
        return a.mm(b)

    @staticmethod
    @ember.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ctx.bw_enabled = ember.is_autocast_enabled("cpu")
        return g.mm(b.t()), a.t().mm(g)


class _Plain(ember.autograd.Function):
    @staticmethod
    @ember.amp.custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        ctx.fwd_enabled = ember.is_autocast_enabled("cpu")
        return a.mm(b)

    @staticmethod
    @ember.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        ctx.bw_enabled = ember.is_autocast_enabled("cpu")
        return g, g


def test_custom_fwd_casts_inputs_and_disables_autocast():
    a, b = _w(3, 3), _w(3, 3)
    with ember.autocast("cpu"):
        out = _MyMM.apply(a.bfloat16(), b)
    assert out.dtype is ember.float32
    ctx = out.grad_fn
    assert ctx.seen == (ember.float32, ember.float32, False)
    out.sum().backward()
    assert ctx.bw_enabled is False and a.grad.dtype is ember.float32 and b.grad.dtype is ember.float32
    out = _MyMM.apply(a, b)  # outside autocast: a no-op
    assert out.grad_fn.seen == (ember.float32, ember.float32, False)


def test_custom_bwd_runs_with_the_forward_state():
    a, b = _w(2, 2), _w(2, 2)
    with ember.autocast("cpu"):
        out = _Plain.apply(a, b)
    assert out.dtype is ember.bfloat16 and out.grad_fn.fwd_enabled
    out.float().sum().backward()
    assert out.grad_fn.bw_enabled is True
    with pytest.raises(ValueError, match="device_type"):
        ember.amp.custom_fwd(device_type=ember.device("cpu"))


def test_deprecated_spellings_warn():
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ac = ember.cpu.amp.autocast()
    with ac:
        assert ember.is_autocast_enabled("cpu") and ember.get_autocast_dtype("cpu") is ember.bfloat16
    with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
        ember.cuda.amp.autocast(enabled=False)
    with pytest.warns(FutureWarning, match="torch.cpu.amp.GradScaler"):
        sc = ember.cpu.amp.GradScaler(init_scale=4.0)
    assert isinstance(sc, ember.amp.GradScaler) and sc.get_scale() == 4.0
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_fwd"):
        ember.cuda.amp.custom_fwd(lambda ctx, x: x)
    with pytest.warns(FutureWarning, match="torch.cuda.amp.custom_bwd"):
        ember.cuda.amp.custom_bwd(lambda ctx, g: g)
    from ember.cuda.amp import GradScaler, autocast  # noqa: F401  (the import spelling scripts use)
    assert ember.cpu.is_available() and ember.cpu.device_count() == 1


# -- GradScaler ---------------------------------------------------------------------------------------

class _Counting(ember.optim.SGD):
    def __init__(self, params, **kw):
        super().__init__(params, **kw)
        self.steps = 0

    def step(self, closure=None):
        self.steps += 1
        return super().step(closure)


def _setup(scale=8.0, **kw):
    p = nn.Parameter(ember.ones(3))
    opt = _Counting([p], lr=0.1)
    return p, opt, ember.amp.GradScaler("cpu", init_scale=scale, **kw)


def test_scale_unscale_step_update():
    p, opt, sc = _setup()
    loss = (p * 2).sum()
    scaled = sc.scale(loss)
    assert scaled.item() == 48.0
    scaled.backward()
    assert p.grad.tolist() == [16.0] * 3
    sc.unscale_(opt)
    assert p.grad.tolist() == [2.0] * 3
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)"):
        sc.unscale_(opt)
    sc.step(opt)  # does not unscale again
    assert opt.steps == 1
    np.testing.assert_allclose(p.detach().numpy(), [0.8] * 3, rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)"):
        sc.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        sc.unscale_(opt)
    sc.update()
    assert sc.get_scale() == 8.0 and sc._get_growth_tracker() == 1
    assert sc.scale([loss, (loss, loss)])[1][0].item() == 48.0


def test_non_finite_gradients_skip_the_step_and_back_off():
    p, opt, sc = _setup(backoff_factor=0.25)
    for bad in (float("inf"), float("nan")):
        opt.zero_grad()
        sc.scale((p * bad).sum()).backward()
        assert sc.step(opt) is None
        assert opt.steps == 0 and p.tolist() == [1.0] * 3
        sc.update()
    assert sc.get_scale() == 8.0 * 0.25 * 0.25


def test_growth_after_growth_interval_steps():
    p, opt, sc = _setup(growth_interval=2, growth_factor=4.0)
    for i in range(5):
        opt.zero_grad()
        sc.scale(p.sum()).backward()
        sc.step(opt)
        sc.update()
    assert sc.get_scale() == 8.0 * 16 and sc._get_growth_tracker() == 1 and opt.steps == 5
    sc.update(2.0)
    assert sc.get_scale() == 2.0
    sc.update(ember.tensor([3.0]))
    assert sc.get_scale() == 3.0
    with pytest.raises(AssertionError, match="new_scale"):
        sc.update(ember.tensor([3.0], requires_grad=True))


def test_state_dict_round_trip_and_pickle():
    p, opt, sc = _setup(growth_interval=7)
    sc.scale(p.sum()).backward()
    sc.step(opt)
    sc.update()
    sd = sc.state_dict()
    assert sd == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 7,
                  "_growth_tracker": 1}
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    clone = pickle.loads(pickle.dumps(sc))
    assert clone.state_dict() == sd
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict({})
    assert other.get_growth_factor() == 2.0 and other.get_backoff_factor() == 0.5 and other.get_growth_interval() == 7
    other.set_growth_factor(3.0)
    other.set_backoff_factor(0.1)
    other.set_growth_interval(9)
    assert (other.get_growth_factor(), other.get_backoff_factor(), other.get_growth_interval()) == (3.0, 0.1, 9)


def test_disabled_is_a_pass_through():
    p = nn.Parameter(ember.ones(2))
    opt = _Counting([p], lr=0.1)
    sc = ember.amp.GradScaler("cpu", enabled=False)
    loss = p.sum()
    assert sc.scale(loss) is loss and not sc.is_enabled()
    loss.backward()
    sc.unscale_(opt)
    sc.step(opt)
    sc.update()
    assert opt.steps == 1 and sc.get_scale() == 1.0 and sc.state_dict() == {}
    if not ember.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not ember.amp.GradScaler().is_enabled()


def test_errors():
    p, opt, sc = _setup()
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        sc.step(opt)
    with pytest.raises(AssertionError, match="growth factor"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="backoff factor"):
        ember.amp.GradScaler("cpu", backoff_factor=1.0)
    sc.scale(p.sum()).backward()
    with pytest.raises(RuntimeError, match="Closure"):
        sc.step(opt, closure=lambda: None)
    h = nn.Parameter(ember.ones(2).half())
    opt16 = _Counting([h], lr=0.1)
    sc.scale(h.sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        sc.unscale_(opt16)


OPTIMIZERS = [
    (ember.optim.SGD, dict(lr=0.1, momentum=0.9)), (ember.optim.SGD, dict(lr=0.1, foreach=True)),
    (ember.optim.Adam, dict(lr=0.05)), (ember.optim.Adam, dict(lr=0.05, fused=True)),
    (ember.optim.AdamW, dict(lr=0.05, foreach=True)), (ember.optim.Adagrad, dict(lr=0.1)),
    (ember.optim.Adamax, dict(lr=0.05)), (ember.optim.Adadelta, dict(lr=1.0)), (ember.optim.ASGD, dict(lr=0.1)),
    (ember.optim.NAdam, dict(lr=0.05)), (ember.optim.RAdam, dict(lr=0.05)), (ember.optim.RMSprop, dict(lr=0.01)),
    (ember.optim.Rprop, dict(lr=0.01)),
]


@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_every_optimizer_matches_the_unscaled_step(cls, kw):
    """A scaled step (with clipping between unscale_ and step) moves the parameters as the plain
    step on the true gradients does, and an inf step leaves them alone."""
    ember.manual_seed(0)
    x = ember.randn(16, 4)
    runs = []
    for scaled in (False, True):
        p = nn.Parameter(ember.tensor([[0.5, -1.0, 2.0, 0.1]]))
        opt = cls([p], **kw)
        sc = ember.amp.GradScaler("cpu", init_scale=1024.0)
        for i in range(3):
            opt.zero_grad()
            loss = ((x * p).sum(1) ** 2).mean()
            if scaled:
                sc.scale(loss).backward()
                sc.unscale_(opt)
                nn.utils.clip_grad_norm_([p], 5.0)
                sc.step(opt)
                sc.update()
            else:
                loss.backward()
                nn.utils.clip_grad_norm_([p], 5.0)
                opt.step()
        if scaled:
            before = p.detach().clone()
            opt.zero_grad()
            sc.scale((p * float("inf")).sum()).backward()
            sc.step(opt)
            sc.update()
            assert ember.equal(p.detach(), before) and sc.get_scale() == 512.0
        runs.append(p.detach().numpy())
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5, atol=1e-6)


def test_training_loop_under_autocast_and_grad_scaler():
    """A small GPT-like block (embedding, causal self-attention, MLP, layer norms) trained under
    autocast(bfloat16) with a GradScaler: the loss falls, the weights and their gradients stay
    float32."""
    ember.manual_seed(0)
    V, D, T = 12, 16, 8

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, D)
            self.pos = nn.Parameter(ember.randn(T, D) * 0.1)
            self.ln1 = nn.LayerNorm(D)
            self.attn = nn.MultiheadAttention(D, 2, batch_first=True)
            self.ln2 = nn.LayerNorm(D)
            self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
            self.head = nn.Linear(D, V)

        def forward(self, idx):
            h = self.emb(idx) + self.pos
            a = self.ln1(h)
            mask = ember.triu(ember.ones(T, T, dtype=ember.bool), 1)
            h = h + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
            h = h + self.mlp(self.ln2(h))
            return self.head(h)

    model = Block()
    opt = ember.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = ember.amp.GradScaler("cpu")
    data = ember.randint(0, V, (32, T + 1))
    losses = []
    for step in range(40):
        opt.zero_grad()
        with ember.autocast("cpu"):
            logits = model(data[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, V), data[:, 1:].reshape(-1))
        assert logits.dtype is ember.bfloat16 and loss.dtype is ember.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype is ember.float32 and p.grad.dtype is ember.float32 for p in model.parameters())
    assert losses[-1] < 0.75 * losses[0], losses


def test_opencl_autocast():
    pytest.importorskip("pyopencl", reason="the opencl backend needs pyopencl")
    if not ember.backend.backend_for("opencl").availability()[0]:
        pytest.skip("pyopencl is installed but sees no OpenCL device")
    dev = "opencl"
    a = ember.randn(4, 4, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.autocast(dev):
            r = a @ a
            s = ember.exp(r)
    assert r.dtype is ember.float16 and s.dtype is ember.float32 and r.device.type == dev
