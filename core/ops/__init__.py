"""``ember.ops``: every op front end, the op registry (:data:`OPS`) and dispatch.

Each family module declares its ops (see :mod:`ember.ops.declare`) and lists its public names in
``__all__``; this package's public names, and ``ember``'s op functions, are their union. Most are
also ``Tensor`` methods (see :mod:`ember._methods`).
"""
from __future__ import annotations

from .. import _plugins
from . import (arithmetic, comparison, complexops, copy, creation, indexing, linalg, linalg_api, linalg_more, nn, optim,
               pointwise, primitives, random, reduction, shape, sparse, special_airy, special_bessel, special_gamma,
               special_igamma, special_misc, special_poly, unary, views)
from . import combinatorics, distances, floatbits
from . import linalg_ldl  # noqa: F401 (registers the ldl ops; ember.linalg names them)
from . import spectral, spectral_more, spectral_stft
from .arithmetic import *  # noqa: F401,F403
from .combinatorics import *  # noqa: F401,F403
from .comparison import *  # noqa: F401,F403
from .complexops import *  # noqa: F401,F403
from .copy import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .declare import composite, defop
from .distances import *  # noqa: F401,F403
from .floatbits import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .linalg_api import *  # noqa: F401,F403
from .linalg_more import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .registry import ALL, OPS, OpDef, dispatch, record, register_op, run
from .shape import *  # noqa: F401,F403
from .special_gamma import *  # noqa: F401,F403
from .special_igamma import *  # noqa: F401,F403
from .special_misc import *  # noqa: F401,F403
from .spectral_more import *  # noqa: F401,F403
from .spectral_stft import *  # noqa: F401,F403
from .unary import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403

#: the op families, whose ``__all__`` lists make up this package's public names
FAMILIES = (arithmetic, comparison, complexops, unary, pointwise, reduction, indexing, shape, views, linalg, linalg_api,
            linalg_more, copy, nn, creation, random, floatbits, combinatorics, distances, special_gamma, special_igamma,
            special_misc, spectral_more, spectral_stft)

# the op functions (the registry and the declaration API are attributes of ember.ops, not ember)
__all__ = sorted({name for fam in FAMILIES for name in fam.__all__})


def __getattr__(name: str):
    # an op a plugin registers (ember.ops.rms_norm), looked up before the plugins were loaded
    return _plugins.plugin_attr(__name__, name)
