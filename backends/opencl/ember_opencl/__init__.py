"""ember's OpenCL backend (device ``opencl``). Hook implementations only: the runtime and the
kernels live in :mod:`ember_opencl.backend`, imported (with pyopencl) when an opencl device is
first used, so ``import ember`` and ``ember plugins`` work without pyopencl or any platform."""
import ember

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


@ember.hookimpl
def ember_register_backends(register):
    register("opencl", "opencl", "ember_opencl.backend:OpenCLBackend", priority=0, dtypes=DTYPES,
             description="OpenCL C kernels through pyopencl (GPUs, or CPUs through PoCL)")
