"""The small ``torch.func`` helpers: ``linearize`` (on ember's jvp), ``functionalize`` (an eager
shim), ``replace_all_batch_norm_modules_`` and ``debug_unwrap``."""
from __future__ import annotations

import functools

from ..nn.modules.batchnorm import _BatchNorm
from ._batched import BatchedTensor
from ._transforms import jvp

__all__ = ["linearize", "functionalize", "replace_all_batch_norm_modules_", "debug_unwrap"]

_REMOVE_CHOICES = ("mutations", "mutations_and_views")


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector product
    of ``func`` at ``primals``. ember has no traced linear graph: each ``jvp_fn`` call runs
    :func:`ember.func.jvp` again (the double-vjp trick), so it costs a forward and two reverse
    passes rather than PyTorch's replay of a linearised graph."""
    out = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangents (one per primal), got {len(tangents)}")
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def functionalize(func, *, remove: str = "mutations"):
    """Compatibility shim, eager: PyTorch's ``functionalize`` rewrites in-place ops into
    out-of-place ones for tracing; ember does not trace, so the returned function runs ``func``
    as written, with the same results and the same writes into its inputs (docs/func.md)."""
    if remove not in _REMOVE_CHOICES:
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are 'mutations' and 'mutations_and_views'.")

    @functools.wraps(func)
    def run(*args, **kwargs):
        return func(*args, **kwargs)

    return run


def replace_all_batch_norm_modules_(root):
    """In place: every batch-norm layer under ``root`` stops tracking running statistics (its
    ``running_mean``/``running_var``/``num_batches_tracked`` become None), so that it always
    normalises with the batch's own statistics, as ``vmap`` over a model needs; returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse: bool = True):
    """The plain tensor inside a ``vmap`` batched tensor (the whole batch, batch dim first);
    other tensors are returned as they are. With ``recurse`` nested levels are all unwrapped."""
    while isinstance(tensor, BatchedTensor):
        tensor = tensor._value
        if not recurse:
            break
    return tensor
