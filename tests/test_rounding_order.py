"""Composite ops that compute in the order PyTorch's kernels round in, so that float32 results are
bit-identical to PyTorch's wherever numpy can express that order (optimizers call these every
step, and an ulp per step compounds over a training run)."""
import numpy as np
import pytest

import ember


def _f32(seed, n=4096):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("value", [1, -0.0123456789, 3.3])
def test_addcdiv_rounds_as_value_times_t1_over_t2(value):
    x, a, b = _f32(0), _f32(1), _f32(2)
    expected = x + (a * np.float32(value)) / b  # PyTorch: self + value * t1 / t2, left to right
    got = ember.addcdiv(ember.tensor(x), ember.tensor(a), ember.tensor(b), value=value).numpy()
    np.testing.assert_array_equal(got, expected)
    inplace = ember.tensor(x)
    inplace.addcdiv_(ember.tensor(a), ember.tensor(b), value=value)
    np.testing.assert_array_equal(inplace.numpy(), expected)
    if value != 1:  # the other order differs in some elements: this test can tell them apart
        assert (x + (a / b) * np.float32(value) != expected).any()
