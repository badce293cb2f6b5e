"""The reduction family: reductions over dims (:mod:`.reductions`), statistics
(:mod:`.statistics`) and scans along one dim (:mod:`.scans`)."""
from __future__ import annotations

from . import reductions, scans, statistics
from .reductions import *  # noqa: F401,F403
from .reductions import int_accumulator, numel_of, sum_to_shape, take_backward, unreduce  # noqa: F401
from .scans import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403

__all__ = reductions.__all__ + statistics.__all__ + scans.__all__
