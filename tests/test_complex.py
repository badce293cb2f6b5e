"""Complex dtypes on cpu: promotion, creation, printing, the parts as views, eager conjugation,
the refusals of real-only ops, autograd under PyTorch's conjugate convention (values taken from
PyTorch 2.13), gradcheck, save/load and DLPack."""
import io
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck


def test_dtypes_aliases_and_info():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point and ember.complex128.itemsize == 16
    assert ember.finfo(ember.complex64).dtype == "float32" and ember.finfo(ember.cdouble).bits == 64
    assert ember.promote_types(ember.complex64, ember.float64) is ember.complex128
    assert ember.promote_types(ember.complex64, ember.float16) is ember.complex64
    assert ember.promote_types(ember.complex128, ember.int64) is ember.complex128
    assert not ember.can_cast(ember.complex64, ember.float64) and ember.can_cast(ember.float64, ember.complex64)
    assert ember.empty(1, dtype="complex128").dtype is ember.complex128


@pytest.mark.parametrize("make,dtype", [
    (lambda: ember.ones(2, dtype=ember.float64) + 1j, ember.complex128),
    (lambda: ember.ones(2, dtype=ember.int64) + 1j, ember.complex64),
    (lambda: ember.ones(2) + 1j, ember.complex64),
    (lambda: ember.ones(2, dtype=ember.float64) + ember.tensor(1j), ember.complex128),
    (lambda: ember.ones(2, dtype=ember.complex64) + ember.tensor(1.0, dtype=ember.float64), ember.complex64),
    (lambda: ember.tensor(1.0, dtype=ember.float64) + ember.tensor(1j), ember.complex128),
    (lambda: ember.ones(2, dtype=ember.complex64) * ember.ones(2, dtype=ember.float64), ember.complex128),
    (lambda: ember.tensor([1 + 2j]), ember.complex64),
    (lambda: ember.full((2,), 1j), ember.complex64),
    (lambda: ember.zeros_like(ember.tensor([1j], dtype=ember.cdouble)), ember.complex128),
    (lambda: ember.tensor([1 + 2j]).abs(), ember.float32),
    (lambda: ember.tensor([1 + 2j], dtype=ember.cdouble).real, ember.float64),
])
def test_promotion_and_result_dtypes_as_pytorch(make, dtype):
    assert make().dtype is dtype


def test_default_complex_follows_the_default_dtype():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1j]).dtype is ember.complex128
        assert (ember.ones(2, dtype=ember.int32) + 1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)


def test_item_tolist_numpy_and_printing():
    z = ember.tensor([1 + 2j, 3 - 1j])
    assert z.tolist() == [1 + 2j, 3 - 1j] and ember.tensor(1 + 2j).item() == 1 + 2j
    assert complex(ember.tensor(2j)) == 2j
    with pytest.raises(RuntimeError, match="cannot be converted"):
        float(ember.tensor(1j))
    a = z.numpy()
    assert a.dtype == np.complex64 and ember.from_numpy(a).tolist() == z.tolist()
    assert repr(z) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(ember.tensor([1.5 + 2j, 3 - 1j], dtype=ember.complex128)) == \
        "tensor([1.5000+2.j, 3.0000-1.j], dtype=ember.complex128)"
    assert repr(ember.tensor([1 - 10j, 1 + 1j, 100 + 1j])) == "tensor([  1.-10.j,   1.+1.j, 100.+1.j])"
    assert repr(ember.tensor([math.nan + 1j, 1e-5j])) == "tensor([nan+1.0000e+00j, 0.+1.0000e-05j])"


def test_random_complex():
    g = ember.Generator().manual_seed(0)
    z = ember.randn(40000, dtype=ember.cfloat, generator=g)
    parts = ember.view_as_real(z)
    assert all(abs(v - 0.5) < 0.02 for v in parts.var(0).tolist())  # each part N(0, 1/2)
    u = ember.view_as_real(ember.rand(1000, dtype=ember.cdouble, generator=g))
    assert 0 <= u.min().item() and u.max().item() < 1


def test_parts_are_views_and_writable():
    z = ember.tensor([1 + 2j, 3 - 1j, 5j])[::2]
    r, i = z.real, z.imag
    assert r._base is not None and r.stride() == (4,) and i.storage_offset() == 1
    r.mul_(2)
    i[1] = 7
    ember.view_as_real(z)[0, 1] = -1
    assert z.tolist() == [2 - 1j, 7j]
    z.real = ember.tensor([0.5, 0.25])
    assert z.tolist() == [0.5 - 1j, 0.25 + 7j]
    x = ember.ones(3)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        x.imag


def test_view_as_complex_checks():
    v = ember.view_as_complex(ember.arange(8.0).reshape(2, 2, 2)[:, 1])
    assert v.tolist() == [2 + 3j, 6 + 7j] and v.dtype is ember.complex64
    for bad, msg in [(ember.zeros(3), "last dimension of size 2"),
                     (ember.zeros(2, 2).t(), "last dimension with stride 1"),
                     (ember.zeros(5)[1:].view(2, 2), "storage_offset divisible by 2"),
                     (ember.zeros(2, 2, dtype=ember.int64), "only supported for float and double"),
                     (ember.zeros(4, 3)[:, :2], "stride divisible by 2")]:
        with pytest.raises(RuntimeError, match=msg):
            ember.view_as_complex(bad)
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        ember.view_as_real(ember.zeros(2))


def test_eager_conj():
    z = ember.tensor([1 + 2j])
    c = z.conj()
    assert c.tolist() == [1 - 2j] and not c.is_conj() and c.resolve_conj() is c
    assert c.data_ptr() != z.data_ptr()  # a new tensor, not PyTorch's lazily conjugated view
    x = ember.ones(2)
    assert x.conj() is x and x.resolve_conj() is x and x.conj_physical() is not x
    m = ember.tensor([[1j, 2]])
    assert m.mH.tolist() == [[-1j], [2 + 0j]] and m.H.tolist() == [[-1j], [2 + 0j]]
    assert m.adjoint().tolist() == [[-1j], [2 + 0j]]


def test_angle_polar_complex_sgn_isreal():
    z = ember.tensor([1 + 1j, -1, 0j])
    np.testing.assert_allclose(ember.angle(z).numpy(), [math.pi / 4, math.pi, 0], rtol=1e-6)
    assert ember.angle(ember.tensor([1.0, -1.0, math.nan])).tolist()[:2] == [0.0, pytest.approx(math.pi)]
    assert ember.sgn(z).tolist()[1:] == [-1 + 0j, 0j]
    assert ember.isreal(z).tolist() == [False, True, True]
    np.testing.assert_allclose(ember.polar(ember.tensor([2.0]), ember.tensor([0.5])).numpy(),
                               [2 * np.exp(0.5j)], rtol=1e-6)
    assert ember.complex(ember.tensor([1.0]), ember.tensor([2.0])).tolist() == [1 + 2j]
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double"):
        ember.complex(ember.tensor([1.0]), ember.tensor([2.0], dtype=ember.float64))


@pytest.mark.parametrize("fn,exc", [
    (lambda z: z < z, NotImplementedError), (lambda z: ember.maximum(z, z), NotImplementedError),
    (lambda z: z.floor(), NotImplementedError), (lambda z: z.sign(), NotImplementedError),
    (lambda z: z.clamp(0, 1), NotImplementedError), (lambda z: z.sort(), NotImplementedError),
    (lambda z: z.argmax(), RuntimeError), (lambda z: z.max(), NotImplementedError),
    (lambda z: z // z, NotImplementedError), (lambda z: z % z, NotImplementedError),
    (lambda z: z.erf(), NotImplementedError), (lambda z: z.relu(), NotImplementedError),
    (lambda z: ember.zeros(2).add_(z), RuntimeError), (lambda z: ember.zeros(2).fill_(1j), RuntimeError),
    (lambda z: ember.isposinf(z), RuntimeError), (lambda z: ember.deg2rad(z), RuntimeError),
])
def test_real_only_ops_refuse_complex_naming_op_and_dtype(fn, exc):
    with pytest.raises(exc) as e:
        fn(ember.tensor([1 + 2j, 3 - 1j]))
    assert "Complex" in str(e.value) or "complex" in str(e.value)


# gradients of PyTorch 2.13 for z = [1+2j, 3-1j] (and x = [1, 2] real)
@pytest.mark.parametrize("loss,expected", [
    (lambda z: z.imag.sum(), [1j, 1j]),
    (lambda z: ember.angle(z).sum(), [-0.4 + 0.2j, 0.1 + 0.3j]),
    (lambda z: (z * z).abs().sum(), [2 + 4j, 6 - 2j]),
    (lambda z: ember.sgn(z).real.sum(), [0.3578 - 0.1789j, 0.0316 + 0.0949j]),
    (lambda z: ember.view_as_real(z.exp()).sum(), [1.3405 - 3.6029j, -6.0491 + 27.7537j]),
])
def test_gradients_follow_pytorch_convention(loss, expected):
    z = ember.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    loss(z).backward()
    np.testing.assert_allclose(z.grad.numpy(), expected, atol=1e-4)


def test_real_input_gets_the_real_part_and_complex_outputs_need_grad_tensors():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * (1 + 2j)).abs().sum().backward()
    assert x.grad.dtype is ember.float32
    np.testing.assert_allclose(x.grad.numpy(), [math.sqrt(5)] * 2, rtol=1e-6)
    z = ember.tensor([1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
        z.sum().backward()
    (z * 2).backward(ember.tensor([1 + 1j]))
    assert z.grad.tolist() == [2 + 2j]


def test_in_place_on_a_part_under_autograd_is_refused_clearly():
    z = ember.tensor([1 + 2j], requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="another dtype than its base"):
        z.real.mul_(2)


@pytest.mark.parametrize("fn,n", [
    (lambda a, b: a * b, 2), (lambda a, b: a / (b + 3), 2), (lambda a: a.exp().sin(), 1), (lambda a: a.abs(), 1),
    (lambda a: ember.angle(a), 1), (lambda a, b: a.reshape(2, 2) @ b.reshape(2, 2), 2), (lambda a: a.prod(), 1),
    (lambda a: ember.view_as_real(a.conj()), 1), (lambda a: a.var(), 1), (lambda a, b: (a + 3) ** b, 2),
])
def test_gradcheck_complex(fn, n):
    g = ember.Generator().manual_seed(3)
    ins = tuple(ember.randn(4, dtype=ember.cdouble, generator=g).requires_grad_() for _ in range(n))
    assert gradcheck(fn, ins)


def test_gradcheck_catches_a_wrong_complex_gradient():
    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z  # PyTorch's convention needs conj(2 z)

    z = ember.tensor([1 + 2j, -0.5 + 1j], dtype=ember.cdouble, requires_grad=True)
    assert not gradcheck(Wrong.apply, (z,), raise_exception=False)


def test_save_load_and_dlpack_round_trip():
    z = ember.tensor([[1 + 2j, 3 - 1j]], dtype=ember.complex128).t()
    buf = io.BytesIO()
    ember.save({"z": z}, buf)
    buf.seek(0)
    back = ember.load(buf)["z"]
    assert back.dtype is ember.complex128 and back.tolist() == z.tolist()
    a = np.array([1j, 2], dtype=np.complex64)
    assert ember.from_dlpack(a).tolist() == [1j, 2 + 0j]
    assert np.from_dlpack(ember.tensor([1 + 2j])).tolist() == [1 + 2j]
