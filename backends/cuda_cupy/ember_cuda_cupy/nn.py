"""cuda-specific nn fast paths, over the shared numpy-table ones (``KERNELS`` replaces entries
of the table; ``SELF`` names those that handle bfloat16 themselves)."""
from __future__ import annotations

KERNELS: dict = {}
SELF: frozenset = frozenset()
