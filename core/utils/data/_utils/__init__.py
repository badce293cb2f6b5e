"""Internals of :mod:`ember.utils.data`: collation, fetchers, the worker loop, the shared-memory
transport and pinning (the layout of ``torch.utils.data._utils``)."""
from . import collate, fetch, pin_memory, shm, worker  # noqa: F401

#: seconds a worker is given to finish its current item when the loader shuts down
SHUTDOWN_GRACE = 2.0
