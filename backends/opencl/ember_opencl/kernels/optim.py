"""Fused optimizer updates (``_fused_sgd_``, ``_fused_adam_``, see :mod:`ember.ops.optim`): one
kernel per parameter doing the whole update in place, instead of one launch per ember op of the
decomposition. The arithmetic follows the decomposition step by step (values agree to rounding).
Parameters that are not float32/float64 or not contiguous, or whose gradient/state differ in
layout, go through the decomposition.
"""
from __future__ import annotations

from ember.ops import optim as _ref

from ..runtime import pack
from . import elementwise as ew
from . import layout as L
from .types import T, preamble, read_slot, scalar_slot

_FAST = ("float32", "float64")


def _fits(*tensors) -> bool:
    t0 = tensors[0]
    if t0._dtype.name not in _FAST:
        return False
    for t in tensors:
        if t._dtype is not t0._dtype or t._shape != t0._shape or not t.is_contiguous() or t._device is not t0._device:
            return False
    return True


def _bump(*tensors) -> None:
    for t in tensors:
        t._version[0] += 1


def _sgd_src(t, flags, nv):
    maximize, wd, momentum, first, nesterov = flags
    c = t.ct
    # meta: [n, off_p, off_g, off_b, lr, wd, momentum, 1 - dampening]
    lines = [preamble(t), f"typedef struct {{ long v[{nv}]; }} M;",
             f"__kernel void sgd(__global {c}* p, const __global {c}* gr, __global {c}* buf, const M m) {{",
             "  long i = get_global_id(0); if (i >= m.v[0]) return;",
             f"  {c} lr = {read_slot(4, t)}, wd = {read_slot(5, t)}, mo = {read_slot(6, t)}, damp = {read_slot(7, t)};",
             "  long ip = m.v[1] + i, ig = m.v[2] + i, ib = m.v[3] + i;",
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
        cd = ew.cl_dev(p)
        t = T(p._dtype)
        flags = (bool(maximize), weight_decay != 0, momentum != 0, bool(first_step[i]) if momentum != 0 else False,
                 bool(nesterov))
        b = buf if buf is not None else p
        meta = [n, p._offset, grads[i]._offset, b._offset, scalar_slot(lr, t), scalar_slot(weight_decay, t),
                scalar_slot(momentum, t), scalar_slot(1 - dampening, t)]
        nv = len(meta)
        k = cd.kernel(("fused_sgd", t.name, flags), lambda: _sgd_src(t, flags, nv))
        cd.launch(k, (L.round_up(n, 256),), (256,),
                  (p._storage._data.cl, grads[i]._storage._data.cl, b._storage._data.cl), pack(meta))
        _bump(p)
        if buf is not None:
            _bump(buf)
    return None


def _adam_src(t, flags, nv):
    maximize, wd, decoupled, amsgrad = flags
    c = t.ct
    # meta: [n, off_p, off_g, off_m, off_v, off_x, lr, beta1, beta2, wd, eps, step_size, bc2_sqrt]
    s = [read_slot(j, t) for j in range(6, 13)]
    lines = [preamble(t), f"typedef struct {{ long v[{nv}]; }} M;",
             f"__kernel void adam(__global {c}* p, const __global {c}* gr, __global {c}* ea, __global {c}* eq, "
             f"__global {c}* mx, const M m) {{",
             "  long i = get_global_id(0); if (i >= m.v[0]) return;",
             f"  {c} lr = {s[0]}, b1 = {s[1]}, b2 = {s[2]}, wd = {s[3]}, eps = {s[4]}, ss = {s[5]}, bc2 = {s[6]};",
             "  long ip = m.v[1] + i, ig = m.v[2] + i, im = m.v[3] + i, iv = m.v[4] + i, ix = m.v[5] + i;",
             f"  {c} g = gr[ig]; {c} pv = p[ip];"]
    if maximize:
        lines.append("  g = -g;")
    if wd:
        lines.append("  pv = pv * (1 - lr * wd);" if decoupled else "  g = g + wd * pv;")
    lines += [f"  {c} mv = ea[im]; mv = mv + (1 - b1) * (g - mv); ea[im] = mv;",
              f"  {c} vv = eq[iv]; vv = vv * b2 + (1 - b2) * (g * g); eq[iv] = vv;"]
    if amsgrad:
        lines.append(f"  {c} vm = mx[ix]; vm = vm > vv ? vm : vv; mx[ix] = vm; vv = vm;")
    lines += ["  p[ip] = pv + (-ss) * (mv / (sqrt(vv) / bc2 + eps));", "}"]
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
        cd = ew.cl_dev(p)
        t = T(p._dtype)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        flags = (bool(maximize), weight_decay != 0, bool(decoupled_weight_decay), bool(amsgrad))
        x = vmax if vmax is not None else p
        meta = [n, p._offset, grads[i]._offset, exp_avgs[i]._offset, exp_avg_sqs[i]._offset, x._offset,
                *(scalar_slot(v, t) for v in (lr, beta1, beta2, weight_decay, eps, lr / bias_correction1,
                                              bias_correction2_sqrt))]
        nv = len(meta)
        k = cd.kernel(("fused_adam", t.name, flags), lambda: _adam_src(t, flags, nv))
        cd.launch(k, (L.round_up(n, 256),), (256,),
                  (p._storage._data.cl, grads[i]._storage._data.cl, exp_avgs[i]._storage._data.cl,
                   exp_avg_sqs[i]._storage._data.cl, x._storage._data.cl), pack(meta))
        _bump(p, exp_avgs[i], exp_avg_sqs[i])
        if vmax is not None:
            _bump(vmax)
    return None


KERNELS = {"_fused_sgd_": k_fused_sgd, "_fused_adam_": k_fused_adam}
