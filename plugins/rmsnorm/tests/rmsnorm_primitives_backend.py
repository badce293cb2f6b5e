"""A backend for these tests with cpu_numpy's kernels for the primitives only (device type
``rmsprim``): rms_norm has no kernel there, so it runs through its decomposition."""
import ember
from ember.ops.primitives import PRIMITIVES
from ember_cpu_numpy.backend import NumpyBackend


class PrimitivesOnly(NumpyBackend):
    KERNELS = {name: k for name, k in NumpyBackend.KERNELS.items() if name in PRIMITIVES}
    out_kernels = frozenset()


class PrimitivesOnlyPlugin:
    @ember.hookimpl
    def ember_register_backends(self, register):
        register("rmsnorm-primitives", "rmsprim", "rmsnorm_primitives_backend:PrimitivesOnly")
