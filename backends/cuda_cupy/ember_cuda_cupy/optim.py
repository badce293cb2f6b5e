"""Fused Adam/AdamW for cuda. The shared numpy kernel reads its step counter on the device; here,
as in PyTorch, the step lives on the host (a cpu tensor) and is counted there, so an optimizer
step queues GPU work only and never waits for the GPU. The arithmetic is cpu_numpy's (and so the
decomposition's), operation for operation; 16-bit floats take the decomposition."""
from __future__ import annotations

import numpy as np

from ember.ops import optim as _ref

from .arrays import cp, nd

_FAST = (np.dtype(np.float32), np.dtype(np.float64))


def _bump(*tensors) -> None:
    for t in tensors:
        t._version[0] += 1


def _step(t) -> float:
    """Add one to a step counter (a cpu tensor: on the host, no GPU wait) and return it."""
    if t._device._type == "cpu":
        a = t._host()
        a += 1
        t._version[0] += 1
        return float(a)
    a = nd(t)
    cp.add(a, 1, out=a)
    t._version[0] += 1
    return float(a)  # a step counter on the GPU costs one read back per step


def k_fused_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay, eps,
                 amsgrad, maximize, decoupled_weight_decay):
    if any(nd(p).dtype not in _FAST for p in params):
        return _ref.adam_update(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2,
                                weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
    for i, p in enumerate(params):
        a = nd(p)
        g = cp.negative(nd(grads[i])) if maximize else nd(grads[i])
        m, v = nd(exp_avgs[i]), nd(exp_avg_sqs[i])
        step = _step(steps[i])
        tmp = cp.empty_like(a)
        if weight_decay != 0:
            if decoupled_weight_decay:
                cp.multiply(a, 1 - lr * weight_decay, out=a)
            else:
                cp.multiply(a, weight_decay, out=tmp)
                g = cp.add(g, tmp)
        cp.subtract(g, m, out=tmp)
        cp.multiply(tmp, 1 - beta1, out=tmp)
        cp.add(m, tmp, out=m)
        cp.multiply(v, beta2, out=v)
        cp.multiply(g, g, out=tmp)
        if 1 - beta2 != 1:
            cp.multiply(tmp, 1 - beta2, out=tmp)
        cp.add(v, tmp, out=v)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        step_size = lr / bias_correction1
        if amsgrad:
            vmax = nd(max_exp_avg_sqs[i])
            cp.maximum(vmax, v, out=vmax)
            _bump(max_exp_avg_sqs[i])
            v_use = vmax
        else:
            v_use = v
        cp.sqrt(v_use, out=tmp)
        cp.true_divide(tmp, bias_correction2_sqrt, out=tmp)
        cp.add(tmp, eps, out=tmp)
        cp.true_divide(m, tmp, out=tmp)
        cp.multiply(tmp, -step_size, out=tmp)
        cp.add(a, tmp, out=a)
        _bump(p, exp_avgs[i], exp_avg_sqs[i])
    return None


KERNELS = {"_fused_adam_": k_fused_adam}
