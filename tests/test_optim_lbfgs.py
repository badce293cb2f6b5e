"""LBFGS: the fixed-step variant against a numpy float64 L-BFGS written here (two-loop recursion,
history, stopping rules), iteration by iteration across several ``step`` calls; the strong-Wolfe
line search by the conditions it guarantees and by convergence; its cubic interpolation against
numpy; and LBFGS's error cases."""
import math

import numpy as np
import pytest

import ember
from ember.optim.lbfgs import _cubic_minimizer as _cubic_interpolate
from ember.optim.lbfgs import _wolfe_search as _strong_wolfe

rng = np.random.default_rng(3)
_M = rng.standard_normal((6, 6))
A = _M @ _M.T + 0.5 * np.eye(6)
B = rng.standard_normal(6)
X0 = rng.standard_normal(6)


def np_quad(x):
    return 0.5 * x @ A @ x - B @ x, A @ x - B


def np_rosen(x):
    f = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    g = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
    return f, g


class RefLBFGS:
    """L-BFGS with a fixed step (no line search), float64 numpy."""

    def __init__(self, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100):
        self.lr, self.max_iter = lr, max_iter
        self.max_eval = max_eval if max_eval is not None else max_iter * 5 // 4
        self.tol_g, self.tol_c, self.m = tolerance_grad, tolerance_change, history_size
        self.n_iter = self.func_evals = 0
        self.S, self.Y, self.rho = [], [], []
        self.d = self.t = self.H = self.g_prev = self.f_prev = None

    def step(self, x, fg):
        f, g = fg(x)
        evals = 1
        self.func_evals += 1
        if np.abs(g).max() <= self.tol_g:
            return
        n = 0
        while n < self.max_iter:
            n += 1
            self.n_iter += 1
            if self.n_iter == 1:
                self.d, self.S, self.Y, self.rho, self.H = -g, [], [], [], 1.0
            else:
                y, s = g - self.g_prev, self.d * self.t
                ys = y @ s
                if ys > 1e-10:
                    if len(self.S) == self.m:
                        self.S.pop(0), self.Y.pop(0), self.rho.pop(0)
                    self.S.append(s), self.Y.append(y), self.rho.append(1 / ys)
                    self.H = ys / (y @ y)
                q = -g
                alphas = [0.0] * len(self.S)
                for i in reversed(range(len(self.S))):
                    alphas[i] = self.rho[i] * (self.S[i] @ q)
                    q = q - alphas[i] * self.Y[i]
                r = self.H * q
                for i in range(len(self.S)):
                    beta = self.rho[i] * (self.Y[i] @ r)
                    r = r + (alphas[i] - beta) * self.S[i]
                self.d = r
            self.g_prev, self.f_prev = g.copy(), f
            self.t = min(1.0, 1.0 / np.abs(g).sum()) * self.lr if self.n_iter == 1 else self.lr
            if g @ self.d > -self.tol_c:
                break
            x += self.t * self.d
            opt_cond = False
            if n != self.max_iter:
                f, g = fg(x)
                evals += 1
                self.func_evals += 1
                opt_cond = np.abs(g).max() <= self.tol_g
            if n == self.max_iter or evals >= self.max_eval or opt_cond:
                break
            if np.abs(self.d * self.t).max() <= self.tol_c or abs(f - self.f_prev) < self.tol_c:
                break


def ember_closure(opt, x, fn):
    def closure():
        opt.zero_grad()
        loss = fn(x)
        loss.backward()
        return loss
    return closure


def e_quad(x):
    a, b = ember.tensor(A), ember.tensor(B)
    return 0.5 * (x @ (a @ x)) - (b * x).sum()


def e_rosen(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


@pytest.mark.parametrize("kw", [dict(max_iter=3), dict(max_iter=4, history_size=2), dict(lr=0.5, max_iter=5),
                                dict(max_iter=10, max_eval=6)])
def test_fixed_step_lbfgs_matches_numpy_reference(kw):
    x = ember.tensor(X0.copy(), requires_grad=True)
    opt = ember.optim.LBFGS([x], **kw)
    ref, xr = RefLBFGS(**kw), X0.copy()
    for call in range(4):
        opt.step(ember_closure(opt, x, e_quad))
        ref.step(xr, np_quad)
        np.testing.assert_allclose(x.detach().numpy(), xr, rtol=1e-9, atol=1e-11, err_msg=f"after step() {call + 1}")
        st = opt.state[x]
        assert (st["n_iter"], st["func_evals"]) == (ref.n_iter, ref.func_evals)
        assert len(st["old_dirs"]) == len(ref.S)
    assert np.abs(xr - X0).max() > 1e-2


def test_lbfgs_split_parameters_match_one_flat_parameter():
    x = ember.tensor(X0.copy(), requires_grad=True)
    a = ember.tensor(X0[:2].copy(), requires_grad=True)
    b = ember.tensor(X0[2:].reshape(2, 2).copy(), requires_grad=True)
    o1 = ember.optim.LBFGS([x], max_iter=5)
    o2 = ember.optim.LBFGS([a, b], max_iter=5)
    o1.step(ember_closure(o1, x, e_quad))
    o2.step(ember_closure(o2, None, lambda _: e_quad(ember.cat([a, b.reshape(-1)]))))
    np.testing.assert_allclose(np.concatenate([a.detach().numpy(), b.detach().numpy().ravel()]),
                               x.detach().numpy(), rtol=1e-12)


def test_strong_wolfe_converges_on_rosenbrock():
    x = ember.tensor([-1.5, 2.0], dtype=ember.float64, requires_grad=True)
    opt = ember.optim.LBFGS([x], lr=1, max_iter=100, line_search_fn="strong_wolfe", tolerance_grad=1e-10,
                            tolerance_change=1e-14)
    for _ in range(3):
        opt.step(ember_closure(opt, x, e_rosen))
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-6)
    assert opt.state[x]["func_evals"] < 150


def test_fixed_step_is_worse_than_line_search_on_rosenbrock():
    """The line search matters: with the same iteration budget, fixed steps stay far from the optimum."""
    def run(ls):
        x = ember.tensor([-1.5, 2.0], dtype=ember.float64, requires_grad=True)
        opt = ember.optim.LBFGS([x], lr=1, max_iter=60, max_eval=100, line_search_fn=ls)
        opt.step(ember_closure(opt, x, e_rosen))
        return np_rosen(x.detach().numpy())[0]
    with_ls, without = run("strong_wolfe"), run(None)
    assert with_ls < 1e-8 and without > 1.0


def _numpy_obj(fg, x0):
    """obj_func(x, t, d) for _strong_wolfe over a numpy objective (x, d are ember tensors)."""
    def obj(x, t, d):
        f, g = fg(x0 + t * d.numpy())
        return f, ember.tensor(g)
    return obj


@pytest.mark.parametrize("fg,x0", [(np_rosen, np.array([-1.2, 1.0])), (np_quad, X0), (np_rosen, np.array([0.5, -0.3]))])
@pytest.mark.parametrize("t0", [1e-3, 1.0, 5.0])
def test_strong_wolfe_step_meets_the_conditions(fg, x0, t0):
    f0, g0 = fg(x0)
    d = -g0
    gtd = float(g0 @ d)
    c1, c2 = 1e-4, 0.9
    f_new, g_new, t, evals = _strong_wolfe(_numpy_obj(fg, x0), ember.tensor(x0), t0, ember.tensor(d), f0,
                                           ember.tensor(g0), gtd, c1=c1, c2=c2)
    f_check, g_check = fg(x0 + t * d)
    assert math.isclose(f_new, f_check, rel_tol=1e-12)
    np.testing.assert_allclose(g_new.numpy(), g_check)
    assert f_new <= f0 + c1 * t * gtd                     # sufficient decrease
    assert abs(g_check @ d) <= -c2 * gtd + 1e-12          # curvature (strong)
    assert 1 <= evals <= 25


def test_cubic_interpolation_finds_the_cubic_minimum():
    c = np.array([1.0, -3.0, 0.5, 2.0])  # f(x) = x^3 - 3x^2 + 0.5x + 2
    f = np.poly1d(c)
    df = f.deriv()
    x1, x2 = 0.5, 3.0
    crit = [r.real for r in df.roots if abs(r.imag) < 1e-12]
    want = [r for r in crit if df.deriv()(r) > 0][0]
    got = _cubic_interpolate(x1, f(x1), df(x1), x2, f(x2), df(x2))
    assert math.isclose(got, want, rel_tol=1e-12)
    assert _cubic_interpolate(x2, f(x2), df(x2), x1, f(x1), df(x1)) == pytest.approx(want, rel=1e-12)
    assert _cubic_interpolate(x1, f(x1), df(x1), x2, f(x2), df(x2), bounds=(0.5, 1.0)) == 1.0
    # no real minimum (d2^2 < 0): the midpoint of the bounds
    assert _cubic_interpolate(0.0, 0.0, 1.0, 1.0, 2.0 / 3.0, 1.0) == 0.5


def test_lbfgs_stops_at_once_when_gradient_is_small():
    x = ember.tensor(np.linalg.solve(A, B), requires_grad=True)
    opt = ember.optim.LBFGS([x], tolerance_grad=1e-6)
    before = x.detach().numpy().copy()
    loss = opt.step(ember_closure(opt, x, e_quad))
    assert isinstance(loss, ember.Tensor)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert opt.state[x]["func_evals"] == 1 and opt.state[x]["n_iter"] == 0


def test_lbfgs_errors():
    a = ember.tensor([1.0], requires_grad=True)
    b = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        ember.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="line_search_fn"):
        ember.optim.LBFGS([a], line_search_fn="armijo")
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ember.optim.LBFGS([a], lr=-1)
    with pytest.raises(RuntimeError, match="requires a closure"):
        ember.optim.LBFGS([a]).step()


def test_lbfgs_state_dict_resumes_identically():
    def fresh():
        x = ember.tensor(X0.copy(), requires_grad=True)
        return x, ember.optim.LBFGS([x], max_iter=3, history_size=4)
    x1, o1 = fresh()
    for _ in range(4):
        o1.step(ember_closure(o1, x1, e_quad))
    x2, o2 = fresh()
    for _ in range(2):
        o2.step(ember_closure(o2, x2, e_quad))
    sd = o2.state_dict()
    assert set(sd["state"][0]) >= {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                   "prev_flat_grad", "prev_loss"}
    x3, o3 = fresh()
    with ember.no_grad():
        x3.copy_(x2)
    o3.load_state_dict(sd)
    for _ in range(2):
        o3.step(ember_closure(o3, x3, e_quad))
    np.testing.assert_array_equal(x3.detach().numpy(), x1.detach().numpy())
