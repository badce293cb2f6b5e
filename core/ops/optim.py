"""Optimizer update ops: one multi-tensor op per optimizer, ``_fused_<name>_``.

Each op updates, in place, every parameter of a list together with its optimizer state, with
PyTorch's exact update formula (the single-tensor form of ``torch.optim``). The decomposition
below *is* the plain implementation, written in ember ops, so every backend runs it; a backend
may register a native kernel under the op's name (docs/design.md, the backend contract: fused
optimizer updates) and ``ember.optim`` then calls it instead. A kernel must produce the same
values as the decomposition, bump the version counter of every tensor it writes, and increment
the 0-d ``steps`` counters itself (they are part of the state it owns).

Arguments are positional, in the order of each function's signature: lists (tuples) of tensors,
then python scalars. ``lr`` and the other hyperparameters are python floats (the optimizer turns
a 1-element tensor ``lr`` into a float before calling). No op records autograd history
(``differentiable=False``): optimizers call them under ``no_grad``; ``differentiable=True``
optimizers call the decomposition directly with grad mode on.
"""
from __future__ import annotations

from .. import _state
from .registry import register_op
from . import arithmetic as A
from . import pointwise as PW

_grad = _state.grad


def _neg_if(g, maximize: bool):
    return g.neg() if maximize else g


def _kept(p):
    """``p`` as an operand of an op that autograd may save: a copy under grad mode, since ``p`` is
    about to be updated in place (only ``differentiable=True`` optimizers run with grad mode on)."""
    return p.clone() if _grad.enabled else p


def _tmp(x, name: str, *args):
    """``x.<name>_(*args)`` on a temporary ``x``; out of place when grad mode is on (an optimizer
    with ``differentiable=True``), where autograd may have saved ``x`` for the backward pass."""
    return getattr(x, name if _grad.enabled else name + "_")(*args)


# -- SGD -------------------------------------------------------------------------------------

def sgd_update(params, grads, momentum_buffers, first_step, lr: float, weight_decay: float, momentum: float,
               dampening: float, nesterov: bool, maximize: bool) -> None:
    """SGD with momentum/dampening/nesterov. ``momentum_buffers`` (empty when momentum is 0) are
    allocated by the caller; where ``first_step[i]`` the buffer takes the (decayed) gradient."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        if weight_decay != 0:
            g = g.add(_kept(p), alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffers[i]
            if first_step[i]:
                buf.copy_(g)
            else:
                buf.mul_(momentum).add_(g, alpha=1 - dampening)
            g = g.add(buf, alpha=momentum) if nesterov else buf
        p.add_(g, alpha=-lr)


# -- Adam / AdamW ---------------------------------------------------------------------------------

def adam_update(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr: float, beta1: float,
                beta2: float, weight_decay: float, eps: float, amsgrad: bool, maximize: bool,
                decoupled_weight_decay: bool) -> None:
    """Adam (``decoupled_weight_decay=True``: AdamW); ``max_exp_avg_sqs`` is empty unless amsgrad."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        exp_avg, exp_avg_sq = exp_avgs[i], exp_avg_sqs[i]
        steps[i].add_(1)
        step = steps[i].item()
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(_kept(p), alpha=weight_decay)
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        step_size = lr / bias_correction1
        if amsgrad:
            m = max_exp_avg_sqs[i]
            _maximum_into(m, exp_avg_sq)
            denom = _tmp(m.sqrt() / bias_correction2_sqrt, "add", eps)
        else:
            denom = _tmp(exp_avg_sq.sqrt() / bias_correction2_sqrt, "add", eps)
        p.addcdiv_(exp_avg, denom, value=-step_size)


def _maximum_into(dst, other) -> None:
    if _grad.enabled:
        dst.copy_(A.maximum(dst.clone(), other))
    else:
        A.maximum(dst, other, out=dst)


# -- Adamax ---------------------------------------------------------------------------------------

def adamax_update(params, grads, exp_avgs, exp_infs, steps, lr: float, beta1: float, beta2: float,
                  weight_decay: float, eps: float, maximize: bool) -> None:
    """Adamax: Adam with the infinity norm."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        exp_avg, exp_inf = exp_avgs[i], exp_infs[i]
        steps[i].add_(1)
        step = steps[i].item()
        if weight_decay != 0:
            g = g.add(_kept(p), alpha=weight_decay)
        exp_avg.lerp_(g, 1 - beta1)
        exp_inf.mul_(beta2)
        _maximum_into(exp_inf, _tmp(g.abs(), "add", eps))
        clr = lr / (1 - beta1 ** step)
        p.addcdiv_(exp_avg, exp_inf, value=-clr)


# -- NAdam ----------------------------------------------------------------------------------------

def nadam_update(params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, lr: float, beta1: float,
                 beta2: float, weight_decay: float, momentum_decay: float, eps: float,
                 decoupled_weight_decay: bool, maximize: bool) -> None:
    """NAdam (Dozat 2016) with PyTorch's momentum schedule ``mu_t = beta1 (1 - 0.5 * 0.96^(t psi))``;
    ``mu_products`` are 0-d tensors holding the running product of ``mu_t``."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        exp_avg, exp_avg_sq, mu_product = exp_avgs[i], exp_avg_sqs[i], mu_products[i]
        steps[i].add_(1)
        step = steps[i].item()
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(_kept(p), alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product.mul_(mu)
        mu_prod = mu_product.item()
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = _tmp(exp_avg_sq.div(bias_correction2).sqrt(), "add", eps)
        mu_product_next = mu_prod * mu_next
        p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mu_prod))
        p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))


# -- RAdam ----------------------------------------------------------------------------------------

def radam_update(params, grads, exp_avgs, exp_avg_sqs, steps, lr: float, beta1: float, beta2: float,
                 weight_decay: float, eps: float, decoupled_weight_decay: bool, maximize: bool) -> None:
    """RAdam: Adam whose adaptive term is switched on (and rectified) once the variance of the
    adaptive learning rate is tractable (``rho_t > 5``)."""
    rho_inf = 2 / (1 - beta2) - 1
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        exp_avg, exp_avg_sq = exp_avgs[i], exp_avg_sqs[i]
        steps[i].add_(1)
        step = steps[i].item()
        if weight_decay != 0:
            if decoupled_weight_decay:
                p.mul_(1 - lr * weight_decay)
            else:
                g = g.add(_kept(p), alpha=weight_decay)
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / _tmp(exp_avg_sq.sqrt(), "add", eps)
            p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


# -- Adagrad --------------------------------------------------------------------------------------

def adagrad_update(params, grads, state_sums, steps, lr: float, weight_decay: float, lr_decay: float,
                   eps: float, maximize: bool) -> None:
    """Adagrad with learning-rate decay ``lr / (1 + (t - 1) lr_decay)``."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        steps[i].add_(1)
        step = steps[i].item()
        if weight_decay != 0:
            g = g.add(_kept(p), alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        s = state_sums[i]
        s.addcmul_(g, g, value=1)
        std = _tmp(s.sqrt(), "add", eps)
        p.addcdiv_(g, std, value=-clr)


# -- RMSprop --------------------------------------------------------------------------------------

def rmsprop_update(params, grads, square_avgs, grad_avgs, momentum_buffers, steps, lr: float, alpha: float,
                   eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """RMSprop; ``grad_avgs`` is empty unless centered, ``momentum_buffers`` unless momentum > 0."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        steps[i].add_(1)
        if weight_decay != 0:
            g = g.add(_kept(p), alpha=weight_decay)
        square_avg = square_avgs[i]
        square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(g, 1 - alpha)
            avg = _tmp(square_avg.addcmul(grad_avg, grad_avg, value=-1), "sqrt")
        else:
            avg = square_avg.sqrt()
        avg = _tmp(avg, "add", eps)
        if momentum > 0:
            buf = momentum_buffers[i]
            buf.mul_(momentum).addcdiv_(g, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(g, avg, value=-lr)


# -- Adadelta -------------------------------------------------------------------------------------

def adadelta_update(params, grads, square_avgs, acc_deltas, steps, lr: float, rho: float, eps: float,
                    weight_decay: float, maximize: bool) -> None:
    """Adadelta (Zeiler 2012), scaled by ``lr``."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        steps[i].add_(1)
        if weight_decay != 0:
            g = g.add(_kept(p), alpha=weight_decay)
        square_avg, acc_delta = square_avgs[i], acc_deltas[i]
        square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
        std = _tmp(square_avg.add(eps), "sqrt")
        delta = _tmp(_tmp(_tmp(acc_delta.add(eps), "sqrt"), "div", std), "mul", g)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-lr)


# -- Rprop ----------------------------------------------------------------------------------------

def rprop_update(params, grads, prevs, step_sizes, steps, etaminus: float, etaplus: float, step_size_min: float,
                 step_size_max: float, maximize: bool) -> None:
    """Rprop: per-element step sizes grow by ``etaplus`` while the gradient keeps its sign and
    shrink by ``etaminus`` when it flips (that step is then skipped)."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        prev, step_size = prevs[i], step_sizes[i]
        steps[i].add_(1)
        prod = g.mul(prev)
        sign = prod.sign()
        # in PyTorch's order, so that NaN signs stay NaN
        sign = PW.where(sign.gt(0), etaplus, sign)
        sign = PW.where(sign.lt(0), etaminus, sign)
        sign = PW.where(sign.eq(0), 1.0, sign)
        step_size.mul_(sign).clamp_(step_size_min, step_size_max)
        g = PW.where(prod.lt(0), 0.0, g)  # the sign flipped: no step, and no flip test next time
        p.addcmul_(g.sign(), step_size, value=-1)
        prev.copy_(g)


# -- ASGD -----------------------------------------------------------------------------------------

def asgd_update(params, grads, axs, mus, etas, steps, lr: float, lambd: float, alpha: float, t0: float,
                weight_decay: float, maximize: bool) -> None:
    """Averaged SGD; ``etas`` and ``mus`` are 0-d tensors (the current step size and averaging
    weight), ``axs`` the running averages."""
    for i, p in enumerate(params):
        g = _neg_if(grads[i], maximize)
        mu, ax, eta = mus[i], axs[i], etas[i]
        steps[i].add_(1)
        step = steps[i].item()
        if weight_decay != 0:
            g = g.add(_kept(p), alpha=weight_decay)
        eta_value = eta.item()
        p.mul_(1 - lambd * eta_value)
        p.add_(g, alpha=-eta_value)
        mu_value = mu.item()
        if mu_value != 1:
            ax.add_(p.sub(ax).mul_(mu_value))
        else:
            ax.copy_(p)
        eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
        mu.fill_(1 / max(1, step - t0))


# -- registration ---------------------------------------------------------------------------------

def _register(name, fn):
    return register_op(f"_fused_{name}_", decomposition=fn, differentiable=False, group="optim", doc=fn.__doc__)


FUSED = {name: _register(name, fn) for name, fn in (
    ("sgd", sgd_update), ("adam", adam_update), ("adamax", adamax_update), ("nadam", nadam_update),
    ("radam", radam_update), ("adagrad", adagrad_update), ("rmsprop", rmsprop_update),
    ("adadelta", adadelta_update), ("rprop", rprop_update), ("asgd", asgd_update))}
