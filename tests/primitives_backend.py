"""A test backend that implements only the primitives of ember.ops.primitives (device type
``prim``), reusing cpu_numpy's numpy kernels for them. Everything else must come from the core's
decompositions: running the conformance suite on it proves they carry a backend."""
import ember
from ember.ops.primitives import PRIMITIVES
from ember_cpu_numpy.backend import NumpyBackend


class PrimitivesBackend(NumpyBackend):
    KERNELS = {k: v for k, v in NumpyBackend.KERNELS.items() if k in PRIMITIVES}
    out_kernels = frozenset()


class PrimitivesPlugin:
    @ember.hookimpl
    def ember_register_backends(self, register):
        register("primitives", "prim", "primitives_backend:PrimitivesBackend", priority=0)
