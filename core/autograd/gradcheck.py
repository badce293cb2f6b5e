"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``."""
from __future__ import annotations

import warnings

from .. import _state
from .._tensor import Tensor
from .. import ops
from .engine import grad as _grad_fn
from .. import _dtype as D


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _diff_inputs(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(func, inputs):
    out = _as_tuple(func(*inputs))
    return [o for o in out if isinstance(o, Tensor)]


def _numerical(func, inputs, i, eps):
    """Jacobian columns d outputs / d inputs[i] by central differences, one per input element."""
    x = inputs[i]
    n = x.numel()
    cols = []
    for j in range(n):
        with _state.grad_disabled():
            e = ops.zeros(x.numel(), dtype=x.dtype, device=x.device)
            e[j] = eps
            e = e.reshape(x.shape)
            xp = (x.detach() + e).requires_grad_(x.requires_grad)
            xm = (x.detach() - e).requires_grad_(x.requires_grad)
        plus = list(inputs)
        minus = list(inputs)
        plus[i], minus[i] = xp, xm
        # func runs in the caller's grad mode: it may itself differentiate (gradgradcheck)
        fp = _outputs(func, plus)
        fm = _outputs(func, minus)
        cols.append([((a.detach().to(x.dtype) - b.detach().to(x.dtype)) / (2 * eps)).reshape(-1)
                     if a.is_floating_point() else None for a, b in zip(fp, fm)])
    return cols  # cols[j][k]: d out_k / d x_j (flattened over out_k)


def _analytical(outputs, inputs, i):
    x = inputs[i]
    rows = []
    for o in outputs:
        if not o.is_floating_point() or not o.requires_grad:
            rows.append(None)
            continue
        flat = o.reshape(-1)
        r = []
        for k in range(flat.numel()):
            (g,) = _grad_fn([flat[k]], [x], retain_graph=True, allow_unused=True)
            r.append(ops.zeros(x.numel(), dtype=x.dtype, device=x.device) if g is None else g.reshape(-1))
        rows.append(r)
    return rows  # rows[k][m]: d out_k[m] / d x (flattened over x)




def _realified(func, inputs):
    """``func`` and ``inputs`` with complex numbers as pairs of reals, as PyTorch's gradcheck
    checks them: each complex input that requires grad becomes its real and imaginary parts (two
    real inputs joined by ``complex``), each complex output its ``view_as_real``. The real
    Jacobian then checks the complex gradients under PyTorch's convention."""
    cx = [isinstance(t, Tensor) and t.is_complex() and t.requires_grad for t in inputs]
    if not any(cx) and not any(o.is_complex() for o in _outputs(func, inputs)):
        return func, inputs
    flat, spans = [], []
    for t, c in zip(inputs, cx):
        spans.append(2 if c else 1)
        if c:
            with _state.grad_disabled():
                flat += [ops.real(t).clone().requires_grad_(True), ops.imag(t).clone().requires_grad_(True)]
        else:
            flat.append(t)

    def real_func(*xs):
        args, k = [], 0
        for n in spans:
            args.append(ops.complex(xs[k], xs[k + 1]) if n == 2 else xs[k])
            k += n
        out = _as_tuple(func(*args))
        return tuple(ops.view_as_real(o) if isinstance(o, Tensor) and o.is_complex() else o for o in out)
    return real_func, tuple(flat)


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, fast_mode: bool = False,
              masked=None) -> bool:
    """Compare autograd's gradients of ``func(*inputs)`` with central finite differences.

    Inputs that require grad should be float64 (or complex128: complex inputs and outputs are
    checked as pairs of real numbers, as PyTorch's gradcheck does). Returns True, or raises GradcheckError (or
    returns False with ``raise_exception=False``) naming the output, the input and both Jacobians.
    """
    inputs = _as_tuple(inputs)
    func, inputs = _realified(func, inputs)
    diff = _diff_inputs(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them have "
                         "requires_grad=True.")
    for i in diff:
        if inputs[i].dtype not in (D.float64, D.complex128):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check will "
                          "likely fail if all the inputs are not of double precision floating point.", UserWarning)
    outputs = _outputs(func, inputs)
    for i in diff:
        x = inputs[i]
        num = _numerical(func, inputs, i, eps)
        ana = _analytical(outputs, inputs, i)
        for k, o in enumerate(outputs):
            if ana[k] is None:
                continue
            # jacobians as [out numel, in numel]
            a = ops.stack(ana[k], 0) if ana[k] else ops.zeros((0, x.numel()), dtype=x.dtype, device=x.device)
            n = ops.stack([c[k] for c in num], 1) if num else ops.zeros((o.numel(), 0), dtype=x.dtype, device=x.device)
            a = a.to(D.float64) if a.dtype is not D.float64 and a.is_floating_point() else a
            n = n.to(a.dtype)
            if a.shape != n.shape or not bool(ops.allclose(a, n, rtol=rtol, atol=atol)):
                msg = (f"Jacobian mismatch for output {k} with respect to input {i},\n"
                       f"numerical:{n}\nanalytical:{a}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  fast_mode: bool = False, masked=False) -> bool:
    """gradcheck of the gradients of ``func`` (second derivatives through ``create_graph``)."""
    inputs = _as_tuple(inputs)
    diff = _diff_inputs(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(ops.randn(o.shape, dtype=o.dtype, device=o.device).requires_grad_(True)
                             for o in outputs if o.is_floating_point())
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, ins) if o.is_floating_point()]
        diff_ins = [ins[i] for i in diff]
        gs = _grad_fn(outs, diff_ins, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
