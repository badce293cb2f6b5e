"""Fused optimizer updates: SGD (with momentum) and Adam/AdamW.

Each kernel updates a whole parameter group in place, with scratch buffers of one run of
:attr:`Optim.block` elements instead of one new tensor per ember op, and walks a contiguous
parameter run by run so that its arrays stay in cache through all the passes of the update. The
arithmetic is the decomposition's (:mod:`ember.ops.optim`), operation for operation and in the same
rounding order, so the fused and the plain paths give bit-identical trajectories; 16-bit floats
(which ember computes op by op in float32) take the decomposition itself. A backend that keeps
step counters elsewhere (cuda_cupy counts them on the host) overrides :meth:`Optim.count_step`.
"""
from __future__ import annotations

import numpy as np

from ember.backend import mark_written
from ember.ops import optim as reference

from .base import KernelGroup

_FAST = (np.dtype(np.float32), np.dtype(np.float64))


class Optim(KernelGroup):
    """``_fused_sgd_`` and ``_fused_adam_``."""

    #: SGD and Adam update a contiguous parameter in runs of this many elements: the arrays of a
    #: 64K-element float32 run (256 KB each) stay in L2 through the update's passes, where whole
    #: 4 MB arrays go out to memory on every pass (Adam on 1M parameters 3.1 -> 1.9 ms). None:
    #: whole arrays (a GPU wants one launch per pass).
    block: int | None = 65536

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
        new_grad = maximize or weight_decay != 0 or (momentum != 0 and nesterov)
        for i, p in enumerate(params):
            arrays = [nd(p), nd(grads[i])]
            if momentum != 0:  # (momentum_buffers and first_step are empty without momentum)
                arrays.append(nd(momentum_buffers[i]))
            fresh_buffer = momentum != 0 and first_step[i]
            blocks, scratch_like = self._blocks(arrays)
            # scratch: products, and the gradient the update uses when it is not the caller's
            scratch = [xp.empty_like(scratch_like) for _ in range(2 if new_grad else 1)]
            for block in blocks:
                self._sgd_block(block, self._cut(scratch, block[0]), fresh_buffer, lr, weight_decay, momentum,
                                dampening, nesterov, maximize)
            if momentum != 0:
                mark_written(momentum_buffers[i])
            mark_written(p)
        return None

    def _sgd_block(self, arrays, scratch, fresh_buffer, lr, weight_decay, momentum, dampening, nesterov, maximize):
        """One run of SGD, in the decomposition's operations and rounding."""
        xp = self.xp
        a, g = arrays[:2]
        tmp = scratch[0]
        if maximize or weight_decay != 0:
            g = self._decayed_grad(a, g, scratch[1], tmp, weight_decay, maximize)
        if momentum != 0:
            buf = arrays[2]
            if fresh_buffer:
                xp.copyto(buf, g)
            else:
                xp.multiply(buf, momentum, out=buf)
                self._add_scaled(buf, g, 1 - dampening, tmp)
            if nesterov:  # g + momentum * buf
                xp.multiply(buf, momentum, out=tmp)
                xp.add(g, tmp, out=scratch[1])
                g = scratch[1]
            else:
                g = buf
        self._add_scaled(a, g, -lr, tmp)

    def _decayed_grad(self, a, g, out, tmp, weight_decay, maximize):
        """The gradient an update uses, into ``out``: negated for ``maximize``, plus
        ``weight_decay * a`` (the decomposition's ``g.add(p, alpha=weight_decay)``)."""
        xp = self.xp
        if maximize:
            xp.negative(g, out=out)
        else:
            xp.copyto(out, g)
        if weight_decay != 0:
            xp.multiply(a, weight_decay, out=tmp)
            xp.add(out, tmp, out=out)
        return out

    @staticmethod
    def _cut(scratch, run):
        """The scratch arrays cut to the length of ``run`` (the last, shorter run of a parameter);
        a whole-array or 0-d run uses them as they are."""
        if run.ndim == 0 or run.shape[0] == scratch[0].shape[0]:
            return scratch
        return [x[:run.shape[0]] for x in scratch]

    def fused_adam(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay,
                   eps, amsgrad, maximize, decoupled_weight_decay):
        xp, nd = self.xp, self.nd
        if any(nd(p).dtype not in _FAST for p in params):
            return reference.adam_update(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1,
                                         beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
        for i, p in enumerate(params):
            a = nd(p)
            arrays = [a, nd(grads[i]), nd(exp_avgs[i]), nd(exp_avg_sqs[i])]
            if amsgrad:
                arrays.append(nd(max_exp_avg_sqs[i]))
            step = self.count_step(steps[i])
            if weight_decay != 0 and decoupled_weight_decay:
                xp.multiply(a, 1 - lr * weight_decay, out=a)
            coupled_decay = weight_decay if not decoupled_weight_decay else 0
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            blocks, scratch_like = self._blocks(arrays)
            # scratch: the denominator, the scaled numerator, and the gradient when it is changed
            scratch = [xp.empty_like(scratch_like) for _ in range(3 if maximize or coupled_decay else 2)]
            for block in blocks:
                self._adam_block(block, self._cut(scratch, block[0]), beta1, beta2, coupled_decay, eps, step_size,
                                 bias_correction2_sqrt, maximize)
            mark_written(p, exp_avgs[i], exp_avg_sqs[i])
            if amsgrad:
                mark_written(max_exp_avg_sqs[i])
        return None

    def _blocks(self, arrays):
        """Cut same-shaped arrays into runs of :attr:`block` elements (all C-contiguous), else
        one run of the whole arrays; returns (runs, an array shaped like one run's scratch)."""
        a = arrays[0]
        if self.block is None or a.size <= self.block or not all([x.flags.c_contiguous for x in arrays]):
            return [arrays], a
        flat = [x.reshape(-1) for x in arrays]
        runs = [[x[i:i + self.block] for x in flat] for i in range(0, a.size, self.block)]
        return runs, flat[0][:self.block]

    def _adam_block(self, arrays, scratch, beta1, beta2, weight_decay, eps, step_size, bias_correction2_sqrt,
                    maximize):
        """One run of Adam, in the decomposition's operations and rounding (addcdiv's order:
        ``p + (-step_size * m) / denom``, PyTorch's)."""
        xp = self.xp
        a, g, m, v = arrays[:4]
        tmp, num = scratch[:2]
        if maximize or weight_decay != 0:
            g = self._decayed_grad(a, g, scratch[2], tmp, weight_decay, maximize)
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
        if len(arrays) > 4:  # amsgrad: the running maximum of v is the one used
            xp.maximum(arrays[4], v, out=arrays[4])
            v = arrays[4]
        xp.sqrt(v, out=tmp)
        xp.true_divide(tmp, bias_correction2_sqrt, out=tmp)
        xp.add(tmp, eps, out=tmp)
        if -step_size != 1:
            xp.multiply(m, -step_size, out=num)
        else:
            xp.copyto(num, m)
        xp.true_divide(num, tmp, out=num)
        xp.add(a, num, out=a)

    def table(self) -> dict:
        return {"_fused_sgd_": self.fused_sgd, "_fused_adam_": self.fused_adam}
