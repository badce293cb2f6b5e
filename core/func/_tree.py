"""A small pytree: tuples, lists, dicts (and namedtuples) of leaves, as ``torch.utils._pytree``."""
from __future__ import annotations

__all__ = ["flatten", "unflatten", "tree_map", "broadcast_prefix"]


def _is_node(x) -> bool:
    return isinstance(x, (tuple, list, dict))


def flatten(tree):
    """``(leaves, spec)``; ``unflatten(leaves, spec)`` rebuilds the tree."""
    leaves: list = []

    def go(x):
        if isinstance(x, dict):
            keys = list(x.keys())
            return ("dict", keys, [go(x[k]) for k in keys])
        if isinstance(x, (tuple, list)):
            kind = type(x)
            return ("seq", kind, [go(v) for v in x])
        leaves.append(x)
        return None
    return leaves, go(tree)


def unflatten(leaves, spec):
    it = iter(leaves)

    def go(s):
        if s is None:
            return next(it)
        if s[0] == "dict":
            return {k: go(c) for k, c in zip(s[1], s[2])}
        vals = [go(c) for c in s[2]]
        kind = s[1]
        if kind in (tuple, list):
            return kind(vals)
        return kind(*vals)  # a namedtuple
    return go(spec)


def tree_map(fn, tree):
    leaves, spec = flatten(tree)
    return unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, tree, what: str):
    """The leaves of ``prefix`` broadcast to every leaf of ``tree`` (``prefix`` is a tree prefix
    of ``tree``: a leaf of it applies to a whole subtree)."""
    out: list = []

    def go(p, t):
        if _is_node(p):
            if isinstance(p, dict) != isinstance(t, dict) or not _is_node(t) or len(p) != len(t):
                raise ValueError(f"{what} is not compatible with the structure of the inputs")
            if isinstance(p, dict):
                if set(p) != set(t):
                    raise ValueError(f"{what} is not compatible with the structure of the inputs")
                for k in t:
                    go(p[k], t[k])
            else:
                for a, b in zip(p, t):
                    go(a, b)
        else:
            n = len(flatten(t)[0])
            out.extend([p] * n)
    go(prefix, tree)
    return out
