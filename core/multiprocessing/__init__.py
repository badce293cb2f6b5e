"""``ember.multiprocessing`` (``torch.multiprocessing``): Python's :mod:`multiprocessing` with
tensors shared, not copied, between processes.

Everything of :mod:`multiprocessing` is here (``Process``, ``Queue``, ``SimpleQueue``, ``Pool``,
``get_context``, ``set_start_method``...). Tensors sent through its queues, pipes and pools, or as
arguments of processes it starts with ``spawn``/``forkserver``, arrive *shared*: their storage is
moved into shared memory (in place, in the sender) and the receiver maps the same memory, so
writes on either side are seen by both (:mod:`.reductions`). With ``fork`` children inherit the
mappings of storages shared before the fork. ``Tensor.share_memory_()`` and
``Module.share_memory()`` share ahead of time, which is how several processes train one model
(Hogwild); docs/multiprocessing.md has the details and an example.

Also :func:`spawn` / :func:`start_processes` (run ``fn(i, *args)`` in N processes, failures
raised as :class:`ProcessRaisedException`), and the sharing strategies
(``get_all_sharing_strategies()``: ``file_descriptor``, the default on Linux, and
``file_system``).
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from ..backend.shared_memory import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from . import reductions  # noqa: F401  (ember.multiprocessing.reductions)
from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException,  # noqa: F401
                    SpawnContext, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           *multiprocessing.__all__]

init_reductions()
