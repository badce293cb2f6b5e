"""A custom autograd Function: a linear layer with a hand-written backward, checked by gradcheck.

    python examples/custom_function.py            # gradcheck, gradgradcheck, then a short fit
    python examples/custom_function.py --smoke    # the same, smaller; fails unless the loss fell

``LinearFunction`` computes ``y = x @ W.T + b`` in ``forward`` and returns the three gradients
in ``backward``. ``gradcheck`` compares them with central finite differences in float64;
because ``backward`` is itself written in ember ops, the gradients are differentiable too and
``gradgradcheck`` passes. ``Linear`` wraps the Function in a module, and a few steps of SGD on
it are checked against the built-in ``nn.Linear`` from the same starting weights.
"""
from __future__ import annotations

import argparse
import math
import sys

import ember
import ember.nn as nn
from ember.autograd import Function, gradcheck, gradgradcheck


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight, bias)
        y = x @ weight.t()
        if bias is not None:
            y = y + bias
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight, bias = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        # needs_input_grad says which inputs want a gradient: skip the work for the others.
        if ctx.needs_input_grad[0]:
            grad_x = grad_y @ weight
        if ctx.needs_input_grad[1]:
            # x may have extra leading dims (batch, time, ...): fold them into one
            grad_w = grad_y.reshape(-1, grad_y.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
        if bias is not None and ctx.needs_input_grad[2]:
            grad_b = grad_y.reshape(-1, grad_y.shape[-1]).sum(0)
        return grad_x, grad_w, grad_b


class Linear(nn.Module):
    """``nn.Linear``'s parameters and initialisation, with the maths done by LinearFunction."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__()
        reference = nn.Linear(in_features, out_features, bias=bias)  # borrow its initialisation
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(reference.weight.detach().clone())
        self.bias = nn.Parameter(reference.bias.detach().clone()) if bias else None

    def forward(self, x):
        return LinearFunction.apply(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def check_gradients() -> None:
    ember.manual_seed(0)
    x = ember.randn(5, 3, 4, dtype=ember.float64, requires_grad=True)   # (batch, time, features)
    w = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(LinearFunction.apply, (x, w, b), eps=1e-6, atol=1e-6)
    assert gradgradcheck(LinearFunction.apply, (x, w, b))
    assert gradcheck(LinearFunction.apply, (x, w))  # without the bias
    print("gradcheck and gradgradcheck passed (float64, with and without bias, 3-d input)")

    # gradcheck catches a wrong formula: here the bias gradient is off by a factor of two
    class WrongBias(LinearFunction):
        @staticmethod
        def backward(ctx, grad_y):
            gx, gw, gb = LinearFunction.backward(ctx, grad_y)
            return gx, gw, 2 * gb
    assert not gradcheck(WrongBias.apply, (x, w, b), raise_exception=False)
    print("gradcheck rejects a backward whose bias gradient is doubled")

    # needs_input_grad: a frozen weight gets no gradient, and its product is never computed
    w_frozen = w.detach()
    LinearFunction.apply(x, w_frozen, b).sum().backward()
    assert w_frozen.grad is None and x.grad is not None and b.grad is not None


def fit(steps: int) -> tuple[float, float]:
    """A few SGD steps with our Linear and with nn.Linear from the same weights: the losses must
    agree to rounding, and fall."""
    ember.manual_seed(1)
    x = ember.randn(64, 8)
    y = x @ ember.randn(8, 3) + 0.1 * ember.randn(64, 3)
    ours = nn.Sequential(Linear(8, 16), nn.Tanh(), Linear(16, 3))
    builtin = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    builtin.load_state_dict(ours.state_dict())  # same parameter names, so the state dicts match
    print(ours)
    losses = []
    for model in (ours, builtin):
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        history = []
        for _ in range(steps):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(loss.item())
        losses.append(history)
    worst = max(abs(a - b) for a, b in zip(*losses))
    assert worst < 1e-4, f"custom and built-in Linear disagree by {worst}"
    first, last = losses[0][0], losses[0][-1]
    print(f"{steps} SGD steps: loss {first:.4f} -> {last:.4f} (nn.Linear from the same start: "
          f"{losses[1][-1]:.4f}; largest difference {worst:.1e})")
    return first, last


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="fewer steps; fails unless the loss fell")
    args = p.parse_args(argv)
    check_gradients()
    first, last = fit(steps=20 if args.smoke else 200)
    if not (math.isfinite(last) and last < first):
        print(f"FAILED: the loss went from {first:.4f} to {last:.4f}", file=sys.stderr)
        return 1
    if args.smoke:
        print(f"smoke test passed: loss fell from {first:.4f} to {last:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
