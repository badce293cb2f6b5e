"""``functional_call`` and ``stack_module_state``: modules as functions of their tensors."""
from __future__ import annotations

import contextlib

from .. import ops
from ..nn.modules.module import Module

__all__ = ["functional_call", "stack_module_state"]


def _owner(module, name):
    *path, attr = name.split(".")
    m = module
    for p in path:
        m = getattr(m, p)
    return m, attr


def _tied_names(module):
    """name -> every name that holds the same tensor (tied weights)."""
    by_id: dict = {}
    for n, t in module.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(t), []).append(n)
    for n, t in module.named_buffers(remove_duplicate=False):
        by_id.setdefault(id(t), []).append(n)
    return {n: names for names in by_id.values() for n in names}


@contextlib.contextmanager
def _swapped(module, tensors):
    saved = []
    try:
        for name, t in tensors.items():
            m, attr = _owner(module, name)
            if attr in m._parameters:
                saved.append((m._parameters, attr, m._parameters[attr]))
                m._parameters[attr] = t
            elif attr in m._buffers:
                saved.append((m._buffers, attr, m._buffers[attr]))
                m._buffers[attr] = t
            else:
                had = attr in m.__dict__
                saved.append((m.__dict__, attr, m.__dict__.get(attr) if had else _MISSING))
                m.__dict__[attr] = t
        yield
    finally:
        for d, attr, old in reversed(saved):
            if old is _MISSING:
                d.pop(attr, None)
            else:
                d[attr] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Call ``module`` with its parameters and buffers replaced by the given tensors (one dict, or
    a tuple of dicts with distinct keys); the module is restored afterwards."""
    if not isinstance(module, Module):
        raise TypeError(f"functional_call: expected an nn.Module, got {type(module).__name__}")
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        merged = dict(dicts)
    elif isinstance(dicts, (tuple, list)):
        merged = {}
        for d in dicts:
            for k, v in d.items():
                if k in merged:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is "
                                     "ambiguous")
                merged[k] = v
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(dicts)}")
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    names |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    if tie_weights:
        tied = _tied_names(module)
        for k in list(merged):
            for other in tied.get(k, ()):
                if other == k:
                    continue
                if other in merged and merged[other] is not merged[k]:
                    raise ValueError(f"functional_call got multiple values for keys ['{k}', '{other}'], which are "
                                     "tied. Consider using tie_weights=False")
                merged.setdefault(other, merged[k])
    if strict:
        missing = sorted(names - set(merged))
        unexpected = sorted(set(merged) - names)
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(repr(k) for k in missing) + "."
            raise RuntimeError(msg)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, merged):
        return module(*args, **(kwargs or {}))


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of the (same-shaped) ``models`` stacked
    along a new first dim, for ``vmap(functional_call...)`` over model ensembles. The stacked
    parameters are new leaves (they require grad where the originals do)."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    ref = type(models[0])
    if not all(type(m) is ref for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stack(named, detach_grad):
        out = {}
        for k in dict(named(models[0])):
            ts = [dict(named(m))[k] for m in models]
            s = ops.stack([t.detach() for t in ts])
            if detach_grad and ts[0].requires_grad:
                s.requires_grad_(True)
            out[k] = s
        return out
    params = stack(lambda m: m.named_parameters(), True)
    buffers = stack(lambda m: m.named_buffers(), False)
    return params, buffers

