"""Tier 4g, Fourier transforms: ``ember.fft``, ``stft``/``istft`` against numpy.fft (see
``optable_spectral.py``), real gradchecks in float64 and complex gradchecks (and double
backward) in complex128, for every backend that declares the complex dtypes (skipped, with the
reason, for the others: every transform has a complex input or result)."""
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing.helpers import make_tensor, supports
from ember.testing.suite.optable_spectral import SPECTRAL_CASES, SPECTRAL_GRADS


def _needs_complex(device, dtype=ember.complex64):
    if not supports(device, dtype):
        pytest.skip(f"the backend does not declare {dtype.name} (the transforms have complex inputs or results)")


@pytest.mark.parametrize("case", SPECTRAL_CASES, ids=[c.name for c in SPECTRAL_CASES])
def test_spectral_values(device, case):
    _needs_complex(device)
    case.run(device)


@pytest.mark.parametrize("name", sorted(SPECTRAL_GRADS))
def test_spectral_complex_gradcheck(device, name):
    _needs_complex(device, ember.complex128)
    fn, shape = SPECTRAL_GRADS[name]
    z = make_tensor(shape, ember.complex128, device, seed=3, requires_grad=True)
    assert gradcheck(fn, (z,))
    assert gradgradcheck(fn, (z,))


def test_spectral_kernel_ops_double_backward_real(device):
    _needs_complex(device, ember.complex128)
    x = make_tensor((2, 6), ember.float64, device, seed=5, requires_grad=True)
    assert gradgradcheck(lambda a: ember.fft.irfft(ember.fft.rfft(a) * 1j, n=6).pow(2), (x,))
