"""numpy meeting a tensor, side by side with PyTorch: for each expression, the kind of result
(a tensor with its dtype and values, an ndarray, or the exception type) is the same, except the
two documented differences (ordering comparisons with an ndarray, and `t += ndarray`)."""
import warnings

import numpy as np
import pytest
import torch

import ember

EXPRESSIONS = {
    "np.exp(t)": lambda m, t, a: np.exp(t),
    "np.exp(0-d)": lambda m, t, a: np.exp(m.tensor(1.5)),
    "np.exp(int)": lambda m, t, a: np.exp(m.tensor([1, 2])),
    "np.add(t, 1)": lambda m, t, a: np.add(t, 1),
    "np.maximum(t, a)": lambda m, t, a: np.maximum(t, a),
    "t + a": lambda m, t, a: t + a,
    "t * a": lambda m, t, a: t * a,
    "a + t": lambda m, t, a: a + t,
    "a * t": lambda m, t, a: a * t,
    "a @ t": lambda m, t, a: a @ m.ones(2, 2),
    "t @ a": lambda m, t, a: m.ones(2, 2) @ a,
    "t == a": lambda m, t, a: t == a,
    "a == t": lambda m, t, a: a == t,
    "f64 scalar * t": lambda m, t, a: np.float64(2) * t,
    "t * f64 scalar": lambda m, t, a: t * np.float64(2),
    "int64 scalar * int8 t": lambda m, t, a: np.int64(3) * m.tensor([1, 2], dtype=m.int8),
    "np.concatenate": lambda m, t, a: np.concatenate([t, t]),
    "np.asarray": lambda m, t, a: np.asarray(t),
    "np.exp(requires_grad)": lambda m, t, a: np.exp(m.tensor([1.0], requires_grad=True)),
    "int t + int32 a": lambda m, t, a: m.tensor([1, 2]) + np.array([3, 4], dtype=np.int32),
}


def _outcome(mod, expr):
    t, a = mod.tensor([1.0, 2.0]), np.array([0.5, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyTorch's __array_wrap__ under numpy 2
        try:
            r = EXPRESSIONS[expr](mod, t, a)
        except Exception as e:
            return ("raises", type(e).__name__)
    if isinstance(r, np.ndarray):
        return ("ndarray", str(r.dtype), r.tolist())
    return ("tensor", str(r.dtype).split(".")[-1], r.tolist())


@pytest.mark.parametrize("expr", sorted(EXPRESSIONS))
def test_numpy_interop_matches_pytorch(expr):
    assert _outcome(ember, expr) == _outcome(torch, expr)


def test_the_documented_differences_are_still_differences():
    t, a = torch.tensor([1.0]), np.array([2.0])
    with pytest.raises(TypeError):
        t < a  # PyTorch: TypeError; ember: a bool tensor (docs/tensors.md)
    assert (ember.tensor([1.0]) < a).tolist() == [True]
    u = t
    t += a  # PyTorch rebinds t to a new float64 tensor; ember refuses (TypeError)
    assert t is not u and t.dtype == torch.float64 and u.tolist() == [1.0]
