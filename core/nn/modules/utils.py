"""``ember.nn.modules.utils``: the argument helpers third-party layers import from PyTorch's
``torch.nn.modules.utils`` (``_pair``, ``_ntuple``...) and
``consume_prefix_in_state_dict_if_present``."""
from __future__ import annotations

import collections.abc
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A parser that passes iterables as tuples and repeats a scalar ``n`` times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """``t`` reversed, each element repeated ``n`` times (conv padding to ``F.pad`` order)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """``out_size`` with its None entries taken from the trailing ``defaults``."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix: str) -> None:
    """Strip ``prefix`` (``"module."`` of a DataParallel/DDP model) from the keys of
    ``state_dict`` and of its ``_metadata``, in place."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is not None:
        for key in list(meta.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                meta[key[len(prefix):]] = meta.pop(key)
