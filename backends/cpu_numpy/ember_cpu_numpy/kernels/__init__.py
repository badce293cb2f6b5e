"""ember-cpu-numpy's kernel library: ember's kernels written once over a numpy-like array
module, in groups of one concept each. cpu_numpy builds its table from it with numpy; other
backends whose array module mirrors numpy (ember-cuda-cupy, with cupy) build theirs from the same
code with their own :class:`ArrayNamespace`, and override what differs::

    from ember_cpu_numpy import kernels
    ns = kernels.ArrayNamespace(cupy, nd, wrap, cupyx.scipy.special, cupy.lib.stride_tricks.as_strided)
    table = {**kernels.build_table(ns), **overrides}

Groups (each a :class:`KernelGroup`; ``Group(ns).table()`` is its op -> kernel dict):

* :class:`Memory` (copies, fills, cat, flip, padding), :class:`Random` (``uniform_``,
  ``normal_``, dropout), :class:`Elementwise` (unary/binary ufuncs, division rules, special
  functions, where, clamp), :class:`Reductions`, :class:`Indexing` (gather/scatter, advanced
  indexing, sort, searchsorted, embedding), :class:`Linalg` (matmul, linear);
* nn: :class:`Convolution` (forward, ``convolution_backward``, conv_transpose, weight gradient,
  im2col/col2im), :class:`Pooling`, :class:`Normalization`, :class:`Losses` (softmax,
  log_softmax, nll_loss);
* :class:`Optim` (fused SGD and Adam/AdamW).

:mod:`.rnn` (fused recurrent layers) is numpy-only. :data:`OUT_KERNELS` names the kernels that
accept ``out=``. Kernel names and signatures are the ops' (``ember.ops.OPS``).
"""
from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..arrays import nd, wrap
from .base import ArrayNamespace, KernelGroup
from .convolution import Convolution
from .elementwise import OUT as OUT_KERNELS
from .elementwise import Elementwise
from .indexing import Indexing
from .linalg import Linalg
from .losses import Losses
from .memory import Memory
from .normalization import Normalization
from .optim import Optim
from .pooling import Pooling
from .random import Random
from .reductions import Reductions

# numpy reports floating-point exceptions as warnings; PyTorch computes inf/nan silently. The
# filter matches warnings raised in this distribution's own modules only (the kernels' frames).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember_cpu_numpy\.")

__all__ = ["ArrayNamespace", "KernelGroup", "GROUPS", "build_table", "numpy_namespace", "OUT_KERNELS", "Memory",
           "Random", "Elementwise", "Reductions", "Indexing", "Linalg", "Convolution", "Pooling", "Normalization",
           "Losses", "Optim"]

#: every group, in table order (later groups win a name clash; there is none)
GROUPS = (Memory, Random, Elementwise, Reductions, Indexing, Linalg, Convolution, Pooling, Normalization, Losses,
          Optim)


def build_table(ns: ArrayNamespace, groups=GROUPS) -> dict:
    """The op -> kernel table of ``groups`` over namespace ``ns``."""
    table: dict = {}
    for group in groups:
        table.update(group(ns).table())
    return table


def readonly_strided(a, shape, strides):
    """numpy's ``as_strided``, read-only: overlapping window views must never be written through."""
    return as_strided(a, shape, strides, writeable=False)


def numpy_namespace() -> ArrayNamespace:
    """cpu_numpy's namespace: numpy, the cpu tensor adapters, scipy.special (when importable)
    and read-only strided views."""
    try:  # accurate erf/erfc/erfinv
        from scipy import special
    except ImportError:  # pragma: no cover - scipy is a dependency; kept for minimal environments
        special = None
    return ArrayNamespace(np, nd, wrap, special, readonly_strided)
