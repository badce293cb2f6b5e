"""fake ``cupy.cuda.device``."""
from . import Device  # noqa: F401


def get_cublas_handle():
    from . import _current_device
    return 1000 + _current_device().id


def get_device_id():
    from . import _current_device
    return _current_device().id
