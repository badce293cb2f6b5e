"""All generators: the op table (``OP_SPECS``, by op name) and nn.functional (``FUNCTIONAL_SPECS``)."""
from __future__ import annotations

from .specs_complex import COMPLEX_OPS
from .specs_elementwise import ELEMENTWISE
from .specs_factor import FACTOR
from .specs_functional import ACTIVATIONS, LOSSES
from .specs_functional_nn import LAYERS
from .specs_index import INDEX
from .specs_linalg import LINALG
from .specs_mathmisc import MATHMISC
from .specs_reduce import REDUCE
from .specs_shape import SHAPE
from .specs_special import SPECIAL

__all__ = ["OP_SPECS", "FUNCTIONAL_SPECS"]

OP_SPECS = {**ELEMENTWISE, **REDUCE, **SHAPE, **INDEX, **LINALG, **MATHMISC, **FACTOR, **COMPLEX_OPS, **SPECIAL}


def _prefixed(call):
    call.op = call.fn
    return call


FUNCTIONAL_SPECS = {n: s.map(_prefixed) for n, s in {**ACTIVATIONS, **LOSSES, **LAYERS}.items()}
