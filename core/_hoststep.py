"""Host steps: the few functions of the core that read tensor values on the host only to validate
them (an index out of range, a probability outside [0, 1]) or to pick between two results the same
kernels can compute, marked with :func:`host_step`.

Outside a capture the mark costs one list read. While ``ember.compile`` records a call
(``recorder[0]`` is its recorder), a marked function is not a break: it runs, and the recording
gets one step that calls it again, with the replay's tensors, at the same place, so that a replay
raises what the eager call would raise and takes the same branch. The function must return None,
a tensor, or a tuple of tensors, be a function of its arguments only, and write nothing.
"""
from __future__ import annotations

import functools

__all__ = ["host_step", "host_effect", "recorder", "capturing"]

#: the running capture's recorder (``ember.compiler._capture.Recorder``), or None
recorder: list = [None]


def host_step(fn):
    """Mark ``fn`` as a host step (see the module docstring)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        r = recorder[0]
        if r is None or r.depth:
            return fn(*args, **kwargs)
        return r.host_step(fn, args, kwargs)
    return run


def capturing() -> bool:
    """Whether ``ember.compile`` is recording a call (for checks whose only purpose is to pick the
    faster of two paths that give the same values: a capture takes the general one)."""
    return recorder[0] is not None


def host_effect(what: str) -> None:
    """``what`` changes host state that a replay would not change again (seeding or setting a
    random generator): inside a capture, a break, so the call runs eagerly and keeps eager's
    results; outside a capture, nothing (one list read)."""
    r = recorder[0]
    if r is not None and not r.depth:
        r.brk(f"{what} inside the compiled call (a replay would not repeat it)")
