"""``ember._dynamo``: the names code written for ``torch._dynamo`` reaches (``explain``, ``reset``,
``config.cache_size_limit``, ``disable``), from :mod:`ember.compiler`."""
from __future__ import annotations

from .compiler import Unsupported, config, disable, explain, is_compiling, list_backends, reset

__all__ = ["explain", "reset", "config", "disable", "is_compiling", "list_backends", "Unsupported"]
