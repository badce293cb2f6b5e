"""``ember.func``: composable function transforms (PyTorch's ``torch.func``).

``vmap`` batches by per-op batching rules over :class:`~ember.func._batched.BatchedTensor`;
``grad``/``vjp``/``jacrev`` are built on ember's tape-based autograd and ``jvp``/``jacfwd`` on the
double-vjp trick (see docs/func.md for how, and which compositions work).
"""
from __future__ import annotations

from ._batched import set_vmap_fallback_warning_enabled, vmap_fallbacks
from ._extras import debug_unwrap, functionalize, linearize, replace_all_batch_norm_modules_
from ._module import functional_call, stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functional_call",
           "stack_module_state", "vmap_fallbacks", "set_vmap_fallback_warning_enabled", "linearize", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap"]
