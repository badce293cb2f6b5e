"""numpy meeting ember tensors as it meets PyTorch's (checked against PyTorch 2.13 side by side):
ufuncs over a tensor return a tensor (``__array_wrap__``), ``tensor op ndarray`` is a tensor op
with numpy's dtype taking part in promotion, ``ndarray op tensor`` raises for the operators PyTorch
raises for (``__array_priority__`` = 1000, no ``__array_ufunc__``), and numpy functions that
aren't ufuncs get an ndarray through ``__array__``. docs/tensors.md explains the choices."""
import warnings

import numpy as np
import pytest

import ember


def test_ufuncs_over_a_tensor_return_a_tensor():
    t = ember.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy 2's __array_wrap__ signature: no DeprecationWarning
        r = np.exp(t)
    assert isinstance(r, ember.Tensor) and r.dtype == ember.float32
    np.testing.assert_allclose(r.numpy(), np.exp([1.0, 2.0]).astype(np.float32), rtol=1e-6)
    z = np.exp(ember.tensor(1.0))
    assert isinstance(z, ember.Tensor) and z.shape == () and abs(z.item() - np.e) < 1e-6
    i = np.exp(ember.tensor([1, 2]))  # numpy's rule: int64 in, float64 out
    assert isinstance(i, ember.Tensor) and i.dtype == ember.float64
    m = np.maximum(t, np.array([1.5, 1.5]))
    assert isinstance(m, ember.Tensor) and m.dtype == ember.float64 and m.tolist() == [1.5, 2.0]
    out = np.empty(2, np.float32)
    assert np.exp(t, out=out) is out  # an explicit out= stays numpy's


def test_tensor_op_ndarray_is_a_tensor_op():
    t = ember.tensor([1.0, 2.0])
    r = t + np.array([1.0, 1.0])
    assert isinstance(r, ember.Tensor) and r.dtype == ember.float64 and r.tolist() == [2.0, 3.0]
    r = ember.tensor([1, 2]) + np.array([1, 2], dtype=np.int32)
    assert r.dtype == ember.int64 and r.tolist() == [2, 4]
    assert (ember.ones(2, 2) @ np.ones(2)).tolist() == [2.0, 2.0]
    assert (t == np.array([1.0, 0.0])).tolist() == [True, False]
    assert (np.array([1.0, 0.0]) == t).tolist() == [True, False]
    assert isinstance(t[0] + np.array([1.0, 2.0]), ember.Tensor)


def test_numpy_scalars_are_python_numbers():
    t = ember.tensor([1.0])
    assert (np.float64(2) * t).dtype == ember.float32 and (t * np.float64(2)).dtype == ember.float32
    assert (np.float64(2) + t).tolist() == [3.0]
    assert (np.int64(2) * ember.tensor([1, 2], dtype=ember.int8)).dtype == ember.int8


def test_ndarray_op_tensor_raises_as_in_pytorch():
    a, t = np.array([1.0, 2.0]), ember.tensor([1.0, 2.0])
    assert ember.Tensor.__array_priority__ == 1000 and not hasattr(ember.Tensor, "__array_ufunc__")
    with pytest.raises(TypeError):
        a + t
    with pytest.raises(TypeError, match="unsupported operand"):
        a * t
    with pytest.raises(TypeError, match="unsupported operand"):
        a @ ember.ones(2, 2)
    b = a.copy()
    with pytest.raises(TypeError):
        b += t
    assert b.tolist() == [1.0, 2.0]


def test_non_ufunc_numpy_functions_see_an_array():
    t = ember.tensor([1.0, 2.0])
    c = np.concatenate([t, t])
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.tolist() == [1.0, 2.0, 1.0, 2.0]
    assert np.asarray(t).dtype == np.float32 and np.array(t, dtype=np.int32).dtype == np.int32
    with pytest.raises(RuntimeError, match="requires grad"):
        np.exp(ember.tensor([1.0], requires_grad=True))


def test_in_place_with_an_ndarray_is_refused_not_rebound():
    # PyTorch's `t += ndarray` silently rebinds t to a new float64 tensor, leaving the original as it
    # was (its __iadd__ returns NotImplemented); ember refuses, naming the operand (docs/tensors.md)
    t = ember.tensor([1.0, 2.0])
    u = t
    with pytest.raises(TypeError, match="ndarray"):
        t += np.array([1.0, 1.0])
    assert t is u and t.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="ndarray"):
        ember.tensor([1.0]).add_(np.array([1.0]))
    with pytest.raises(TypeError, match="ndarray"):
        ember.add(ember.tensor([1.0]), np.array([1.0]))
