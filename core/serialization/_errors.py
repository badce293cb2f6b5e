"""The one exception a checkpoint that cannot be loaded raises: :class:`CheckpointError`."""
from __future__ import annotations

import pickle


class CheckpointError(pickle.UnpicklingError, RuntimeError):
    """``ember.load`` cannot read this file, and says why: it is truncated, corrupt (a CRC-32
    mismatch), not a checkpoint, malformed (a bad zip, a bad pickle, a record or tensor that does
    not fit), or ``weights_only=True`` refused something in it (a global, state that is not tensor
    state).

    It is a :class:`pickle.UnpicklingError` (what ``torch.load`` raises when ``weights_only``
    refuses a file) and a :class:`RuntimeError` (what it raises for an unreadable archive), so code
    written for either catches it.

    >>> import ember, io, pickle
    >>> try:
    ...     ember.load(io.BytesIO(b"not a checkpoint"))
    ... except ember.serialization.CheckpointError as e:
    ...     print(isinstance(e, pickle.UnpicklingError), isinstance(e, RuntimeError))
    True True
    """


class _BadFile(Exception):
    """Raised inside loading for a malformed file; ``load`` turns it into a :class:`CheckpointError`
    naming the file."""
CheckpointError.__module__ = "ember.serialization"
