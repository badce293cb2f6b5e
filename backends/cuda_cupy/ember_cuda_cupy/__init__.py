"""ember's CUDA backend (device ``cuda``) on cupy. Hook implementations only: the runtime and the
kernels live in :mod:`ember_cuda_cupy.backend`, imported (with cupy) when a cuda device is first
used, so ``import ember`` and ``ember plugins`` work without cupy, a driver or a GPU."""
import ember

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128")


@ember.hookimpl
def ember_register_backends(register):
    register("cuda_cupy", "cuda", "ember_cuda_cupy.backend:CupyBackend", priority=0, dtypes=DTYPES,
             description="NVIDIA GPUs through cupy (cuBLAS, cuRAND, elementwise kernels)")


@ember.hookimpl
def ember_register_collectives(register):
    register("nccl", "ember_cuda_cupy.nccl:NCCLProcessGroup", ("cuda",))
