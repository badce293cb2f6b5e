"""Process- and thread-level switches read on the hot path (grad mode, anomaly detection)."""
from __future__ import annotations

import threading


class _GradState(threading.local):
    # class attributes are the defaults every new thread starts with, as in PyTorch
    enabled = True
    inference = False


grad = _GradState()


class _Anomaly:
    enabled = False
    check_nan = True


anomaly = _Anomaly()


class _Threads:
    n = None  # ember.set_num_threads; None: each backend's default
    interop = 1  # ember.set_num_interop_threads: recorded only (ops run on the caller's thread)


threads = _Threads()
