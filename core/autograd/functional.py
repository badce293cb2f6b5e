"""``ember.autograd.functional``: vjp, jvp, jacobian, hessian, vhp and hvp of a python function,
with the signatures, result nesting and strict-mode errors of ``torch.autograd.functional``.

A function's inputs (and outputs) are one Tensor or a tuple of Tensors, and every result is
nested the same way: a bare tensor where the user passed (or returned) a bare tensor. Each call
works on fresh leaves made from the inputs; with ``create_graph=True`` an input that requires
grad is aliased instead (``view_as``), so the results stay connected to the caller's graph.

ember has reverse mode only. The forward-mode quantities (``jvp``, ``hvp``, and
``jacobian(strategy="forward-mode")``) come from differentiating twice: a vector-Jacobian
product taken with a placeholder cotangent ``u`` is linear in ``u``, and its own gradient with
respect to ``u``, in direction ``v``, is the Jacobian-vector product ``J v``. ``vectorize=True``
is accepted and computes the same values one row (reverse) or column (forward) at a time.
"""
from __future__ import annotations

from .. import ops
from .._tensor import Tensor
from .engine import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]

_OUTPUTS = "outputs of the user-provided function"


# --- packing and unpacking the user's values ----------------------------------------------------

def _tensors(value, role, api):
    """``(tensors, given_as_tuple)`` for a Tensor or a tuple of Tensors; TypeError otherwise."""
    given_as_tuple = isinstance(value, tuple)
    items = value if given_as_tuple else (value,)
    for pos, item in enumerate(items):
        if isinstance(item, Tensor):
            continue
        where = f"the value at index {pos}" if given_as_tuple else f"the given {role}"
        raise TypeError(f"The {role} given to {api} must be either a Tensor or a tuple of Tensors but {where} has "
                        f"type {type(item)}.")
    return tuple(items), given_as_tuple


def _leaves(inputs, create_graph, requires_grad=True):
    """The tensors the computation differentiates: aliases of the inputs that already require
    grad when a graph is to be built, fresh leaves otherwise."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(requires_grad)
                 for t in inputs)


def _released(tree, create_graph):
    """``tree`` (tensors in nested tuples) detached from the graph unless ``create_graph``."""
    if isinstance(tree, Tensor):
        return tree if create_graph else tree.detach()
    return tuple(_released(branch, create_graph) for branch in tree)


def _shaped(values, as_tuple):
    """``values`` as the user gave the matching argument: a tuple, or its single element."""
    return values if as_tuple else values[0]


def _shaped2(rows, rows_tuple, cols_tuple):
    """A tuple of tuples, unwrapped on each level that was a bare Tensor for the user."""
    return _shaped(tuple(_shaped(row, cols_tuple) for row in rows), rows_tuple)


def _checked_vector(v, like, like_tuple, create_graph, api, none_message):
    """The direction ``v`` of a product, matching ``like`` tensor by tensor; ``None`` is allowed
    only where ``like`` is a single one-element tensor (then the direction is 1)."""
    if v is None:
        if len(like) == 1 and like[0].nelement() == 1:
            return None
        raise RuntimeError(none_message)
    vs, _ = _tensors(v, "v", api)
    vs = _leaves(vs, create_graph, requires_grad=False)
    if len(vs) != len(like):
        if not like_tuple:
            raise RuntimeError("The given v should contain a single Tensor.")
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}.")
    for pos, (given, ref) in enumerate(zip(vs, like)):
        if given.size() == ref.size():
            continue
        entry = f"Entry {pos} in " if like_tuple else ""
        raise RuntimeError(f"{entry}v has invalid size: should be {ref.size()} but got {given.size()}.")
    return vs


_V_FOR_OUTPUT = ("The vector v can only be None if the user-provided function returns a single Tensor with a "
                 "single element.")
_V_FOR_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with "
                "a single element.")


# --- strict mode ----------------------------------------------------------------------------------

_NO_GRAD_TEXT = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with respect "
                 "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                 "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                 "would be violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the input. "
                "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
                "and that the hessian depends on the inputs."),
}

_MISSING_TEXT = {
    "back": ("The output of the user-provided function is independent of input {i}. This is not allowed in strict "
             "mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                   "using the double backward trick to compute forward mode gradients. This is not allowed in strict "
                   "mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                    "strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry {i} in the "
                          "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                          "backward trick to replace forward mode AD."),
}


def _strict_needs_grad(tensors, kind, strict) -> None:
    """In strict mode, every tensor of ``tensors`` must exist and be part of a graph."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(_MISSING_TEXT["back"].format(i=i))
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAD_TEXT[kind].format(i=i))


def _constant_message(what, i):
    return (f"The {what} of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode when create_graph=True.")


def _zeros_where_missing(grads, like, strict, create_graph, stage):
    """``grads`` with zeros for the missing (None) entries; strict mode refuses missing entries,
    and constant ones when a graph was asked for."""
    what = "hessian" if stage.startswith("double") else "jacobian"
    filled = []
    for i, g in enumerate(grads):
        if g is None and strict:
            raise RuntimeError(_MISSING_TEXT[stage].format(i=i))
        if g is None:
            g = ops.zeros_like(like[i])
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_constant_message(what, i))
        filled.append(g)
    return tuple(filled)


# --- gradients ------------------------------------------------------------------------------------

def _pullback(outputs, wrt, cotangents=None, create_graph=False, retain_graph=None):
    """``sum_k cotangent_k . d outputs_k / d wrt`` for each tensor of ``wrt`` (None where there is
    no dependence). Outputs outside the graph are skipped; a missing cotangent means ones."""
    if cotangents is None:
        cotangents = [None] * len(outputs)
    live = [(o, c) for o, c in zip(outputs, cotangents) if o is not None and o.requires_grad]
    if not live:
        return (None,) * len(wrt)
    roots = [o for o, _ in live]
    seeds = [ops.ones_like(o) if c is None else c for o, c in live]
    return _grad(roots, wrt, seeds, allow_unused=True, create_graph=create_graph, retain_graph=retain_graph)


def _outer_grad_mode(create_graph):
    """The grad mode of the last differentiation: on to build a graph, else the caller's."""
    return set_grad_enabled(True if create_graph else is_grad_enabled())


def _evaluate(func, api, inputs, strict):
    """``func``'s outputs on ``inputs``, packed and checked (call inside ``enable_grad``)."""
    outputs, outputs_tuple = _tensors(func(*inputs), _OUTPUTS, api)
    _strict_needs_grad(outputs, "outputs", strict)
    return outputs, outputs_tuple


def _placeholders(like):
    """Zero tensors that require grad: the dummy cotangents of the double-backward trick."""
    return tuple(ops.zeros_like(t).requires_grad_(True) for t in like)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), v^T J)``: the outputs and the vector-Jacobian product."""
    with enable_grad():
        xs, xs_tuple = _tensors(inputs, "inputs", "vjp")
        xs = _leaves(xs, create_graph)
        ys, ys_tuple = _evaluate(func, "vjp", xs, strict)
        direction = _checked_vector(v, ys, ys_tuple, create_graph, "vjp", _V_FOR_OUTPUT)
    with _outer_grad_mode(create_graph):
        product = _pullback(ys, xs, direction, create_graph=create_graph)
        product = _zeros_where_missing(product, xs, strict, create_graph, "back")
    return (_shaped(_released(ys, create_graph), ys_tuple),
            _shaped(_released(product, create_graph), xs_tuple))


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), J v)``: the outputs and the Jacobian-vector product."""
    with enable_grad():
        xs, xs_tuple = _tensors(inputs, "inputs", "jvp")
        xs = _leaves(xs, create_graph)
        direction = _checked_vector(v, xs, xs_tuple, create_graph, "jvp", _V_FOR_INPUT)
        ys, ys_tuple = _evaluate(func, "jvp", xs, strict)
        us = _placeholders(ys)
        vjp_in_u = _pullback(ys, xs, us, create_graph=True)  # linear in us
        _strict_needs_grad(vjp_in_u, "grad_inputs", strict)
    with _outer_grad_mode(create_graph):
        product = _pullback(vjp_in_u, us, direction, create_graph=create_graph)
        product = _zeros_where_missing(product, ys, strict, create_graph, "back_trick")
    return (_shaped(_released(ys, create_graph), ys_tuple),
            _shaped(_released(product, create_graph), ys_tuple))


# --- Jacobians and Hessians -----------------------------------------------------------------------

def _unit_vector(x, index):
    """A tensor shaped like ``x``, one at flat position ``index`` and zero elsewhere."""
    e = ops.zeros(x.numel(), dtype=x.dtype, device=x.device)
    e[index] = 1
    return e.reshape(x.shape)


def _forward_columns(xs, ys, create_graph):
    """``blocks[i][j] = d ys[i] / d xs[j]`` built column by column with the double-backward trick."""
    us = _placeholders(ys)
    vjp_in_u = _pullback(ys, xs, us, create_graph=True)
    blocks = [[None] * len(xs) for _ in ys]
    for j, (x, linear) in enumerate(zip(xs, vjp_in_u)):
        usable = linear is not None and linear.requires_grad
        columns = [[] for _ in ys]
        for k in range(x.numel() if usable else 0):
            col = _grad([linear], list(us), [_unit_vector(x, k)], retain_graph=True, create_graph=create_graph,
                        allow_unused=True)
            for i, (y, c) in enumerate(zip(ys, col)):
                columns[i].append(ops.zeros_like(y) if c is None else c)
        for i, y in enumerate(ys):
            if columns[i]:
                blocks[i][j] = ops.stack(columns[i], -1).reshape(*y.shape, *x.shape)
            else:  # no dependence (zeros like y), or an empty input
                like = x if x.numel() == 0 else y
                blocks[i][j] = ops.zeros(*y.shape, *x.shape, dtype=like.dtype, device=like.device)
    return tuple(tuple(row) for row in blocks)


def _reverse_rows(out_index, y, xs, strict, create_graph):
    """``d y / d xs[j]`` for each j, one backward pass per element of ``y``."""
    per_input = [[] for _ in xs]
    flat = y.reshape(-1)
    for k in range(y.nelement()):
        row = _pullback((flat[k],), xs, retain_graph=True, create_graph=create_graph)
        for j, (g, x) in enumerate(zip(row, xs)):
            if g is None and strict:
                raise RuntimeError(f"Output {out_index} of the user-provided function is independent of input {j}. "
                                   "This is not allowed in strict mode.")
            if g is not None and strict and create_graph and not g.requires_grad:
                raise RuntimeError(_constant_message("jacobian", out_index))
            per_input[j].append(ops.zeros_like(x) if g is None else g)
    blocks = []
    for x, rows in zip(xs, per_input):
        stacked = ops.stack(rows, 0) if rows else ops.zeros(0, *x.shape, dtype=x.dtype, device=x.device)
        blocks.append(stacked.view(*y.size(), *x.size()))
    return tuple(blocks)


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: block ``[i][j]`` has the shape
    ``outputs[i].shape + inputs[j].shape`` (levels unwrapped where the user had bare tensors)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    forward = strategy == "forward-mode"
    if forward and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")
    if forward and strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    with enable_grad():
        xs, xs_tuple = _tensors(inputs, "inputs", "jacobian")
        xs = _leaves(xs, create_graph)
        ys, ys_tuple = _evaluate(func, "jacobian", xs, strict)
        if forward:
            blocks = _forward_columns(xs, ys, create_graph)
        else:
            if vectorize and strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                                   "not supported together. Please either set `strict=False` or `vectorize=False`.")
            blocks = tuple(_reverse_rows(i, y, xs, strict, create_graph) for i, y in enumerate(ys))
        return _shaped2(_released(blocks, create_graph), ys_tuple, xs_tuple)


def _require_scalar(value, api):
    """``value`` must be one Tensor with one element (the functions of hessian, vhp and hvp)."""
    if isinstance(value, tuple) or not isinstance(value, Tensor):
        raise RuntimeError(f"The function given to {api} should return a single Tensor")
    if value.nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {api} should contain a single element")


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar ``func``: block ``[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``."""
    xs, xs_tuple = _tensors(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar(*args):
        value = func(*args)
        _strict_needs_grad(_tensors(value, _OUTPUTS, "hessian")[0], "outputs", strict)
        _require_scalar(value, "hessian")
        return value.squeeze()

    def gradient(*args):
        if outer_jacobian_strategy == "forward-mode":
            args = tuple(a.requires_grad_(True) for a in args)
        first = jacobian(scalar, args, create_graph=True)
        _strict_needs_grad(first, "jacobian", strict)
        return first

    blocks = jacobian(gradient, xs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _shaped2(blocks, xs_tuple, xs_tuple)


def _scalar_gradient(func, api, inputs, v, create_graph, strict):
    """The shared start of vhp and hvp: leaves, the checked direction, the scalar output and its
    gradient kept differentiable (call inside ``enable_grad``)."""
    xs, xs_tuple = _tensors(inputs, "inputs", api)
    xs = _leaves(xs, create_graph)
    direction = _checked_vector(v, xs, xs_tuple, create_graph, api, _V_FOR_INPUT)
    ys, ys_tuple = _evaluate(func, api, xs, strict)
    _require_scalar(ys if ys_tuple else ys[0], api)
    first = _pullback(ys, xs, create_graph=True)
    _strict_needs_grad(first, "jacobian", strict)
    return xs, xs_tuple, direction, ys, ys_tuple, first


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), v^T H)`` for a scalar ``func``."""
    with enable_grad():
        xs, xs_tuple, direction, ys, ys_tuple, first = _scalar_gradient(func, "vhp", inputs, v, create_graph, strict)
    with _outer_grad_mode(create_graph):
        product = _pullback(first, xs, direction, create_graph=create_graph)
        product = _zeros_where_missing(product, xs, strict, create_graph, "double_back")
    return (_shaped(_released(ys, create_graph), ys_tuple),
            _shaped(_released(product, create_graph), xs_tuple))


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Return ``(func(inputs), H v)`` for a scalar ``func``."""
    with enable_grad():
        xs, xs_tuple, direction, ys, ys_tuple, first = _scalar_gradient(func, "hvp", inputs, v, create_graph, strict)
        us = _placeholders(xs)
        second_in_u = _pullback(first, xs, us, create_graph=True)  # H^T u, linear in us
        _strict_needs_grad(first, "hessian", strict)
    with _outer_grad_mode(create_graph):
        product = _pullback(second_in_u, us, direction, create_graph=create_graph)
        product = _zeros_where_missing(product, xs, strict, create_graph, "double_back_trick")
    return (_shaped(_released(ys, create_graph), ys_tuple),
            _shaped(_released(product, create_graph), xs_tuple))
