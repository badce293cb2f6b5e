"""Whether the opencl backend can run here (pyopencl installed and an OpenCL device found): the
condition of the tests outside backends/opencl that also run a case on opencl."""
import ember


def opencl_available() -> bool:
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        return False
    try:
        return ember._plugins.backend_for("opencl").device_count() > 0
    except RuntimeError:
        return False
