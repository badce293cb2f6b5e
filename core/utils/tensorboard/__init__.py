"""``ember.utils.tensorboard``: ``SummaryWriter``, PyTorch's TensorBoard logger, writing event
files with the ``tensorboard`` package's own writer and protocol buffers (the optional extra
``pip install 'ember[tensorboard]'``). As in PyTorch, importing this module without the package
raises ``ImportError`` naming it."""
from __future__ import annotations

import importlib.util

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]

if importlib.util.find_spec("tensorboard") is None:
    raise ImportError("ember.utils.tensorboard needs the tensorboard package, which is not installed: "
                      "pip install tensorboard (or pip install 'ember[tensorboard]')")
