"""``ember._dynamo.exc``: the exceptions ``ember.compile`` raises, under PyTorch's names."""
from __future__ import annotations

from ..compiler._frontend import InvalidBackend, Unsupported

#: PyTorch raises this when its backend compiler fails; ember's nearest is an unknown backend
BackendCompilerFailed = InvalidBackend

__all__ = ["Unsupported", "BackendCompilerFailed"]
