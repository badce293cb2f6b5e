"""``ember.backends.opt_einsum``: ``ember.einsum`` contracts its operands left to right and does
not use the ``opt_einsum`` package, so it answers as PyTorch does without that package."""
from __future__ import annotations

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]

enabled = False
strategy = None


def is_available() -> bool:
    """False: ember.einsum does not use opt_einsum to order its contractions."""
    return False


def get_opt_einsum():
    """None: the opt_einsum package is not used."""
    return None
