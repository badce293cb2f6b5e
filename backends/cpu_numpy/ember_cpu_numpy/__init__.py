"""ember's reference backend (device ``cpu``, kernels on numpy). Hook implementations only: the
backend (:mod:`ember_cpu_numpy.backend`) and its kernel library (:mod:`ember_cpu_numpy.kernels`)
are imported when the cpu device is first used."""
import ember

ALL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128")


@ember.hookimpl
def ember_register_backends(register):
    register("cpu_numpy", "cpu", "ember_cpu_numpy.backend:NumpyBackend", priority=0, dtypes=ALL_DTYPES,
             description="numpy kernels on the host CPU")
