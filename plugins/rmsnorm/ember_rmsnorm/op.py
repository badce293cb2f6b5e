"""The ``rms_norm`` op: its declaration (meta, decomposition, backward), which ember turns into the
front end ``ember.rms_norm`` / ``ember.ops.rms_norm`` (with ``out=``), as it does for its own ops.

``rms_norm(input, normalized_shape, weight=None, eps=None)`` normalises over the trailing
``normalized_shape`` dims by the root mean square, ``y = x / sqrt(mean(x^2) + eps) * weight``
(Zhang & Sennrich, 2019), as ``torch.nn.functional.rms_norm``: ``eps`` defaults to the input
dtype's machine epsilon; the result has the input's dtype; float16/bfloat16 inputs are computed
in float32. The kernel arguments are ``(input, weight or None, k, eps)`` with ``k`` the number
of normalised dims.
"""
from __future__ import annotations

import numbers

import ember
from ember import Tensor

__all__ = ["rms_norm", "rms_norm_meta", "declare"]

FRONT = None  # the front end ember generated from the declaration (set by declare())


def _desc(t) -> str:
    return f"{t.dtype.name}[{', '.join(map(str, t.shape))}] on {t.device}"


def _shape_arg(normalized_shape) -> tuple:
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape, bool):
        return (int(normalized_shape),)
    try:
        ns = tuple(normalized_shape)
    except TypeError:
        ns = None
    if ns is None or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in ns):
        raise TypeError(f"rms_norm(): argument 'normalized_shape' must be an int or a sequence of ints, got "
                        f"{type(normalized_shape).__name__} {normalized_shape!r}")
    return tuple(int(s) for s in ns)


def rms_norm_meta(input, normalized_shape, weight=None, eps=None) -> tuple:
    """Validate the arguments (raising PyTorch's exception types, naming shapes, dtypes and
    devices) and return the dispatch plan ``(device, kernel_args, inputs)``: the kernel (or the
    decomposition) gets ``(input, weight or None, k, eps)`` with ``k`` the number of normalised
    dims; autograd differentiates with respect to ``input`` (and ``weight``). Runs no backend
    code."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rms_norm(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    ns = _shape_arg(normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("rms_norm: Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                           "least one element, but got normalized_shape = []")
    if input.dim() < k:
        raise ValueError(f"rms_norm: Input tensor must have at least {k} dimensions for normalized_shape={list(ns)}, "
                         f"but got input {_desc(input)}")
    if tuple(input.shape[input.dim() - k:]) != ns:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size{list(input.shape)} ({_desc(input)})")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{input.dtype.name}': the input must be a "
                                  f"floating-point tensor, got {_desc(input)}")
    if weight is not None:
        if not isinstance(weight, Tensor):
            raise TypeError(f"rms_norm(): argument 'weight' must be Tensor or None, not {type(weight).__name__}")
        if tuple(weight.shape) != ns:
            raise RuntimeError(f"rms_norm: Expected weight to be of same shape as normalized_shape, but got weight of "
                               f"shape {list(weight.shape)} and normalized_shape = {list(ns)}")
        if weight.device != input.device:
            raise RuntimeError(f"rms_norm: Expected all tensors to be on the same device, but found at least two "
                               f"devices, {input.device} and {weight.device}! (input {_desc(input)}, weight "
                               f"{_desc(weight)})")
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, numbers.Real)):
        raise TypeError(f"rms_norm(): argument 'eps' must be a float or None, not {type(eps).__name__}")
    eps = ember.finfo(input.dtype).eps if eps is None else float(eps)
    inputs = (input,) if weight is None else (input, weight)
    return input.device, (input, weight, k, eps), inputs


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``input / sqrt(mean(input^2 over the trailing normalized_shape dims) + eps) * weight``;
    ``eps`` defaults to ``ember.finfo(input.dtype).eps``. Differentiable twice, on every backend
    (a fused kernel on cpu_numpy and opencl, the decomposition elsewhere). The same as
    ``ember.rms_norm`` (usable before ember has loaded its plugins)."""
    if FRONT is None:  # the module was imported before ember loaded its plugins
        ember.plugins()
        if FRONT is None:
            raise RuntimeError("rms_norm: the ember-rmsnorm plugin is not registered with ember (is it blocked by "
                               "EMBER_DISABLE_PLUGINS? `ember plugins` shows its state)")
    return FRONT(input, normalized_shape, weight, eps)


# -- decomposition and backward, in ember ops (so double backward works on every backend) -----------

def _compute_dtype(dtype):
    return ember.float64 if dtype is ember.float64 else ember.float32


def _dims(x, k) -> tuple:
    return tuple(range(x.dim() - k, x.dim()))


def _inv_rms(xf, k, eps):
    return ember.rsqrt((xf * xf).mean(_dims(xf, k), keepdim=True) + eps)


def decomposition(x, weight, k, eps):
    """The reference: ``x * rsqrt(mean(x * x) + eps) * weight``, in float32 for 16-bit inputs."""
    ct = _compute_dtype(x.dtype)
    xf = x.to(ct)
    out = xf * _inv_rms(xf, k, eps)
    if weight is not None:
        out = out * weight.to(ct)
    return out.to(x.dtype)


def backward(ctx, grad):
    """With ``r = (mean(x^2) + eps)^(-1/2)`` and ``h = grad * weight``:
    ``dx = r * (h - x * r^2 * mean(h * x))`` and ``dweight = sum over the leading dims of
    grad * x * r``."""
    x, weight, k, eps = ctx.args
    ct = _compute_dtype(x.dtype)
    xf, g = x.to(ct), grad.to(ct)
    r = _inv_rms(xf, k, eps)
    h = g * weight.to(ct) if weight is not None else g
    gx = gw = None
    if ctx.needs_input_grad[0]:
        gx = r * (h - xf * (r * r) * (h * xf).mean(_dims(xf, k), keepdim=True))
    if weight is not None and ctx.needs_input_grad[1]:
        lead = tuple(range(x.dim() - k))
        gw = g * xf * r
        if lead:
            gw = gw.sum(lead)
    return (gx,) if weight is None else (gx, gw)


def declare(register) -> None:
    """Declare the op to ember (called from the plugin's ``ember_register_ops`` hook)."""
    global FRONT
    FRONT = register("rms_norm", rms_norm_meta, decomposition=decomposition, backward=backward, group="nn",
                     doc=rms_norm.__doc__)
