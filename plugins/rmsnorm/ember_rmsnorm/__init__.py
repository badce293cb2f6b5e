"""ember-rmsnorm: the ``rms_norm`` op (``ember.ops.rms_norm``, ``ember.rms_norm``), fused kernels
for the cpu_numpy and opencl backends, and the layer ``ember.nn.FusedRMSNorm``.

Hook implementations only; each imports its module when ember calls it (the opencl kernel only
once an opencl device is in use). On any other backend the op runs through its decomposition.
"""
import ember

__version__ = "0.1.0"

KERNELS = {  # backend name -> "module:function" of its fused kernel
    "cpu_numpy": "ember_rmsnorm.cpu_numpy_kernel:rms_norm_kernel",
    "opencl": "ember_rmsnorm.opencl_kernel:rms_norm_kernel",
}


@ember.hookimpl
def ember_register_ops(register):
    from ember_rmsnorm import op
    op.declare(register)


@ember.hookimpl
def ember_register_kernels(backend, register):
    target = KERNELS.get(backend)
    if target is not None:
        import importlib
        mod, _, fn = target.partition(":")
        register("rms_norm", getattr(importlib.import_module(mod), fn))


@ember.hookimpl
def ember_register_modules(register):
    from ember_rmsnorm.module import FusedRMSNorm
    register(FusedRMSNorm)
