"""L-BFGS (after minFunc), with an optional strong-Wolfe line search; one parameter group.

The iteration keeps the last ``history_size`` curvature pairs (gradient change ``y``, step ``s``,
``1 / y.s``) and turns the gradient into a direction by the two-loop recursion (Nocedal & Wright,
Numerical Optimization, algorithm 7.4). The line search brackets a step meeting the strong Wolfe
conditions and then narrows the bracket by cubic interpolation (ibid., algorithms 3.5 and 3.6).
"""
from __future__ import annotations

import math

from ..autograd import enable_grad, no_grad
from ..ops.creation import zeros
from ..ops.shape import cat
from . import _checks
from .optimizer import Optimizer, _to_float

__all__ = ["LBFGS"]


def _cubic_minimizer(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``
    (default: the interval between the points); the middle of the bounds when the cubic has no
    minimum."""
    if x1 > x2:  # the formula below takes the points in increasing order
        x1, f1, g1, x2, f2, g2 = x2, f2, g2, x1, f1, g1
    lo, hi = (x1, x2) if bounds is None else bounds
    slope_sum = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = slope_sum ** 2 - g1 * g2
    if not disc >= 0:  # no real minimum (or a NaN): the middle
        return (lo + hi) / 2.0
    root = math.sqrt(disc)
    guess = x2 - (x2 - x1) * ((g2 + root - slope_sum) / (g2 - g1 + 2 * root))
    return min(max(guess, lo), hi)


class _Trial:
    """One evaluated step length: ``t``, the loss ``f``, the flat gradient ``g`` and the slope
    ``gtd`` (the gradient along the search direction)."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _wolfe_search(probe, d, t, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step along ``d`` meeting the strong Wolfe conditions (sufficient decrease ``c1``,
    curvature ``c2``), starting from the trial step ``t``; ``probe(t)`` returns the loss and flat
    gradient there, (``f``, ``g``, ``gtd``) describe the start. Returns ``(loss, gradient, step,
    number of probes)``."""
    spread = d.abs().max().item()  # turns a step-length difference into a parameter change
    start = _Trial(0, f, g, gtd)
    probes = 0

    def try_step(step) -> _Trial:
        nonlocal probes
        probes += 1
        loss, grad = probe(step)
        return _Trial(step, loss, grad, grad.dot(d).item())

    def too_high(trial) -> bool:  # sufficient decrease fails
        return trial.f > f + c1 * trial.t * gtd

    def flat_enough(trial) -> bool:  # the strong curvature condition holds
        return abs(trial.gtd) <= -c2 * gtd

    # 1. grow the step until an interval is known to hold an acceptable one
    behind, ahead = start, try_step(t)
    rounds, found, pair = 0, False, None
    while rounds < max_ls:
        worse = too_high(ahead) or (rounds > 1 and ahead.f >= behind.f)
        if not worse and flat_enough(ahead):  # acceptable as it is
            found, pair = True, [ahead]
            break
        if worse or ahead.gtd >= 0:  # gone past a minimum
            pair = [behind, ahead]
            break
        reach = (ahead.t + 0.01 * (ahead.t - behind.t), ahead.t * 10)
        nxt = _cubic_minimizer(behind.t, behind.f, behind.gtd, ahead.t, ahead.f, ahead.gtd, bounds=reach)
        behind, ahead = ahead, try_step(nxt)
        rounds += 1
    if pair is None:  # out of probes: the interval from the start
        pair = [start, ahead]

    # 2. narrow the interval [pair[0], pair[1]] (best end: pair[best]) by cubic interpolation
    best = 0 if pair[0].f <= pair[-1].f else 1
    stalled = False
    while not found and rounds < max_ls:
        a, b = pair
        if abs(b.t - a.t) * spread < tolerance_change:
            break
        step = _cubic_minimizer(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        margin = 0.1 * (top - bottom)
        near_end = min(top - step, step - bottom) < margin
        if near_end and (stalled or not bottom < step < top):
            # a second step hugging an end (or one outside): move it a margin inside
            step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
            stalled = False
        else:
            stalled = near_end
        trial = try_step(step)
        rounds += 1
        other = 1 - best
        if too_high(trial) or trial.f >= pair[best].f:
            pair[other] = trial
            best = 0 if pair[0].f <= pair[1].f else 1
            continue
        if flat_enough(trial):
            found = True
        elif trial.gtd * (pair[other].t - pair[best].t) >= 0:
            pair[other] = pair[best]
        pair[best] = trial
    win = pair[best]
    return win.f, win.g, win.t, probes


def _two_loop(grad, ys, ss, rhos, scale: float, alphas: list):
    """``-H grad`` for the inverse-Hessian estimate of the pairs (``ys``, ``ss``, ``rhos``) over
    the diagonal ``scale``; ``alphas`` receives the first loop's coefficients (PyTorch's ``al``)."""
    q = grad.neg()
    for i in reversed(range(len(ys))):
        alphas[i] = ss[i].dot(q).item() * rhos[i]
        q.add_(ys[i], alpha=-alphas[i])
    out = q.mul(scale)
    for i, (y, s, rho) in enumerate(zip(ys, ss, rhos)):
        out.add_(s, alpha=alphas[i] - y.dot(out).item() * rho)
    return out


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
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_iter * 5 // 4 if max_eval is None else max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

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

    # -- the parameters as one flat vector ------------------------------------------------------
    def _flat_grad(self):
        """All gradients end to end (zeros for a parameter without one; sparse ones densified)."""
        parts = []
        for p in self._params:
            grad = p.grad
            if grad is None:
                parts.append(zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                parts.append((grad.to_dense() if grad.is_sparse else grad).reshape(-1))
        return cat(parts, 0)

    def _move(self, step: float, direction) -> None:
        """``params += step * direction``, the flat direction cut into the parameters' shapes."""
        start = 0
        for p in self._params:
            stop = start + p.numel()
            p.add_(direction[start:stop].view_as(p), alpha=step)
            start = stop

    def _probe(self, closure, origin: list, direction, step: float):
        """Loss and flat gradient at ``origin + step * direction``; the parameters are put back."""
        self._move(step, direction)
        loss = float(closure())
        grad = self._flat_grad()
        for p, saved in zip(self._params, origin):
            p.copy_(saved)
        return loss, grad

    def step(self, closure=None):
        """Run the L-BFGS iterations; ``closure`` (required) clears the gradients, evaluates the
        model, calls ``backward`` and returns the loss. Returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model and returns the loss")
        with no_grad():
            return self._run(enable_grad()(closure))

    def _run(self, closure):
        opts = self.param_groups[0]
        lr, ls_fn = _to_float(opts["lr"]), opts["line_search_fn"]
        max_iter, max_eval, memory = opts["max_iter"], opts["max_eval"], opts["history_size"]
        tol_grad, tol_change = opts["tolerance_grad"], opts["tolerance_change"]
        state = self.state[self._params[0]]
        for counter in ("func_evals", "n_iter"):
            state.setdefault(counter, 0)

        first_loss = closure()
        loss, grad = float(first_loss), self._flat_grad()
        state["func_evals"] += 1
        spent = 1  # closure calls in this step
        if grad.abs().max().item() <= tol_grad:  # already optimal
            return first_loss

        # what earlier steps left (PyTorch's state keys); scalars saved as tensors load too
        d, t, prev_grad, prev_loss = state.get("d"), state.get("t"), state.get("prev_flat_grad"), state.get("prev_loss")
        ys, ss, rhos, scale = state.get("old_dirs"), state.get("old_stps"), state.get("ro"), state.get("H_diag")
        t = None if t is None else float(t)
        scale = None if scale is None else float(scale)
        rhos = None if rhos is None else [float(r) for r in rhos]

        for it in range(1, max_iter + 1):
            state["n_iter"] += 1
            first_ever = state["n_iter"] == 1
            if first_ever:  # steepest descent, empty memory
                d, ys, ss, rhos, scale = grad.neg(), [], [], [], 1.0
            else:
                y, s = grad.sub(prev_grad), d.mul(t)
                curvature = y.dot(s).item()
                if curvature > 1e-10:  # a pair that keeps the estimate positive definite
                    if len(ys) == memory:
                        del ys[0], ss[0], rhos[0]
                    ys.append(y)
                    ss.append(s)
                    rhos.append(1.0 / curvature)
                    scale = curvature / y.dot(y).item()
                if "al" not in state:
                    state["al"] = [None] * memory
                d = _two_loop(grad, ys, ss, rhos, scale, state["al"])
            if prev_grad is None:
                prev_grad = grad.clone()
            else:
                prev_grad.copy_(grad)
            prev_loss = loss

            t = min(1.0, 1.0 / grad.abs().sum().item()) * lr if first_ever else lr
            slope = grad.dot(d).item()
            if slope > -tol_change:  # d does not go downhill
                break

            used, small_grad = 0, False
            if ls_fn is None:
                self._move(t, d)
                if it != max_iter:  # the last iteration's loss is left to the caller's next closure
                    loss, grad = float(closure()), self._flat_grad()
                    used, small_grad = 1, grad.abs().max().item() <= tol_grad
            elif ls_fn == "strong_wolfe":
                origin = [p.clone() for p in self._params]
                loss, grad, t, used = _wolfe_search(
                    lambda step: self._probe(closure, origin, d, step), d, t, loss, grad, slope,
                    max_ls=max_eval - spent)
                self._move(t, d)
                small_grad = grad.abs().max().item() <= tol_grad
            else:
                raise RuntimeError("only 'strong_wolfe' is supported")
            spent += used
            state["func_evals"] += used

            out_of_budget = it == max_iter or spent >= max_eval
            if out_of_budget or small_grad:
                break
            if d.mul(t).abs().max().item() <= tol_change or abs(loss - prev_loss) < tol_change:
                break  # neither the parameters nor the loss move any more

        state.update(d=d, t=t, old_dirs=ys, old_stps=ss, ro=rhos, H_diag=scale, prev_flat_grad=prev_grad,
                     prev_loss=prev_loss)
        return first_loss
