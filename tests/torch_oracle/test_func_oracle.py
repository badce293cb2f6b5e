"""ember.func and ember.autograd.functional against torch.func and torch.autograd.functional
(PyTorch 2.13): the same python functions, written against a module ``m`` (``torch`` or
``ember``), give the same values, shapes and result nesting, and bad calls the same exception
types and messages."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 4))
X = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)


def both(arr):
    return torch.tensor(arr), ember.tensor(arr)


def same(t, e, tol=1e-10):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(t) == len(e), (type(t), type(e))
        for a, b in zip(t, e):
            same(a, b, tol)
        return
    if isinstance(t, dict):
        assert isinstance(e, dict) and set(t) == set(e)
        for k in t:
            same(t[k], e[k], tol)
        return
    assert tuple(t.shape) == tuple(e.shape), (tuple(t.shape), tuple(e.shape))
    np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


FUNCS = {
    "sin_sum": lambda m: (lambda x: m.sin(x) * x.sum()),
    "quadratic": lambda m: (lambda x: x @ m.tensor(A) @ x),
    "cubic": lambda m: (lambda x: (x ** 3).sum() + x.prod()),
    "softmax_dot": lambda m: (lambda x: m.softmax(x, -1) @ m.tensor(V)),
    "two_outputs": lambda m: (lambda x: (x.exp(), x.sum())),
}
SCALAR = ["quadratic", "cubic", "softmax_dot"]


def run(fn):
    """``fn(m)`` for torch and ember: the results or the exceptions."""
    out = []
    for m in (torch, ember):
        try:
            out.append(("ok", fn(m)))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(("err", e))
    (kt, rt), (ke, re_) = out
    if kt == "err" or ke == "err":
        assert kt == ke == "err", f"torch: {rt!r}, ember: {re_!r}"
        assert type(rt).__name__ == type(re_).__name__, (rt, re_)
        return None
    return rt, re_


def values(fn):
    """``fn(m)``'s torch and ember results (both must succeed)."""
    r = run(fn)
    assert r is not None, "both raised"
    return r


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_func_jacobians(name, api):
    same(*values(lambda m: getattr(m.func, api)(FUNCS[name](m))(m.tensor(X[0]))))


@pytest.mark.parametrize("name", SCALAR)
def test_func_grad_hessian_and_vmapped(name):
    same(*values(lambda m: m.func.grad(FUNCS[name](m))(m.tensor(X[0]))))
    same(*values(lambda m: m.func.hessian(FUNCS[name](m))(m.tensor(X[0]))))
    same(*values(lambda m: m.func.vmap(m.func.grad(FUNCS[name](m)))(m.tensor(X))))
    same(*values(lambda m: m.func.vmap(m.func.hessian(FUNCS[name](m)))(m.tensor(X))))


def test_func_vjp_jvp():
    def vjp(m):
        out, fn = m.func.vjp(FUNCS["two_outputs"](m), m.tensor(X[0]))
        return out, fn((m.tensor(V), m.tensor(2.0, dtype=m.float64)))
    same(*values(vjp))
    same(*values(lambda m: m.func.jvp(FUNCS["sin_sum"](m), (m.tensor(X[0]),), (m.tensor(V),))))
    same(*values(lambda m: m.func.jacrev(lambda a, b: (a * b).sum(0), argnums=(0, 1))(m.tensor(X),
                                                                                  m.tensor(X[::-1].copy()))))


def test_vmap_in_out_dims_and_nesting():
    same(*values(lambda m: m.func.vmap(lambda a, b: a @ b, in_dims=(1, None), out_dims=1)(m.tensor(X),
                                                                                       m.tensor(A[:3]))))
    same(*values(lambda m: m.func.vmap(m.func.vmap(lambda a: a.softmax(0) * a.max()))(m.tensor(X.reshape(3, 2, 2)))))
    same(*values(lambda m: m.func.vmap(lambda d: {"s": d["a"].sum(), "t": d["b"].t()},
                                    in_dims=({"a": 0, "b": None},))({"a": m.tensor(X), "b": m.tensor(A)})))
    same(*values(lambda m: m.func.vmap(lambda a: a.cumsum(0), chunk_size=2)(m.tensor(X))))


def test_per_sample_grads_with_functional_call():
    tm = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    em = ember.nn.Sequential(ember.nn.Linear(4, 5), ember.nn.Tanh(), ember.nn.Linear(5, 3)).double()
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    y = np.array([0, 2, 1])

    def psg(m, model):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, xi, yi):
            return m.nn.functional.cross_entropy(m.func.functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))
        return m.func.vmap(m.func.grad(loss), in_dims=(None, 0, 0))(params, m.tensor(X), m.tensor(y))
    same(psg(torch, tm), psg(ember, em))


@pytest.mark.parametrize("call", [
    lambda m: m.func.vmap(m.sin, in_dims=[0])(m.tensor(X)),
    lambda m: m.func.vmap(m.add)(m.tensor(X), m.tensor(A)),
    lambda m: m.func.vmap(m.sin, in_dims=5)(m.tensor(X)),
    lambda m: m.func.vmap(lambda a: 3)(m.tensor(X)),
    lambda m: m.func.vmap(m.sin, out_dims=None)(m.tensor(X)),
    lambda m: m.func.vmap(lambda a: m.rand(2))(m.tensor(X)),
    lambda m: m.func.vmap(m.sin, randomness="x")(m.tensor(X)),
    lambda m: m.func.grad(lambda a: a * 2)(m.tensor(V)),
    lambda m: m.func.grad(lambda a: a.sum(), argnums=3)(m.tensor(V)),
    lambda m: m.func.grad(lambda a: a.sum(), has_aux=True)(m.tensor(V)),
], ids=["in_dims_list", "sizes", "in_dim_range", "non_tensor", "out_none", "random", "randomness", "grad_vector",
        "argnums", "has_aux"])
def test_func_errors(call):
    assert run(call) is None


AF_CASES = {
    "jacobian": lambda m: m.autograd.functional.jacobian(lambda a, b: (a * b, a.exp()),
                                                         (m.tensor(V), m.tensor(V[::-1].copy()))),
    "jacobian_single": lambda m: m.autograd.functional.jacobian(lambda a: a.sin().sum(0), m.tensor(X)),
    "jacobian_fwd": lambda m: m.autograd.functional.jacobian(lambda a: a.sin() * a.sum(), m.tensor(V), vectorize=True,
                                                             strategy="forward-mode"),
    "hessian": lambda m: m.autograd.functional.hessian(lambda a: a @ m.tensor(A) @ a + a.prod(), m.tensor(V)),
    "hessian_tuple": lambda m: m.autograd.functional.hessian(lambda a, b: (a * b.exp()).sum(),
                                                             (m.tensor(V), m.tensor(V))),
    "vjp": lambda m: m.autograd.functional.vjp(lambda a: a.exp() * 2, m.tensor(V), m.tensor(V)),
    "jvp": lambda m: m.autograd.functional.jvp(lambda a, b: a * b, (m.tensor(V), m.tensor(V)),
                                               (m.tensor(V), m.tensor(V))),
    "hvp": lambda m: m.autograd.functional.hvp(lambda a: (a ** 3).sum(), m.tensor(V), m.tensor(V)),
    "vhp": lambda m: m.autograd.functional.vhp(lambda a: (a ** 3).prod(), m.tensor(V), m.tensor(V)),
    "strict_unused": lambda m: m.autograd.functional.vjp(lambda a, b: a * 2, (m.tensor(V), m.tensor(V)), m.tensor(V),
                                                         strict=True),
    "strict_linear_hessian": lambda m: m.autograd.functional.hessian(lambda a: a.sum(), m.tensor(V), strict=True),
    "v_missing": lambda m: m.autograd.functional.vjp(lambda a: a * 2, m.tensor(V)),
    "v_size": lambda m: m.autograd.functional.jvp(lambda a: a * 2, m.tensor(V), m.tensor(X)),
    "fwd_no_vectorize": lambda m: m.autograd.functional.jacobian(lambda a: a, m.tensor(V), strategy="forward-mode"),
    "bad_inputs": lambda m: m.autograd.functional.jacobian(lambda a: a, [m.tensor(V)]),
}


@pytest.mark.parametrize("name", sorted(AF_CASES))
def test_autograd_functional(name):
    r = run(AF_CASES[name])
    if r is not None:
        same(*r)


def test_autograd_functional_error_messages():
    for name in ("strict_unused", "strict_linear_hessian", "v_missing", "fwd_no_vectorize", "bad_inputs"):
        msgs = []
        for m in (torch, ember):
            with pytest.raises(Exception) as info:
                AF_CASES[name](m)
            msgs.append(str(info.value).replace("torch.", "").replace("ember.", ""))
        assert msgs[0] == msgs[1], name
