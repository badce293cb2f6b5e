"""Recorded trajectories: every optimizer, for each option that changes its formula, on a small
quadratic and on a small MLP made of raw tensors (W1, b1, W2, b2), matches a float64 reference
written here in numpy from the algorithms as PyTorch documents them, step by step.

The references are deliberately written the textbook way (``m_hat / (sqrt(v_hat) + eps)``...),
not as a transcription of ember's op sequence, so they check the formula, not the code.
"""
import numpy as np
import pytest

import ember

STEPS = 8


# -- problems: parameters, and the loss and its gradient in numpy ------------------------------

class Quadratic:
    """f(x, y) = 0.5 x'Ax - b'x + 0.5 |y - c|^2 * 3 over a vector x and a 2x2 matrix y."""

    def __init__(self):
        rng = np.random.default_rng(1)
        m = rng.standard_normal((5, 5))
        self.A = m @ m.T + np.eye(5)
        self.b = rng.standard_normal(5)
        self.c = rng.standard_normal((2, 2))
        self.init = [rng.standard_normal(5), rng.standard_normal((2, 2))]

    def np_loss_grads(self, ps):
        x, y = ps
        loss = 0.5 * x @ self.A @ x - self.b @ x + 1.5 * np.sum((y - self.c) ** 2)
        return loss, [self.A @ x - self.b, 3.0 * (y - self.c)]

    def ember_loss(self, ps):
        x, y = ps
        A, b, c = (ember.tensor(v, dtype=x.dtype) for v in (self.A, self.b, self.c))
        return 0.5 * (x @ (A @ x)) - (b * x).sum() + 1.5 * ((y - c) ** 2).sum()


class MLP:
    """mean((tanh(X W1 + b1) W2 + b2 - Y)^2) with W1 4x6, b1 6, W2 6x3, b2 3."""

    def __init__(self):
        rng = np.random.default_rng(2)
        self.X = rng.standard_normal((8, 4))
        self.Y = rng.standard_normal((8, 3))
        self.init = [rng.standard_normal((4, 6)) * 0.5, rng.standard_normal(6) * 0.1,
                     rng.standard_normal((6, 3)) * 0.5, rng.standard_normal(3) * 0.1]

    def np_loss_grads(self, ps):
        W1, b1, W2, b2 = ps
        h = np.tanh(self.X @ W1 + b1)
        r = h @ W2 + b2 - self.Y
        loss = np.mean(r ** 2)
        dout = 2 * r / r.size
        dW2, db2 = h.T @ dout, dout.sum(0)
        dz = (dout @ W2.T) * (1 - h ** 2)
        return loss, [self.X.T @ dz, dz.sum(0), dW2, db2]

    def ember_loss(self, ps):
        W1, b1, W2, b2 = ps
        X, Y = ember.tensor(self.X, dtype=W1.dtype), ember.tensor(self.Y, dtype=W1.dtype)
        return ((ember.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2).mean()


PROBLEMS = {"quadratic": Quadratic, "mlp": MLP}


# -- numpy float64 references -----------------------------------------------------------------------

class Ref:
    """One reference optimizer: ``step(params, grads)`` updates the numpy arrays in place."""

    def __init__(self, **hp):
        self.hp = hp
        self.t = 0
        self.s = {}

    def state(self, i, name, init):
        key = (i, name)
        if key not in self.s:
            self.s[key] = init()
        return self.s[key]

    def step(self, params, grads):
        self.t += 1
        for i, (p, g) in enumerate(zip(params, grads)):
            g = -g if self.hp.get("maximize") else g.copy()
            self.update(i, p, g)


class RefSGD(Ref):
    def update(self, i, p, g):
        h = self.hp
        if h.get("weight_decay", 0):
            g = g + h["weight_decay"] * p
        mu = h.get("momentum", 0)
        if mu:
            if (i, "b") not in self.s:
                self.s[(i, "b")] = g.copy()
            else:
                self.s[(i, "b")] = mu * self.s[(i, "b")] + (1 - h.get("dampening", 0)) * g
            b = self.s[(i, "b")]
            g = g + mu * b if h.get("nesterov") else b
        p -= h["lr"] * g


class RefAdam(Ref):
    decoupled = False

    def update(self, i, p, g):
        h, t = self.hp, self.t
        lr, (b1, b2), eps, wd = h["lr"], h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8), h.get("weight_decay", 0)
        if wd:
            if self.decoupled or h.get("decoupled_weight_decay"):
                p *= 1 - lr * wd
            else:
                g = g + wd * p
        m = self.s[(i, "m")] = b1 * self.state(i, "m", lambda: np.zeros_like(p)) + (1 - b1) * g
        v = self.s[(i, "v")] = b2 * self.state(i, "v", lambda: np.zeros_like(p)) + (1 - b2) * g * g
        if h.get("amsgrad"):
            v = self.s[(i, "vmax")] = np.maximum(self.state(i, "vmax", lambda: np.zeros_like(p)), v)
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        p -= lr * m_hat / (np.sqrt(v_hat) + eps)


class RefAdamW(RefAdam):
    decoupled = True

    def __init__(self, **hp):
        hp.setdefault("weight_decay", 1e-2)
        super().__init__(**hp)


class RefAdamax(Ref):
    def update(self, i, p, g):
        h, t = self.hp, self.t
        lr, (b1, b2), eps, wd = h["lr"], h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8), h.get("weight_decay", 0)
        if wd:
            g = g + wd * p
        m = self.s[(i, "m")] = b1 * self.state(i, "m", lambda: np.zeros_like(p)) + (1 - b1) * g
        u = self.s[(i, "u")] = np.maximum(b2 * self.state(i, "u", lambda: np.zeros_like(p)), np.abs(g) + eps)
        p -= lr / (1 - b1 ** t) * m / u


class RefNAdam(Ref):
    def update(self, i, p, g):
        h, t = self.hp, self.t
        lr, (b1, b2), eps, wd = h["lr"], h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8), h.get("weight_decay", 0)
        psi = h.get("momentum_decay", 4e-3)
        if wd:
            if h.get("decoupled_weight_decay"):
                p *= 1 - lr * wd
            else:
                g = g + wd * p
        mu = [b1 * (1 - 0.5 * 0.96 ** (k * psi)) for k in range(1, t + 2)]  # mu_1 .. mu_{t+1}
        m = self.s[(i, "m")] = b1 * self.state(i, "m", lambda: np.zeros_like(p)) + (1 - b1) * g
        v = self.s[(i, "v")] = b2 * self.state(i, "v", lambda: np.zeros_like(p)) + (1 - b2) * g * g
        m_hat = mu[t] * m / (1 - np.prod(mu[:t + 1])) + (1 - mu[t - 1]) * g / (1 - np.prod(mu[:t]))
        v_hat = v / (1 - b2 ** t)
        p -= lr * m_hat / (np.sqrt(v_hat) + eps)


class RefRAdam(Ref):
    def update(self, i, p, g):
        h, t = self.hp, self.t
        lr, (b1, b2), eps, wd = h["lr"], h.get("betas", (0.9, 0.999)), h.get("eps", 1e-8), h.get("weight_decay", 0)
        if wd:
            if h.get("decoupled_weight_decay"):
                p *= 1 - lr * wd
            else:
                g = g + wd * p
        m = self.s[(i, "m")] = b1 * self.state(i, "m", lambda: np.zeros_like(p)) + (1 - b1) * g
        v = self.s[(i, "v")] = b2 * self.state(i, "v", lambda: np.zeros_like(p)) + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            ell = np.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
            r = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p -= lr * m_hat * r * ell
        else:
            p -= lr * m_hat


class RefAdagrad(Ref):
    def update(self, i, p, g):
        h, t = self.hp, self.t
        lr, wd = h["lr"], h.get("weight_decay", 0)
        clr = lr / (1 + (t - 1) * h.get("lr_decay", 0))
        if wd:
            g = g + wd * p
        s = self.s[(i, "s")] = (self.state(i, "s", lambda: np.full_like(p, h.get("initial_accumulator_value", 0)))
                                + g * g)
        p -= clr * g / (np.sqrt(s) + h.get("eps", 1e-10))


class RefRMSprop(Ref):
    def update(self, i, p, g):
        h = self.hp
        lr, a, eps, wd, mu = h["lr"], h.get("alpha", 0.99), h.get("eps", 1e-8), h.get("weight_decay", 0), \
            h.get("momentum", 0)
        if wd:
            g = g + wd * p
        v = self.s[(i, "v")] = a * self.state(i, "v", lambda: np.zeros_like(p)) + (1 - a) * g * g
        vt = v
        if h.get("centered"):
            ga = self.s[(i, "ga")] = a * self.state(i, "ga", lambda: np.zeros_like(p)) + (1 - a) * g
            vt = v - ga * ga
        if mu > 0:
            b = self.s[(i, "b")] = mu * self.state(i, "b", lambda: np.zeros_like(p)) + g / (np.sqrt(vt) + eps)
            p -= lr * b
        else:
            p -= lr * g / (np.sqrt(vt) + eps)


class RefAdadelta(Ref):
    def update(self, i, p, g):
        h = self.hp
        lr, rho, eps, wd = h.get("lr", 1.0), h.get("rho", 0.9), h.get("eps", 1e-6), h.get("weight_decay", 0)
        if wd:
            g = g + wd * p
        v = self.s[(i, "v")] = rho * self.state(i, "v", lambda: np.zeros_like(p)) + (1 - rho) * g * g
        u = self.state(i, "u", lambda: np.zeros_like(p))
        dx = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        self.s[(i, "u")] = rho * u + (1 - rho) * dx * dx
        p -= lr * dx


class RefRprop(Ref):
    def update(self, i, p, g):
        h = self.hp
        em, ep = h.get("etas", (0.5, 1.2))
        lo, hi = h.get("step_sizes", (1e-6, 50))
        prev = self.state(i, "prev", lambda: np.zeros_like(p))
        size = self.state(i, "size", lambda: np.full_like(p, h["lr"]))
        prod = g * prev
        eta = np.where(prod > 0, ep, np.where(prod < 0, em, 1.0))
        size = self.s[(i, "size")] = np.clip(size * eta, lo, hi)
        g = np.where(prod < 0, 0.0, g)
        p -= np.sign(g) * size
        self.s[(i, "prev")] = g


class RefASGD(Ref):
    def update(self, i, p, g):
        h, t = self.hp, self.t
        lr, lambd, alpha, t0, wd = h["lr"], h.get("lambd", 1e-4), h.get("alpha", 0.75), h.get("t0", 1e6), \
            h.get("weight_decay", 0)
        eta = self.state(i, "eta", lambda: lr)
        mu = self.state(i, "mu", lambda: 1.0)
        if wd:
            g = g + wd * p
        p *= 1 - lambd * eta
        p -= eta * g
        ax = self.state(i, "ax", lambda: np.zeros_like(p))
        self.s[(i, "ax")] = p.copy() if mu == 1 else ax + mu * (p - ax)
        self.s[(i, "eta")] = lr / (1 + lambd * lr * t) ** alpha
        self.s[(i, "mu")] = 1 / max(1, t - t0)


REFS = {"SGD": RefSGD, "Adam": RefAdam, "AdamW": RefAdamW, "Adamax": RefAdamax, "NAdam": RefNAdam, "RAdam": RefRAdam,
        "Adagrad": RefAdagrad, "RMSprop": RefRMSprop, "Adadelta": RefAdadelta, "Rprop": RefRprop, "ASGD": RefASGD}

# each option combination that changes an optimizer's formula
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True)),
    ("Adam", dict(lr=0.05, maximize=True, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.1, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),  # rho_t > 5 (the rectified branch) from step 6 on
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5, weight_decay=0.1, eps=1e-6)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08), maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=2, weight_decay=0.1)),
]

PATHS = {"default": {}, "per-tensor": {"foreach": False}}


@pytest.fixture
def float64_default():
    """Scalar state (``step``, ASGD's ``eta``...) follows the default dtype, as in PyTorch: in float64
    the whole computation is float64 and matches the reference to rounding."""
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(prev)


def run_both(name, kw, problem, steps=STEPS, dtype=ember.float64, extra=None):
    """Step ember's optimizer and the reference side by side; yield (step, ember values, reference values)."""
    prob = PROBLEMS[problem]()
    ref_params = [p.copy() for p in prob.init]
    params = [ember.tensor(p, dtype=dtype, requires_grad=True) for p in prob.init]
    opt = getattr(ember.optim, name)(params, **kw, **(extra or {}))
    ref = REFS[name](**kw)
    for k in range(steps):
        opt.zero_grad()
        prob.ember_loss(params).backward()
        opt.step()
        _, grads = prob.np_loss_grads(ref_params)
        ref.step(ref_params, grads)
        if name == "ASGD":  # the average does not feed back into the parameters: check it directly
            for i, p in enumerate(params):
                st = opt.state[p]
                tol = 1e-9 if dtype is ember.float64 else 2e-4
                np.testing.assert_allclose(st["ax"].numpy(), ref.s[(i, "ax")], rtol=tol, atol=tol * 1e-3)
                assert abs(float(st["eta"]) - ref.s[(i, "eta")]) <= tol * ref.s[(i, "eta")]
                assert abs(float(st["mu"]) - ref.s[(i, "mu")]) <= tol
        yield k, [p.detach().numpy().astype(np.float64) for p in params], ref_params


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("problem", list(PROBLEMS))
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_trajectory_matches_numpy_reference(float64_default, name, kw, problem, path):
    extra = PATHS[path]
    if name in ("SGD", "Adam", "AdamW", "Adagrad") and extra:
        extra = {"foreach": False, "fused": False}
    moved = False
    for k, got, want in run_both(name, kw, problem, extra=extra):
        for i, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{name}{kw} on {problem}, step {k + 1}, parameter {i}")
        moved = moved or any(not np.allclose(g, p0) for g, p0 in zip(got, PROBLEMS[problem]().init))
    assert moved, "the optimizer never changed the parameters"


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True)),
                                     ("AdamW", dict(lr=0.05)), ("RMSprop", dict(lr=0.01, centered=True)),
                                     ("NAdam", dict(lr=0.05)), ("ASGD", dict(lr=0.05, t0=2))])
def test_float32_trajectory_close_to_float64_reference(name, kw):
    for k, got, want in run_both(name, kw, "mlp", dtype=ember.float32):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5, err_msg=f"{name} step {k + 1}")


def test_state_tensors_are_updated_in_place_so_views_stay_valid(float64_default):
    w = ember.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    view = w.detach()[0]            # a view of the parameter's storage
    opt = ember.optim.Adam([w], lr=0.1)
    w.grad = ember.ones(2, 3)
    opt.step()
    exp_avg = opt.state[w]["exp_avg"]
    w.grad = ember.ones(2, 3)
    opt.step()
    assert opt.state[w]["exp_avg"] is exp_avg
    np.testing.assert_allclose(view.numpy(), w.detach().numpy()[0])
    assert float(opt.state[w]["step"]) == 2.0
    np.testing.assert_allclose(exp_avg.numpy(), np.full((2, 3), 0.19))


def test_parameters_without_grad_are_skipped(float64_default):
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0], requires_grad=True)
    opt = ember.optim.Adam([a, b], lr=0.1)
    a.grad = ember.tensor([1.0, -1.0])
    opt.step()
    assert b.tolist() == [3.0] and b not in opt.state
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 2.1])


def test_zero_gradient_still_steps_with_momentum(float64_default):
    p = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.5)
    p.grad = ember.tensor([1.0])
    opt.step()                                   # buf = 1, p = 0.9
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0]
    opt.step()                                   # buf = 0.5, p = 0.85
    assert abs(p.item() - 0.85) < 1e-12


def test_per_group_options(float64_default):
    base = ember.tensor([1.0], requires_grad=True)
    head = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.SGD([{"params": [base]}, {"params": [head], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    for _ in range(2):
        base.grad = ember.tensor([1.0])
        head.grad = ember.tensor([1.0])
        opt.step()
    assert abs(base.item() - 0.8) < 1e-12            # 1 - 0.1 - 0.1
    assert abs(head.item() - (1 - 0.5 - 0.5 * 1.9)) < 1e-12
    assert opt.param_groups[0]["momentum"] == 0 and opt.param_groups[1]["lr"] == 0.5


def test_tensor_learning_rate(float64_default):
    lr = ember.tensor(0.5)
    p = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.SGD([p], lr=lr)
    p.grad = ember.tensor([1.0])
    opt.step()
    lr.fill_(0.25)              # the group holds the tensor: changing it changes the next step
    opt.step()
    assert abs(p.item() - 0.25) < 1e-12
