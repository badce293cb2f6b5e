"""``ember.autograd.graph``: the graph's public names (``Node``, the base of every ``grad_fn``,
and the handle hooks return). The graph itself is :mod:`ember._graph`."""
from __future__ import annotations

from .._graph import Node, RemovableHandle

__all__ = ["Node", "RemovableHandle"]
