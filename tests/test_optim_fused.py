"""The fast path: each optimizer's update is one op (``_fused_<name>_``) that a backend may
implement natively. cpu_numpy's fused SGD and Adam/AdamW kernels must give the same trajectories
as the plain ember-op implementation, bit for bit; the op runs when ``fused``/``foreach`` allow it
and its decomposition carries backends without the kernel."""
import contextlib

import numpy as np
import pytest

import ember
import ember.optim as optim
from ember.ops.optim import FUSED
from ember.ops.registry import OPS

MLP_INIT = [np.random.default_rng(5).standard_normal(s) * 0.5 for s in ((4, 6), (6,), (6, 3), (3,))]
X = np.random.default_rng(6).standard_normal((8, 4))
Y = np.random.default_rng(7).standard_normal((8, 3))


def trajectory(name, kw, dtype=ember.float32, device="cpu", steps=5):
    params = [ember.tensor(v, dtype=dtype, device=device, requires_grad=True) for v in MLP_INIT]
    opt = getattr(optim, name)(params, **kw)
    x, y = ember.tensor(X, dtype=dtype, device=device), ember.tensor(Y, dtype=dtype, device=device)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        W1, b1, W2, b2 = params
        ((ember.tanh(x @ W1 + b1) @ W2 + b2 - y) ** 2).mean().backward()
        opt.step()
        out.append([p.detach().cpu().numpy().copy() for p in params])
    return out, opt


@contextlib.contextmanager
def counting(op_name):
    """Wrap cpu_numpy's kernel for ``op_name`` to count its calls."""
    be = ember._devices.cpu()._backend
    original = be.kernels[op_name]
    calls = []

    def k(*args):
        calls.append(len(args[0]))
        return original(*args)
    be.register_kernel(op_name, k)
    try:
        yield calls
    finally:
        be.register_kernel(op_name, original)


SGD_CASES = [dict(lr=0.1), dict(lr=0.1, weight_decay=0.1), dict(lr=0.05, momentum=0.9),
             dict(lr=0.05, momentum=0.9, dampening=0.25), dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
             dict(lr=0.05, momentum=0.5, maximize=True)]
ADAM_CASES = [("Adam", dict(lr=0.05)), ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
              ("Adam", dict(lr=0.05, maximize=True, betas=(0.8, 0.95), eps=1e-6)),
              ("Adam", dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True)),
              ("AdamW", dict(lr=0.05)), ("AdamW", dict(lr=0.05, amsgrad=True, weight_decay=0.3))]
CASES = [("SGD", kw) for kw in SGD_CASES] + ADAM_CASES


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_fused_and_plain_trajectories_are_identical(name, kw, dtype):
    op = "_fused_sgd_" if name == "SGD" else "_fused_adam_"
    with counting(op) as calls:
        fused, _ = trajectory(name, {**kw, "fused": True}, dtype)
        assert calls == [4] * 5          # one kernel call per step for the whole group
        default, _ = trajectory(name, kw, dtype)
        assert len(calls) == 10          # the default takes the native kernel too
        plain, _ = trajectory(name, {**kw, "foreach": False}, dtype)
        assert len(calls) == 10          # foreach=False: the per-tensor ember ops
    for step, (f, d, p) in enumerate(zip(fused, default, plain)):
        for a, b, c in zip(f, d, p):
            np.testing.assert_array_equal(a, c, err_msg=f"step {step + 1}")
            np.testing.assert_array_equal(b, c)
    assert not np.array_equal(fused[-1][0], MLP_INIT[0].astype(fused[-1][0].dtype))


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True))])
def test_fused_state_matches_plain_state(name, kw):
    _, of = trajectory(name, {**kw, "fused": True})
    _, op = trajectory(name, {**kw, "fused": False})
    sf, sp = of.state_dict()["state"], op.state_dict()["state"]
    assert sf.keys() == sp.keys()
    for i in sf:
        assert sf[i].keys() == sp[i].keys()
        for k in sf[i]:
            np.testing.assert_array_equal(sf[i][k].numpy(), sp[i][k].numpy())


def test_bfloat16_params_take_the_decomposition_inside_the_kernel():
    f, _ = trajectory("Adam", dict(lr=0.05, fused=True), ember.bfloat16, steps=3)
    p, _ = trajectory("Adam", dict(lr=0.05, fused=False), ember.bfloat16, steps=3)
    for a, b in zip(f[-1], p[-1]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_runs_of_a_few_elements_are_bit_identical(name, kw, monkeypatch):
    kernel_group = ember._devices.cpu()._kernels["_fused_adam_"].__self__  # SGD's too: one group
    monkeypatch.setattr(kernel_group, "block", 7)  # (4, 6) is 24 elements: runs of 7, 7, 7 and 3
    fused, _ = trajectory(name, {**kw, "fused": True}, ember.float32)
    plain, _ = trajectory(name, {**kw, "foreach": False}, ember.float32)
    for f, p in zip(fused, plain):
        for a, b in zip(f, p):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                     ("Adam", dict(lr=0.05, maximize=True))])
def test_non_contiguous_parameter(name, kw, monkeypatch):
    kernel_group = ember._devices.cpu()._kernels["_fused_adam_"].__self__
    monkeypatch.setattr(kernel_group, "block", 4)
    results = []
    for fused in (True, False):
        w = ember.tensor(MLP_INIT[0], dtype=ember.float32).t().detach().requires_grad_()  # (6, 4), transposed
        assert not w.is_contiguous()
        opt = getattr(optim, name)([w], **kw, fused=fused)
        for _ in range(3):
            opt.zero_grad()
            (w.sin() * ember.arange(4.0)).sum().backward()
            opt.step()
        results.append(w.detach().numpy())
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True))])
def test_zero_dim_parameters(name, kw):
    results = []
    for fused in (True, False):
        scale = ember.tensor(1.5, requires_grad=True)  # a 0-d parameter, as a learnable temperature is
        opt = getattr(optim, name)([scale], **kw, fused=fused)
        for _ in range(3):
            opt.zero_grad()
            (scale * scale - 2.0).abs().backward()
            opt.step()
        results.append(scale.detach().numpy())
    assert results[0].shape == ()
    np.testing.assert_array_equal(results[0], results[1])
    assert results[0] != 1.5


def test_kernel_bumps_version_counters():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9, fused=True)
    y = (w * w).sum()            # saves w
    w.grad = ember.ones(2)
    v0 = w._version[0]
    opt.step()
    assert w._version[0] > v0
    assert opt.state[w]["momentum_buffer"]._version[0] >= 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_every_optimizer_update_is_a_registered_op():
    assert set(FUSED) == {"sgd", "adam", "adamax", "nadam", "radam", "adagrad", "rmsprop", "adadelta", "rprop", "asgd"}
    for name, op in FUSED.items():
        assert OPS[f"_fused_{name}_"] is op
        assert op.decomposition is not None and not op.differentiable and op.group == "optim"
        assert op.doc


def test_cpu_numpy_registers_fused_sgd_and_adam():
    kernels = ember._devices.cpu()._kernels
    assert "_fused_sgd_" in kernels and "_fused_adam_" in kernels


def test_backend_without_the_kernel_runs_the_decomposition(prim_backend):
    assert "_fused_adam_" not in ember._devices.canonical(prim_backend)._kernels
    ref, _ = trajectory("Adam", dict(lr=0.05, amsgrad=True), steps=3)
    got, _ = trajectory("Adam", dict(lr=0.05, amsgrad=True, fused=True), device=prim_backend, steps=3)
    for a, b in zip(ref[-1], got[-1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_group_spanning_two_devices_is_dispatched_per_device(prim_backend):
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([1.0, 2.0], device=prim_backend, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    with counting("_fused_sgd_") as calls:
        for _ in range(2):
            a.grad = ember.tensor([1.0, -1.0])
            b.grad = ember.tensor([1.0, -1.0], device=prim_backend)
            opt.step()
    assert calls == [1, 1]              # the cpu part through the kernel, the other by decomposition
    assert a.tolist() == b.cpu().tolist()
    np.testing.assert_allclose(a.detach().numpy(), [1.0 - 0.5 - 0.95, 2.0 + 0.5 + 0.95], rtol=1e-6)


class _FastSGDPlugin:
    """A third-party plugin speeding up SGD on cpu through ember_register_kernels."""

    calls = []

    @ember.hookimpl
    def ember_register_kernels(self, backend, register):
        if backend == "cpu_numpy":
            from ember.ops.optim import sgd_update

            def k(*args):
                _FastSGDPlugin.calls.append(len(args[0]))
                return sgd_update(*args)
            register("_fused_sgd_", k)


def test_a_plugin_can_provide_the_fused_kernel():
    from ember import _plugins
    be = ember._devices.cpu()._backend
    original = be.kernels["_fused_sgd_"]
    name = _plugins.register_plugin(_FastSGDPlugin(), name="fast-sgd-test")
    try:
        w = ember.tensor([1.0], requires_grad=True)
        opt = optim.SGD([w], lr=0.5)
        w.grad = ember.tensor([1.0])
        opt.step()
        assert _FastSGDPlugin.calls == [1] and w.item() == 0.5
    finally:
        _plugins.unregister_plugin(name)
        be.register_kernel("_fused_sgd_", original)
