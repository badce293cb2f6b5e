"""``ember.nn.modules.utils``: the argument helpers that third-party layers import from
PyTorch's ``torch.nn.modules.utils`` (``_single``, ``_pair``, ``_triple``, ``_quadruple``,
``_ntuple``...) and ``consume_prefix_in_state_dict_if_present``."""
from __future__ import annotations

from collections.abc import Iterable

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A converter to tuples: an iterable becomes the tuple of its items, anything else is
    repeated ``n`` times (``_pair(3) == (3, 3)``)."""
    def to_tuple(x):
        return tuple(x) if isinstance(x, Iterable) else (x,) * n
    to_tuple.__name__ = name
    return to_tuple


_single, _pair, _triple, _quadruple = (_ntuple(k, f"_{word}")
                                       for k, word in enumerate(("single", "pair", "triple", "quadruple"), 1))


def _reverse_repeat_tuple(t, n):
    """``t`` reversed, each element repeated ``n`` times (conv padding to ``F.pad`` order)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """``out_size`` with its None entries taken from the trailing ``defaults``."""
    if isinstance(out_size, int):
        return out_size
    k = len(out_size)
    if len(defaults) < k + 1:
        raise ValueError(f"Input dimension should be at least {k + 1}")
    return [d if v is None else v for v, d in zip(out_size, defaults[len(defaults) - k:])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix: str) -> None:
    """Strip ``prefix`` (``"module."`` of a DataParallel/DDP model) from the keys of
    ``state_dict`` and of its ``_metadata``, in place."""
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is None:
        return
    bare = prefix.replace(".", "")
    for key in [k for k in meta if k and (k == bare or k.startswith(prefix))]:
        meta[key[len(prefix):]] = meta.pop(key)
