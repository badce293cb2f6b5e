"""``ember._dynamo.eval_frame.OptimizedModule``: the class of what ``ember.compile(module)``
returns, for the common check ``isinstance(model, torch._dynamo.eval_frame.OptimizedModule)``
before unwrapping ``model._orig_mod``."""
from __future__ import annotations

from ..compiler._frontend import OptimizedModule

__all__ = ["OptimizedModule"]
