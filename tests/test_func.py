"""ember.func: vmap (batching rules vs a python loop, nesting, in_dims/out_dims, randomness,
chunks, fallbacks), grad/vjp/jvp/jacrev/jacfwd/hessian against closed forms, per-sample
gradients, functional_call and stack_module_state."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import func as FT
from ember.func import functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

F64 = ember.float64


def r(*shape, seed=0, device="cpu"):
    g = ember.Generator().manual_seed(seed)
    return ember.randn(*shape, generator=g, dtype=F64).to(device)


def close(a, b, tol=1e-9):
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    assert ember.allclose(a.cpu().double(), b.cpu().double(), atol=tol, rtol=tol)


X = r(3, 4, 5)
Y = r(3, 5, seed=1)
W = r(6, 5, seed=2)


def _set(a):
    b = a.clone()
    b[0] = 0
    b[1, 1:3] = Y[0, :2]
    return b


CASES = {
    "sin": lambda a: ember.sin(a), "add_broadcast": lambda a: a + Y[0], "scalar_ops": lambda a: 1 - a * 2 / 3,
    "rdiv": lambda a: 2 / (a.abs() + 1), "pow": lambda a: a ** 2, "where": lambda a: ember.where(a > 0, a, -a),
    "clamp": lambda a: a.clamp(-0.5, 0.5), "sum_dim": lambda a: a.sum(1), "sum_all": lambda a: a.sum(),
    "mean_keepdim": lambda a: a.mean(-1, keepdim=True), "mean_dims": lambda a: a.mean((0, 1)),
    "amax": lambda a: a.amax(0), "max_dim": lambda a: a.max(1).values, "max_all": lambda a: a.max(),
    "argmax": lambda a: a.argmax(), "argmax_dim": lambda a: a.argmax(1), "std": lambda a: a.std(0),
    "var_all": lambda a: a.var(), "logsumexp": lambda a: ember.logsumexp(a, 1), "prod": lambda a: a.prod(),
    "cumsum": lambda a: a.cumsum(1), "softmax": lambda a: a.softmax(-1), "log_softmax": lambda a: F.log_softmax(a, 0),
    "t": lambda a: a.t(), "transpose": lambda a: a.transpose(0, 1), "permute": lambda a: a.permute(1, 0),
    "view": lambda a: a.view(20), "reshape": lambda a: a.reshape(2, -1), "flatten": lambda a: a.flatten(),
    "unsqueeze": lambda a: a.unsqueeze(0), "unsqueeze_neg": lambda a: a.unsqueeze(-1),
    "squeeze": lambda a: a.unsqueeze(1).squeeze(), "expand": lambda a: a[:1].expand(3, 4, 5),
    "slices": lambda a: a[1:3, ::2], "int_index": lambda a: a[1], "none_ellipsis": lambda a: a[None, ..., 0],
    "tensor_index": lambda a: a[ember.tensor([0, 2])], "select": lambda a: a.select(1, 2),
    "narrow": lambda a: a.narrow(1, 1, 2), "cat": lambda a: ember.cat([a, a * 2], 1),
    "cat_unbatched": lambda a: ember.cat([a, X[0]], 0), "stack": lambda a: ember.stack([a, X[1]]),
    "split": lambda a: a.split(2, 1)[1], "chunk": lambda a: a.chunk(2)[0], "unbind": lambda a: a.unbind(1)[2],
    "movedim": lambda a: a.movedim(0, 1), "matmul_vec": lambda a: a @ Y[0], "matmul_mat": lambda a: a @ W.t(),
    "matmul_left": lambda a: W @ a.t(), "mm": lambda a: ember.mm(a, W.t()), "mv": lambda a: ember.mv(a, Y[1]),
    "dot": lambda a: ember.dot(a[0], Y[1]), "outer": lambda a: ember.outer(a[0], a[1]),
    "bmm": lambda a: ember.bmm(a.unsqueeze(0), a.t().unsqueeze(0)), "linear": lambda a: F.linear(a, W),
    "linear_bias": lambda a: F.linear(a, W, W[:, 0]), "relu": F.relu, "gelu": F.gelu,
    "layer_norm": lambda a: F.layer_norm(a, (5,)), "flip": lambda a: a.flip(0), "roll": lambda a: a.roll(1, 1),
    "sort": lambda a: a.sort(1).values, "topk": lambda a: a.topk(2).values,
    "gather": lambda a: a.gather(1, ember.tensor([[0, 1]] * 4)),
    "index_select": lambda a: a.index_select(1, ember.tensor([0, 3])),
    "masked_fill": lambda a: a.masked_fill(a > 0, 0.0), "tril": lambda a: a.tril(), "norm": lambda a: a.norm(),
    "clone": lambda a: a.clone(), "contiguous": lambda a: a.t().contiguous(), "to": lambda a: a.float().double(),
    "neg_abs": lambda a: -abs(a), "compare": lambda a: (a > 0.1).float(), "mse_loss": lambda a: F.mse_loss(a, X[0]),
    "cross_entropy": lambda a: F.cross_entropy(a, ember.tensor([0, 1, 2, 3])),
    "cross_entropy_probs": lambda a: F.cross_entropy(a, a.softmax(-1).detach()),
    "inplace": lambda a: a.clone().add_(1).mul_(2), "setitem": _set, "diagonal": lambda a: a.diagonal(),
    "einsum": lambda a: ember.einsum("ij,kj->ik", a, W), "sum_to_size": lambda a: a.sum_to_size(1, 5),
    "repeat": lambda a: a.repeat(2, 1), "minimum": lambda a: ember.minimum(a, X[0]), "all": lambda a: (a > -9).all(),
    "any_dim": lambda a: (a > 1).any(1), "max_pool": lambda a: F.max_pool1d(a, 2),
    "avg_pool": lambda a: F.avg_pool1d(a, 2),
    "pad": lambda a: F.pad(a, (1, 2)), "embedding": lambda a: F.embedding((a > 0).long(), W),
    "unfold": lambda a: a.unfold(1, 2, 1), "mode": lambda a: a.round().mode(1).values,
    "kron": lambda a: ember.kron(a, a),
    "trace": lambda a: ember.trace(a), "bce": lambda a: F.binary_cross_entropy(a.sigmoid(), (a > 0).double()),
    "bce_logits_sum": lambda a: F.binary_cross_entropy_with_logits(a, (a > 0).double(), reduction="sum"),
    "l1_none": lambda a: F.l1_loss(a, X[0], reduction="none"), "huber": lambda a: F.huber_loss(a, X[0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_a_loop(name):
    f = CASES[name]
    FT.vmap_fallbacks.clear()
    got = vmap(f)(X)
    close(got, ember.stack([f(X[i]) for i in range(X.shape[0])]))
    assert not FT.vmap_fallbacks, f"{name} ran as a loop: {dict(FT.vmap_fallbacks)}"


def test_vmap_fallback_loops_and_is_listed():
    FT.vmap_fallbacks.clear()
    s, v = r(2, 5).sort(-1).values, r(2, 3, seed=1)
    close(vmap(ember.searchsorted)(s, v), ember.stack([ember.searchsorted(s[i], v[i]) for i in range(2)]))
    assert FT.vmap_fallbacks == {"searchsorted": 1}  # no batching rule: a loop over the examples
    FT.set_vmap_fallback_warning_enabled(True)
    try:
        FT.vmap_fallbacks.clear()
        with pytest.warns(UserWarning, match="batching rule for searchsorted"):
            vmap(ember.searchsorted)(s, v)
    finally:
        FT.set_vmap_fallback_warning_enabled(False)


def test_vmap_batches_convolution(device):
    img = r(4, 2, 3, 8, 8, device=device)
    w = r(5, 3, 3, 3, seed=3, device=device)
    ws = r(4, 5, 3, 3, 3, seed=4, device=device)
    FT.vmap_fallbacks.clear()
    close(vmap(lambda a: F.conv2d(a, w, padding=1))(img),
          ember.stack([F.conv2d(img[i], w, padding=1) for i in range(4)]))
    close(vmap(lambda a, k: F.conv2d(a, k, stride=2))(img, ws),
          ember.stack([F.conv2d(img[i], ws[i], stride=2) for i in range(4)]))
    assert not FT.vmap_fallbacks


def test_vmap_in_dims_out_dims_and_structures():
    x = r(2, 3, 4)
    close(vmap(ember.sin, in_dims=1)(x), ember.sin(x).transpose(0, 1))
    close(vmap(ember.sin, out_dims=1)(x), ember.sin(x).transpose(0, 1))
    close(vmap(lambda a, b: a + b, in_dims=(0, None))(x, x[0]), x + x[0])
    d = vmap(lambda p: {"a": p["u"] * 2, "b": p["v"].sum()}, in_dims=({"u": 0, "v": 1},))(
        {"u": x, "v": x.transpose(0, 1)})
    close(d["a"], x * 2)
    close(d["b"], x.sum((1, 2)))
    a, b = vmap(lambda t: (t, ember.ones(2, dtype=F64)), out_dims=(0, None))(x)
    close(a, x)
    close(b, ember.ones(2, dtype=F64))
    # an unbatched output is broadcast along out_dims
    close(vmap(lambda t: ember.ones(2, dtype=F64))(x), ember.ones(2, 2, dtype=F64))
    close(vmap(lambda t, k: t * k, in_dims=(0, None))(x, 3), x * 3)


def test_nested_vmap():
    x = r(2, 3, 4)
    close(vmap(vmap(lambda a: a.sum() * a))(x), x * x.sum(-1, keepdim=True))
    close(vmap(vmap(ember.sin, in_dims=1))(x), ember.sin(x).transpose(1, 2))
    y = r(3, 4, seed=9)
    close(vmap(vmap(ember.dot, in_dims=(None, 0)), in_dims=(0, None))(x[0], y), x[0] @ y.t())


def test_vmap_chunk_size():
    x = r(5, 3)
    close(vmap(lambda a: a.softmax(-1), chunk_size=2)(x), x.softmax(-1))
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        vmap(ember.sin, chunk_size=0)


def test_vmap_errors():
    x = r(3, 4)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        vmap(ember.sin, in_dims=[0])(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        vmap(ember.add, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match=r"same size in the mapped dimension, got sizes \[3, 2\]"):
        vmap(ember.add)(x, r(2, 4))
    with pytest.raises(ValueError, match="Got in_dim=5 for some input, but that input is a Tensor of dimensionality 2"):
        vmap(ember.sin, in_dims=5)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, n: a * n, in_dims=(0, 0))(x, 3)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(ember.sin, randomness="x")
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>"):
        vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(ember.sin, out_dims=None)(x)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(ember.sin)()
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda a: a.sum().item())(x)


def test_vmap_randomness():
    x = ember.ones(3, 50, dtype=F64)
    fns = [lambda a: ember.rand_like(a), lambda a: F.dropout(a, 0.5), lambda a: a.clone().uniform_(),
           lambda a: ember.randn(50), lambda a: ember.bernoulli(a * 0.5)]
    for f in fns:
        with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
            vmap(f)(x)
        d = vmap(f, randomness="different")(x)
        s = vmap(f, randomness="same")(x)
        assert d.shape == s.shape == (3, 50)
        assert (d[0] != d[1]).any() and (s[0] == s[1]).all() and (s[0] == s[2]).all()
    # dropout outside training draws nothing
    close(vmap(lambda a: F.dropout(a, 0.5, training=False))(x), x)


# -- autodiff transforms -------------------------------------------------------------------

def test_grad_and_value_argnums_has_aux():
    x, y = r(3), r(3, seed=1)
    close(grad(lambda a: (a ** 3).sum())(x), 3 * x ** 2)
    gx, gy = grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, y)
    close(gx, y)
    close(gy, x)
    g, aux = grad(lambda a: ((a ** 2).sum(), a.mean()), has_aux=True)(x)
    close(g, 2 * x)
    close(aux, x.mean())
    g, (v, aux) = grad_and_value(lambda a: ((a ** 2).sum(), 7), has_aux=True)(x)
    close(v, (x ** 2).sum())
    assert aux == 7 and not v.requires_grad and not g.requires_grad
    gd = grad(lambda p: (p["w"] * 2).sum())({"w": x})
    close(gd["w"], ember.full((3,), 2.0, dtype=F64))


def test_grad_errors():
    x = r(3)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"):
        grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        grad(lambda a: a.sum(), argnums=())(x)
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type"):
        grad(lambda a: ember.tensor(1.0))(3)


def test_higher_order_and_outer_graphs():
    t = ember.tensor(2.0, dtype=F64)
    close(grad(grad(lambda v: v ** 4))(t), ember.tensor(48.0, dtype=F64))
    close(grad(grad(grad(lambda v: v ** 4)))(t), ember.tensor(48.0, dtype=F64))
    # the result stays differentiable by ordinary autograd when the input requires grad
    x = r(3).requires_grad_()
    g = grad(lambda a: (a ** 3).sum())(x)
    assert g.requires_grad
    g.sum().backward()
    close(x.grad, 6 * x.detach())


def test_vjp_and_jvp():
    x, v = r(4), r(4, seed=3)
    out, fn = vjp(lambda a: a.sin() * 2, x)
    close(out, x.sin() * 2)
    close(fn(v)[0], 2 * x.cos() * v)
    close(fn(v)[0], 2 * x.cos() * v)  # vjp_fn can be called again
    out, tan = jvp(lambda a: a.sin() * 2, (x,), (v,))
    close(tan, 2 * x.cos() * v)
    out, tan = jvp(lambda a, b: a * b, (x, v), (ember.ones_like(x), ember.zeros_like(v)))
    close(tan, v)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(ember.sin, x, (v,))


def test_jacobians_and_hessian_closed_forms(device):
    x = r(4, device=device)
    A = r(4, 4, seed=2, device=device)
    f = lambda v: ember.sin(v) * v.sum()  # noqa: E731
    expected = ember.diag(ember.cos(x) * x.sum()) + ember.sin(x).unsqueeze(1)
    close(jacrev(f)(x), expected)
    close(jacfwd(f)(x), expected)
    close(hessian(lambda v: v @ A @ v)(x), A + A.t())
    ja, jb = jacrev(lambda a, b: a * b, argnums=(0, 1))(x, A[0])
    close(ja, ember.diag(A[0]))
    close(jb, ember.diag(x))
    assert jacrev(lambda m: m.sum(0))(A).shape == (4, 4, 4)
    assert jacfwd(lambda m: m.sum(0))(A).shape == (4, 4, 4)


def test_compositions_with_vmap():
    x = r(5, 3)
    f = lambda v: ember.sin(v) * v.sum()  # noqa: E731
    close(vmap(jacrev(f))(x), ember.stack([jacrev(f)(x[i]) for i in range(5)]))
    close(vmap(jacfwd(f))(x), ember.stack([jacrev(f)(x[i]) for i in range(5)]))
    A = r(3, 3, seed=4)
    close(vmap(hessian(lambda v: v @ A @ v + (v ** 3).sum()))(x),
          ember.stack([A + A.t() + ember.diag(6 * x[i]) for i in range(5)]))
    close(vmap(lambda p, t: jvp(ember.sin, (p,), (t,))[1])(x, ember.ones_like(x)), ember.cos(x))
    close(vmap(lambda p: vjp(ember.sin, p)[1](ember.ones_like(p))[0])(x), ember.cos(x))
    close(grad(lambda a: vmap(lambda row: row.norm())(a).sum())(x), x / x.norm(dim=-1, keepdim=True))


def test_per_sample_gradients_match_a_loop(device):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(5, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3),
                                ember.nn.LayerNorm(3)).double().to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, t = r(6, 5, device=device), ember.tensor([0, 1, 2, 0, 1, 2], device=device)

    def loss(p, xi, ti):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), ti.unsqueeze(0))
    FT.vmap_fallbacks.clear()
    g = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, t)
    assert not FT.vmap_fallbacks
    for i in range(6):
        gi = grad(loss)(params, x[i], t[i])
        for k in gi:
            close(g[k][i], gi[k])


def test_functional_call_and_stack_module_state():
    lin = ember.nn.Linear(3, 2).double()
    x = r(4, 3)
    w, b = r(2, 3, seed=5), r(2, seed=6)
    close(functional_call(lin, {"weight": w, "bias": b}, (x,)), x @ w.t() + b)
    close(functional_call(lin, ({"weight": w}, {"bias": b}), x), x @ w.t() + b)
    close(lin(x), x @ lin.weight.detach().t() + lin.bias.detach())  # restored
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(lin, ({"weight": w}, {"weight": w}), (x,))
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        functional_call(lin, {"weight": w}, (x,), strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
        functional_call(lin, {"weight": w, "bias": b, "nope": b}, (x,), strict=True)

    class Tied(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Linear(2, 2, bias=False)
            self.b = ember.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, v):
            return self.b(self.a(v))
    m = Tied().double()
    e = ember.eye(2, dtype=F64) * 2
    v = r(1, 2)
    close(functional_call(m, {"a.weight": e}, (v,)), v * 4)
    close(functional_call(m, {"a.weight": e}, (v,), tie_weights=False),
          (v * 2) @ m.b.weight.detach().t())
    models = [ember.nn.Linear(3, 2).double() for _ in range(4)]
    params, buffers = FT.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad and buffers == {}
    out = vmap(lambda p, xx: functional_call(models[0], p, (xx,)), in_dims=(0, None))(params, x)
    close(out, ember.stack([m(x).detach() for m in models]))


class _Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g


def test_custom_function_runs_per_example_under_vmap():
    x = r(3, 4)
    FT.vmap_fallbacks.clear()
    close(vmap(_Square.apply)(x), x * x)
    assert FT.vmap_fallbacks["autograd.Function"] == 1
    close(vmap(grad(lambda a: _Square.apply(a).sum()))(x), 2 * x)


def test_unsupported_compositions_raise_clearly():
    x = r(3, 4)

    def inner_autograd(a):
        a = a.detach().requires_grad_()
        return ember.autograd.grad(a.sin().sum(), a)[0]
    with pytest.raises(RuntimeError, match="can't see through a batched tensor inside vmap; use ember.func.grad"):
        vmap(inner_autograd)(x)
    with pytest.raises(RuntimeError, match="backward\\(\\) on a batched tensor is not supported inside vmap"):
        vmap(lambda a: a.sum().backward())(x)
    with pytest.raises(RuntimeError, match="is not possible because there exists a Tensor `other`"):
        vmap(lambda a: ember.zeros(4, dtype=F64).add_(a))(x)


def test_linearize_gives_the_output_and_a_jvp_function():
    x = ember.tensor([0.1, 0.5, 2.0], dtype=ember.float64)
    out, jvp_fn = ember.func.linearize(ember.sin, x)
    assert np.allclose(out.numpy(), np.sin(x.numpy()))
    t = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64)
    assert np.allclose(jvp_fn(t).numpy(), np.cos(x.numpy()) * t.numpy())
    with pytest.raises(RuntimeError, match="tangents"):
        jvp_fn(t, t)


def test_functionalize_runs_the_function_eagerly_and_checks_remove():
    f = ember.func.functionalize(lambda x: x.add_(1))
    x = ember.zeros(2)
    assert f(x).tolist() == [1.0, 1.0] and x.tolist() == [1.0, 1.0]  # PyTorch copies the mutation back too
    with pytest.raises(RuntimeError, match="remove=bad"):
        ember.func.functionalize(lambda x: x, remove="bad")


def test_replace_all_batch_norm_modules_stops_tracking_running_stats():
    m = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3))
    assert ember.func.replace_all_batch_norm_modules_(m) is m
    bn = m[1]
    assert bn.running_mean is None and bn.running_var is None and bn.num_batches_tracked is None
    assert not bn.track_running_stats
    m.eval()
    y = m(ember.randn(4, 2))  # eval mode now normalises with the batch's statistics
    assert np.allclose(y.detach().numpy().mean(0), 0.0, atol=1e-5)


def test_debug_unwrap_returns_the_whole_batch_inside_vmap():
    seen = []

    def f(x):
        seen.append(ember.func.debug_unwrap(x).shape)
        return x * 2

    ember.func.vmap(f)(ember.ones(5, 3))
    assert seen == [(5, 3)]
    t = ember.ones(2)
    assert ember.func.debug_unwrap(t) is t
