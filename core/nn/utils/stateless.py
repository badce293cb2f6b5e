"""``nn.utils.stateless.functional_call``: call a module with some parameters and buffers
replaced for the call only (deprecated in PyTorch 2.0 for ``torch.func.functional_call``, which
this module's ``_reparametrize_module`` also serves)."""
from __future__ import annotations

import contextlib
import warnings

from ..._tensor import Tensor
from ..parallel import DataParallel

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module, parameters_and_buffers: dict) -> dict:
    """Give every name tied to a given name (the same tensor registered twice) the given value."""
    tied: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        tied.setdefault(id(t), []).append(name)
    out = dict(parameters_and_buffers)
    for names in tied.values():
        if len(names) < 2:
            continue
        given = [n for n in names if n in parameters_and_buffers]
        if not given:
            continue
        values = {id(parameters_and_buffers[n]) for n in given}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                             "Consider using tie_weights=False")
        for n in names:
            out.setdefault(n, parameters_and_buffers[given[0]])
    return out


def _swap(module, name: str, tensor):
    """Put ``tensor`` at dotted ``name`` (``_MISSING`` removes it); returns what was there."""
    *path, leaf = name.split(".")
    for p in path:
        module = getattr(module, p)
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for table in (module._parameters, module._buffers):
        if leaf in table:
            orig = table[leaf]
            if tensor is _MISSING:
                del table[leaf]
            else:
                table[leaf] = tensor
            return orig
    orig = getattr(module, leaf, _MISSING)
    if tensor is not _MISSING:
        setattr(module, leaf, tensor)
    elif orig is not _MISSING:
        delattr(module, leaf)
    return orig


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict, tie_weights: bool = False, strict: bool = False):
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        keys = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(keys - set(untied)), sorted(set(untied) - keys)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            body = "\n\t".join(msgs)
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t{body}")
    orig: dict = {}
    try:
        for name, t in untied.items():
            orig[name] = _swap(module, name, t)
        yield
    finally:
        for name, t in orig.items():
            _swap(module, name, t)


def functional_call(module, parameters_and_buffers: dict, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced by the given
    tensors for this call (the module is unchanged afterwards). Deprecated, as in PyTorch."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
                  "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)  # one argument may be bare
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
