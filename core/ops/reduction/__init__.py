"""The reduction family: reductions over dims (:mod:`.reductions`), statistics
(:mod:`.statistics`), scans along one dim (:mod:`.scans`), quantiles (:mod:`.quantiles`),
covariance (:mod:`.covariance`), differences and integrals (:mod:`.calculus`)."""
from __future__ import annotations

from . import calculus, covariance, quantiles, reductions, scans, statistics
from .calculus import *  # noqa: F401,F403
from .covariance import *  # noqa: F401,F403
from .quantiles import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .reductions import int_accumulator, numel_of, sum_to_shape, take_backward, unreduce  # noqa: F401
from .scans import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403

__all__ = (reductions.__all__ + statistics.__all__ + scans.__all__ + quantiles.__all__ + covariance.__all__
           + calculus.__all__)
