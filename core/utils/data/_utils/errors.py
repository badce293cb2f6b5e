"""Carrying an exception from a worker process to the main process."""
from __future__ import annotations

import pickle
import sys
import traceback


class KeyErrorMessage(str):
    """A str whose repr is itself, so a KeyError's multi-line message prints readably."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """The type and formatted traceback of an exception caught in a worker; picklable.

    :meth:`reraise` raises an exception of the original type in the main process whose message
    holds the worker's traceback. A type that cannot be pickled (a class local to a function) or
    rebuilt from one message argument becomes a ``RuntimeError`` with the same message.
    """

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        exc_type = exc_info[0]
        self.exc_type_name = exc_type.__qualname__
        try:
            pickle.dumps(exc_type)
            self.exc_type = exc_type
        except Exception:
            self.exc_type = None
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the wrapped exception (in the main process)."""
        msg = f"Caught {self.exc_type_name} {self.where}.\nOriginal {self.exc_msg}"
        exc_type = self.exc_type
        if exc_type is None:
            raise RuntimeError(msg)
        if exc_type is KeyError:
            raise KeyError(KeyErrorMessage(msg))
        try:
            exc = exc_type(msg)
        except Exception:  # a constructor that wants other arguments
            raise RuntimeError(msg) from None
        raise exc
