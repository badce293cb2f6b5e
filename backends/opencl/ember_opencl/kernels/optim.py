"""Fused optimizer updates (``_fused_sgd_``, ``_fused_adam_``, see :mod:`ember.ops.optim`): one
kernel per parameter doing the whole update in place, instead of one launch per ember op of the
decomposition. The arithmetic follows the decomposition step by step (values agree to rounding).
Parameters that are not float32/float64 or not contiguous, or whose gradient/state differ in
layout, go through the decomposition.
"""
from __future__ import annotations

import functools

from ember.backend import mark_written
from ember.ops import optim as _ref

from . import tensors as tn
from .args import Args
from .types import T, preamble

_FAST = ("float32", "float64")


def _fits(*tensors) -> bool:
    t0 = tensors[0]
    if t0._dtype.name not in _FAST:
        return False
    for t in tensors:
        if t._dtype is not t0._dtype or t._shape != t0._shape or not t.is_contiguous() or t._device is not t0._device:
            return False
    return True


@functools.lru_cache(maxsize=None)
def _sgd_args(t) -> Args:
    """``n`` elements; the offsets of the parameter, its gradient and its momentum buffer; the
    hyperparameters (``damp`` is 1 - dampening) in the parameter's type."""
    return (Args().long("n", "off_p", "off_g", "off_b")
            .scalar("lr", t).scalar("wd", t).scalar("momentum", t).scalar("damp", t))


def _sgd_src(t, flags):
    maximize, wd, momentum, first, nesterov = flags
    c = t.ct
    lines = [preamble(t), _sgd_args(t).struct(),
             f"__kernel void sgd(__global {c}* p, const __global {c}* gr, __global {c}* buf, const M m) {{",
             "  long i = get_global_id(0); if (i >= m.n) return;",
             f"  {c} lr = m.lr, wd = m.wd, mo = m.momentum, damp = m.damp;",
             "  long ip = m.off_p + i, ig = m.off_g + i, ib = m.off_b + i;",
             f"  {c} g = gr[ig];"]
    if maximize:
        lines.append("  g = -g;")
    if wd:
        lines.append("  g = g + wd * p[ip];")
    if momentum:
        if first:
            lines.append("  buf[ib] = g;")
        else:
            lines.append("  buf[ib] = buf[ib] * mo + damp * g;")
        lines.append("  g = g + mo * buf[ib];" if nesterov else "  g = buf[ib];")
    lines.append("  p[ip] = p[ip] + (-lr) * g;")
    lines.append("}")
    return "\n".join(lines) + "\n", "sgd"


def k_fused_sgd(params, grads, momentum_buffers, first_step, lr, weight_decay, momentum, dampening, nesterov,
                maximize):
    for i, p in enumerate(params):
        buf = momentum_buffers[i] if momentum != 0 else None
        ops = (p, grads[i]) + ((buf,) if buf is not None else ())
        if not _fits(*ops):
            _ref.sgd_update([p], [grads[i]], [buf] if buf is not None else [], list(first_step[i:i + 1]), lr,
                            weight_decay, momentum, dampening, nesterov, maximize)
            continue
        n = p.numel()
        if n == 0:
            continue
        cd = tn.cl_dev(p)
        t = T(p._dtype)
        flags = (bool(maximize), weight_decay != 0, momentum != 0, bool(first_step[i]) if momentum != 0 else False,
                 bool(nesterov))
        b = buf if buf is not None else p
        meta = _sgd_args(t).pack(n=n, off_p=p._offset, off_g=grads[i]._offset, off_b=b._offset, lr=lr,
                                 wd=weight_decay, momentum=momentum, damp=1 - dampening)
        k = cd.kernel(("fused_sgd", t.name, flags), lambda: _sgd_src(t, flags))
        tn.launch_1d(cd, k, n, (p, grads[i], b), meta)
        mark_written(p)
        if buf is not None:
            mark_written(buf)
    return None


@functools.lru_cache(maxsize=None)
def _adam_args(t) -> Args:
    """``n`` elements; the offsets of the parameter, its gradient, the two moments and the
    running maximum (amsgrad); the hyperparameters in the parameter's type (``step_size`` is
    lr / bias_correction1, ``bc2`` the square root of bias_correction2)."""
    A = Args().long("n", "off_p", "off_g", "off_m", "off_v", "off_x")
    for name in ("lr", "beta1", "beta2", "wd", "eps", "step_size", "bc2"):
        A.scalar(name, t)
    return A


def _adam_src(t, flags):
    maximize, wd, decoupled, amsgrad = flags
    c = t.ct
    lines = [preamble(t), _adam_args(t).struct(),
             f"__kernel void adam(__global {c}* p, const __global {c}* gr, __global {c}* ea, __global {c}* eq, "
             f"__global {c}* mx, const M m) {{",
             "  long i = get_global_id(0); if (i >= m.n) return;",
             f"  {c} lr = m.lr, b1 = m.beta1, b2 = m.beta2, wd = m.wd, eps = m.eps, ss = m.step_size, bc2 = m.bc2;",
             "  long ip = m.off_p + i, ig = m.off_g + i, im = m.off_m + i, iv = m.off_v + i, ix = m.off_x + i;",
             f"  {c} g = gr[ig]; {c} pv = p[ip];"]
    if maximize:
        lines.append("  g = -g;")
    if wd:
        lines.append("  pv = pv * (1 - lr * wd);" if decoupled else "  g = g + wd * pv;")
    lines += [f"  {c} mv = ea[im]; mv = mv + (1 - b1) * (g - mv); ea[im] = mv;",
              f"  {c} vv = eq[iv]; vv = vv * b2 + (1 - b2) * (g * g); eq[iv] = vv;"]
    if amsgrad:
        lines.append(f"  {c} vm = mx[ix]; vm = vm > vv ? vm : vv; mx[ix] = vm; vv = vm;")
    lines += ["  p[ip] = pv + ((-ss) * mv) / (sqrt(vv) / bc2 + eps);", "}"]
    return "\n".join(lines) + "\n", "adam"


def k_fused_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay, eps,
                 amsgrad, maximize, decoupled_weight_decay):
    for i, p in enumerate(params):
        vmax = max_exp_avg_sqs[i] if amsgrad else None
        ops = (p, grads[i], exp_avgs[i], exp_avg_sqs[i]) + ((vmax,) if vmax is not None else ())
        if not _fits(*ops):
            _ref.adam_update([p], [grads[i]], [exp_avgs[i]], [exp_avg_sqs[i]], [vmax] if vmax is not None else [],
                             [steps[i]], lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
            continue
        steps[i].add_(1)  # the 0-d counter (on the host when a cpu backend is installed)
        step = steps[i].item()
        n = p.numel()
        if n == 0:
            continue
        cd = tn.cl_dev(p)
        t = T(p._dtype)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        flags = (bool(maximize), weight_decay != 0, bool(decoupled_weight_decay), bool(amsgrad))
        x = vmax if vmax is not None else p
        meta = _adam_args(t).pack(n=n, off_p=p._offset, off_g=grads[i]._offset, off_m=exp_avgs[i]._offset,
                                  off_v=exp_avg_sqs[i]._offset, off_x=x._offset, lr=lr, beta1=beta1, beta2=beta2,
                                  wd=weight_decay, eps=eps, step_size=lr / bias_correction1, bc2=bias_correction2_sqrt)
        k = cd.kernel(("fused_adam", t.name, flags), lambda: _adam_src(t, flags))
        tn.launch_1d(cd, k, n, (p, grads[i], exp_avgs[i], exp_avg_sqs[i], x), meta)
        mark_written(p, exp_avgs[i], exp_avg_sqs[i])
        if vmax is not None:
            mark_written(vmax)
    return None


KERNELS = {"_fused_sgd_": k_fused_sgd, "_fused_adam_": k_fused_adam}
