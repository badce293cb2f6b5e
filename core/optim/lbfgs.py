"""L-BFGS (the limited-memory quasi-Newton method of Nocedal's two-loop recursion, with the
step rules of Mark Schmidt's minFunc that PyTorch follows) and an optional strong-Wolfe line
search; one parameter group, whose parameters are handled as one flat vector."""
from __future__ import annotations

import math

from ..autograd import enable_grad, no_grad
from ..ops.creation import zeros
from ..ops.shape import cat
from . import _checks
from .optimizer import Optimizer, _to_float

__all__ = ["LBFGS"]


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """Where the cubic matching value and slope at ``x1`` and ``x2`` has its minimum, clamped to
    ``bounds`` (default: the interval between the points); the middle of the bounds when the
    cubic has no minimum."""
    lo, hi = bounds if bounds is not None else sorted((x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 ** 2 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    # written from the right-hand point (b) of the pair, whichever argument it was
    a, ga, b, gb = (x1, g1, x2, g2) if x1 <= x2 else (x2, g2, x1, g1)
    guess = b - (b - a) * ((gb + d2 - d1) / (gb - ga + 2 * d2))
    return min(max(guess, lo), hi)


class _Trial:
    """One point of the line search: step ``t``, loss ``f``, gradient ``g``, slope ``gtd``."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _wolfe_search(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Search along ``d`` (starting at step ``t``) for a step meeting the strong Wolfe conditions:
    sufficient decrease (``c1``) and a small enough slope (``c2``). A first phase grows the step
    until an interval must contain such a point, a second shrinks that interval by cubic
    interpolation. ``obj_func(x, t, d)`` gives ``(loss, flat_grad)`` at ``x + t d``. Returns
    ``(loss, flat_grad, t, evaluations)``."""
    scale = d.abs().max().item()
    calls = 0

    def probe(step) -> _Trial:
        nonlocal calls
        calls += 1
        loss, grad = obj_func(x, step, d)
        return _Trial(step, loss, grad, grad.dot(d).item())

    def decreases(p: _Trial) -> bool:  # (a NaN loss counts as a decrease, as in PyTorch)
        return not p.f > f + c1 * p.t * gtd

    def flat_enough(p: _Trial) -> bool:
        return abs(p.gtd) <= -c2 * gtd

    origin = _Trial(0, f, g.clone(), gtd)
    prev, cur = origin, probe(t)
    rounds = 0
    found = False
    bracket = None
    while rounds < max_ls:  # phase 1: bracket
        if not decreases(cur) or (rounds > 1 and cur.f >= prev.f) or (cur.gtd >= 0 and not flat_enough(cur)):
            bracket = [prev, cur]
            break
        if flat_enough(cur):
            bracket, found = [cur], True
            break
        # extrapolate: between 1.01x and 10x the current step
        step = _cubic_minimizer(prev.t, prev.f, prev.gtd, cur.t, cur.f, cur.gtd,
                                bounds=(cur.t + 0.01 * (cur.t - prev.t), cur.t * 10))
        prev, cur = cur, probe(step)
        rounds += 1
    if rounds == max_ls:
        bracket = [origin, cur]

    lo, hi = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    stalled = False
    while not found and rounds < max_ls:  # phase 2: zoom
        left, right = bracket[0].t, bracket[1].t
        if abs(right - left) * scale < tolerance_change:
            break
        step = _cubic_minimizer(left, bracket[0].f, bracket[0].gtd, right, bracket[1].f, bracket[1].gtd)
        top, bottom = max(left, right), min(left, right)
        margin = 0.1 * (top - bottom)
        # a step near an end of the interval is accepted once; the next time (or one outside
        # the interval) it is pulled ``margin`` inside
        near_end = min(top - step, step - bottom) < margin
        if near_end and (stalled or step >= top or step <= bottom):
            step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
            stalled = False
        else:
            stalled = near_end
        new = probe(step)
        rounds += 1
        if not decreases(new) or new.f >= bracket[lo].f:
            bracket[hi] = new
            lo, hi = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
            continue
        if flat_enough(new):
            found = True
        elif new.gtd * (bracket[hi].t - bracket[lo].t) >= 0:
            bracket[hi] = bracket[lo]
        bracket[lo] = new
    best = bracket[lo]
    return best.f, best.g, best.t, calls


def _two_loop(grad, dirs, steps, rhos, h_diag, alphas):
    """``-H grad`` for the inverse-Hessian estimate ``H`` of the stored curvature pairs (``dirs``:
    gradient changes y, ``steps``: steps s, ``rhos``: 1 / y.s), scaled by ``h_diag``."""
    q = grad.neg()
    for i in reversed(range(len(dirs))):
        alphas[i] = steps[i].dot(q).item() * rhos[i]
        q.add_(dirs[i], alpha=-alphas[i])
    r = q.mul(h_diag)
    for i in range(len(dirs)):
        beta = dirs[i].dot(r).item() * rhos[i]
        r.add_(steps[i], alpha=alphas[i] - beta)
    return r


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None)``.

    ``step(closure)`` runs up to ``max_iter`` quasi-Newton iterations (``max_eval`` closure calls,
    default ``max_iter * 5 // 4``); ``line_search_fn="strong_wolfe"`` picks each step length by a
    strong-Wolfe line search, otherwise the step is ``lr`` (the first one scaled by ``1 / |g|_1``).
    Only one parameter group is supported, on one device. State (on the first parameter):
    ``func_evals``, ``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``,
    ``prev_flat_grad``, ``prev_loss``, ``al``; scalars are python floats (PyTorch keeps some as
    0-d tensors; both load).
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    @staticmethod
    def _validate(group: dict) -> None:
        _checks.common(group)
        ls = group.get("line_search_fn")
        if ls not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {ls!r}")
        for k in ("max_iter", "max_eval", "history_size"):
            if k in group and (not isinstance(group[k], int) or group[k] < 1):
                raise ValueError(f"LBFGS: {k} must be a positive integer, got {group[k]!r}")

    def __setstate__(self, state):
        super().__setstate__(state)
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    # -- the parameters as one flat vector -----------------------------------------------------------
    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _flat_grad(self):
        parts = [zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None
                 else (p.grad.to_dense() if p.grad.is_sparse else p.grad).reshape(-1) for p in self._params]
        return cat(parts, 0)

    def _move(self, step_size: float, direction) -> None:
        """``params += step_size * direction`` (``direction`` flat)."""
        start = 0
        for p in self._params:
            stop = start + p.numel()
            p.add_(direction[start:stop].view_as(p), alpha=step_size)
            start = stop

    def _probe(self, closure, x, t, d):
        """Loss and flat gradient at ``x + t d``; the parameters are put back to ``x`` after."""
        self._move(t, d)
        loss = float(closure())
        grad = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, grad

    def step(self, closure=None):
        """Run the L-BFGS iterations; ``closure`` (required) clears the gradients, evaluates the
        model, calls ``backward`` and returns the loss. Returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model and returns the loss")
        with no_grad():
            return self._step(enable_grad()(closure))

    def _step(self, closure):
        group = self.param_groups[0]
        lr = _to_float(group["lr"])
        max_iter, max_eval, memory = group["max_iter"], group["max_eval"], group["history_size"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        search = group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss = closure()
        loss = float(first_loss)
        state["func_evals"] += 1
        evals = 1
        grad = self._flat_grad()
        if grad.abs().max().item() <= tol_grad:  # already at a stationary point
            return first_loss

        # what earlier calls left (scalars may come back from a state dict as tensors)
        d, t = state.get("d"), state.get("t")
        dirs, steps, rhos = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        t = None if t is None else float(t)
        rhos = None if rhos is None else [float(r) for r in rhos]
        h_diag = None if h_diag is None else float(h_diag)

        for it in range(1, max_iter + 1):
            state["n_iter"] += 1
            first_ever = state["n_iter"] == 1
            if first_ever:  # steepest descent, empty memory
                d, dirs, steps, rhos, h_diag = grad.neg(), [], [], [], 1.0
            else:
                y, s = grad.sub(prev_grad), d.mul(t)
                ys = y.dot(s).item()
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(dirs) == memory:
                        for kept in (dirs, steps, rhos):
                            kept.pop(0)
                    dirs.append(y)
                    steps.append(s)
                    rhos.append(1.0 / ys)
                    h_diag = ys / y.dot(y).item()
                alphas = state.setdefault("al", [None] * memory)
                d = _two_loop(grad, dirs, steps, rhos, h_diag, alphas)
            if prev_grad is None:
                prev_grad = grad.clone()
            else:
                prev_grad.copy_(grad)
            prev_loss = loss

            t = min(1.0, 1.0 / grad.abs().sum().item()) * lr if first_ever else lr
            gtd = grad.dot(d).item()
            if gtd > -tol_change:  # d does not go downhill (enough)
                break

            spent, converged = 0, False
            if search is not None:
                if search != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [p.clone() for p in self._params]
                loss, grad, t, spent = _wolfe_search(lambda x, step, dd: self._probe(closure, x, step, dd), start, t,
                                                     d, loss, grad, gtd, max_ls=max_eval - evals)
                self._move(t, d)
                converged = grad.abs().max().item() <= tol_grad
            else:
                self._move(t, d)
                if it != max_iter:  # after the last iteration the caller evaluates the model itself
                    loss = float(closure())
                    grad = self._flat_grad()
                    converged = grad.abs().max().item() <= tol_grad
                    spent = 1
            evals += spent
            state["func_evals"] += spent

            if it == max_iter or evals >= max_eval or converged:
                break
            if d.mul(t).abs().max().item() <= tol_change or abs(loss - prev_loss) < tol_change:
                break  # the parameters or the loss stopped moving

        state.update(d=d, t=t, old_dirs=dirs, old_stps=steps, ro=rhos, H_diag=h_diag, prev_flat_grad=prev_grad,
                     prev_loss=prev_loss)
        return first_loss
