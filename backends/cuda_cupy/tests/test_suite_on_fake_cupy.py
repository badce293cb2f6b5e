"""The whole conformance suite on device type ``cuda`` (backend cuda_cupy over the fake cupy)."""
from ember.testing.suite.test_01_runtime import *  # noqa: F401,F403
from ember.testing.suite.test_02_views import *  # noqa: F401,F403
from ember.testing.suite.test_02b_storage import *  # noqa: F401,F403
from ember.testing.suite.test_03_primitives import *  # noqa: F401,F403
from ember.testing.suite.test_04_composites import *  # noqa: F401,F403
from ember.testing.suite.test_04b_hypothesis import *  # noqa: F401,F403
from ember.testing.suite.test_04c_bounds import *  # noqa: F401,F403
from ember.testing.suite.test_04d_inplace import *  # noqa: F401,F403
from ember.testing.suite.test_04e_semantics import *  # noqa: F401,F403
from ember.testing.suite.test_04f_complex import *  # noqa: F401,F403
from ember.testing.suite.test_05_autograd import *  # noqa: F401,F403
from ember.testing.suite.test_06_nn import *  # noqa: F401,F403
from ember.testing.suite.test_06b_nn_sequence import *  # noqa: F401,F403
from ember.testing.suite.test_07_optim import *  # noqa: F401,F403
from ember.testing.suite.test_08_serialization import *  # noqa: F401,F403
from ember.testing.suite.test_09_devices import *  # noqa: F401,F403

ember_backends = ["cuda_cupy"]


def test_the_fake_cupy_serves_the_suite():
    import cupy
    import ember
    assert getattr(cupy, "__fake__", False)
    assert ember.cuda.is_available() and ember.cuda.device_count() == 2
