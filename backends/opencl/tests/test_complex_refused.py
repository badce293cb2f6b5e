"""ember-opencl declares no complex dtype (float2 kernels are future work): every way to make a
complex tensor on an opencl device is refused with a TypeError naming the op, the dtype and the
device type, before any kernel runs."""
import pytest

import ember


def test_the_backend_declares_no_complex_dtype(backend):
    assert not {"complex64", "complex128"} & set(backend.dtypes)


@pytest.mark.parametrize("make,op", [
    (lambda x: x * 1j, "mul"),
    (lambda x: x + ember.tensor(1j), "add"),
    (lambda x: ember.zeros(2, dtype=ember.complex64, device=x.device), "zeros"),
    (lambda x: ember.randn(2, dtype=ember.cfloat, device=x.device), "randn"),
    (lambda x: ember.tensor([1j]).to(x.device), "to"),
    (lambda x: ember.complex(x, x), "complex"),
    (lambda x: ember.view_as_complex(ember.ones(2, 2, device=x.device)), "view_as_complex"),
])
def test_complex_on_opencl_is_refused_naming_op_dtype_and_device(dev, make, op):
    x = ember.ones(2, device=dev)
    with pytest.raises(TypeError, match=rf"^{op}: dtype ember\.complex64 is not supported by backend 'opencl' on "
                                        r"device type 'opencl'"):
        make(x)
