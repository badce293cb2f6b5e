"""Fused optimizer updates: SGD (with momentum) and Adam/AdamW.

Each kernel updates a whole parameter group in place, with one scratch buffer per parameter
instead of one new tensor per ember op. The arithmetic is the decomposition's
(:mod:`ember.ops.optim`), operation for operation, so the fused and the plain paths give
bit-identical trajectories; 16-bit floats (which ember computes op by op in float32) take the
decomposition itself. A backend that keeps step counters elsewhere (cuda_cupy counts them on the
host) overrides :meth:`Optim.count_step`.
"""
from __future__ import annotations

import numpy as np

from ember.backend import mark_written
from ember.ops import optim as reference

from .base import KernelGroup

_FAST = (np.dtype(np.float32), np.dtype(np.float64))


class Optim(KernelGroup):
    """``_fused_sgd_`` and ``_fused_adam_``."""

    def count_step(self, t) -> float:
        """Add one to step counter ``t`` (a one-element tensor) and return the new count."""
        a = self.nd(t)
        self.xp.add(a, 1, out=a)
        mark_written(t)
        return float(a)

    def _add_scaled(self, dst, src, alpha, tmp):
        """``dst += alpha * src`` as ember's ``add_(src, alpha=alpha)`` computes it."""
        xp = self.xp
        if alpha != 1:
            xp.multiply(src, alpha, out=tmp)
            xp.add(dst, tmp, out=dst)
        else:
            xp.add(dst, src, out=dst)

    def fused_sgd(self, params, grads, momentum_buffers, first_step, lr, weight_decay, momentum, dampening, nesterov,
                  maximize):
        xp, nd = self.xp, self.nd
        if any(nd(p).dtype not in _FAST for p in params):
            return reference.sgd_update(params, grads, momentum_buffers, first_step, lr, weight_decay, momentum,
                                        dampening, nesterov, maximize)
        for i, p in enumerate(params):
            a = nd(p)
            g = xp.negative(nd(grads[i])) if maximize else nd(grads[i])
            tmp = xp.empty_like(a)
            if weight_decay != 0:
                xp.multiply(a, weight_decay, out=tmp)
                g = xp.add(g, tmp)
            if momentum != 0:
                buf_t = momentum_buffers[i]
                buf = nd(buf_t)
                if first_step[i]:
                    xp.copyto(buf, g)
                else:
                    xp.multiply(buf, momentum, out=buf)
                    self._add_scaled(buf, g, 1 - dampening, tmp)
                mark_written(buf_t)
                if nesterov:
                    xp.multiply(buf, momentum, out=tmp)
                    g = xp.add(g, tmp)
                else:
                    g = buf
            self._add_scaled(a, g, -lr, tmp)
            mark_written(p)
        return None

    def fused_adam(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay,
                   eps, amsgrad, maximize, decoupled_weight_decay):
        xp, nd = self.xp, self.nd
        if any(nd(p).dtype not in _FAST for p in params):
            return reference.adam_update(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1,
                                         beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
        for i, p in enumerate(params):
            a = nd(p)
            g = xp.negative(nd(grads[i])) if maximize else nd(grads[i])
            m, v = nd(exp_avgs[i]), nd(exp_avg_sqs[i])
            step = self.count_step(steps[i])
            tmp = xp.empty_like(a)
            if weight_decay != 0:
                if decoupled_weight_decay:
                    xp.multiply(a, 1 - lr * weight_decay, out=a)
                else:
                    xp.multiply(a, weight_decay, out=tmp)
                    g = xp.add(g, tmp)
            # m = lerp(m, g, 1 - beta1) = m + (1 - beta1) * (g - m)
            xp.subtract(g, m, out=tmp)
            xp.multiply(tmp, 1 - beta1, out=tmp)
            xp.add(m, tmp, out=m)
            # v = beta2 * v + (1 - beta2) * g * g
            xp.multiply(v, beta2, out=v)
            xp.multiply(g, g, out=tmp)
            if 1 - beta2 != 1:
                xp.multiply(tmp, 1 - beta2, out=tmp)
            xp.add(v, tmp, out=v)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            step_size = lr / bias_correction1
            if amsgrad:
                vmax = nd(max_exp_avg_sqs[i])
                xp.maximum(vmax, v, out=vmax)
                mark_written(max_exp_avg_sqs[i])
                v_use = vmax
            else:
                v_use = v
            xp.sqrt(v_use, out=tmp)
            xp.true_divide(tmp, bias_correction2_sqrt, out=tmp)
            xp.add(tmp, eps, out=tmp)
            # p += -step_size * m / denom
            xp.true_divide(m, tmp, out=tmp)
            self._add_scaled(a, tmp, -step_size, tmp)
            mark_written(p, exp_avgs[i], exp_avg_sqs[i])
        return None

    def table(self) -> dict:
        return {"_fused_sgd_": self.fused_sgd, "_fused_adam_": self.fused_adam}
