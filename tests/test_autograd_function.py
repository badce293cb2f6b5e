"""Custom autograd.Function and the gradient checkers."""
import pytest

import ember
from ember import autograd
from ember.autograd import Function, gradcheck, gradgradcheck, once_differentiable


def d(*vals, rg=True):
    return ember.tensor(list(vals), dtype=ember.float64, requires_grad=rg)


class Linear(Function):
    @staticmethod
    def forward(ctx, x, w, b=None):
        ctx.save_for_backward(x, w, b)
        out = x @ w.t()
        return out if b is None else out + b

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        gx = g @ w if ctx.needs_input_grad[0] else None
        gw = g.t() @ x if ctx.needs_input_grad[1] else None
        gb = g.sum(0) if b is not None and ctx.needs_input_grad[2] else None
        return gx, gw, gb


def test_custom_function_forward_backward_and_gradcheck():
    ember.manual_seed(0)
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(2, dtype=ember.float64, requires_grad=True)
    y = Linear.apply(x, w, b)
    assert y.grad_fn.name() == "LinearBackward"
    assert [fn.name() for fn, _ in y.grad_fn.next_functions] == ["AccumulateGrad"] * 3
    assert gradcheck(Linear.apply, (x, w, b))
    assert gradgradcheck(Linear.apply, (x, w, b))


def test_needs_input_grad_and_non_tensor_args():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, name):
            ctx.factor = factor
            seen["needs"] = ctx.needs_input_grad
            return x * factor, name.upper()

        @staticmethod
        def backward(ctx, g, _unused):
            return g * ctx.factor, None, None
    x = d(1.0, 2.0)
    y, label = Scale.apply(x, 3.0, "ok")
    assert label == "OK" and seen["needs"] == (True, False, False)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_saved_variables_alias_and_version_check():
    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_variables
            return 2 * x * g
    x = d(3.0)
    h = x * 1
    y = Sq.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    y2 = Sq.apply(x)
    y2.backward()
    assert x.grad.item() == 6.0


def test_mark_dirty_inplace_function():
    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g
    a = d(1.0, 2.0)
    h = a * 2
    r = AddOne.apply(h)
    assert r is h and h.tolist() == [3.0, 5.0] and h.grad_fn.name() == "AddOneBackward"
    (r * r).sum().backward()
    assert a.grad.tolist() == [12.0, 20.0]
    leaf = d(1.0)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOne.apply(leaf)


def test_mark_non_differentiable_and_materialize_grads():
    class SortWithIdx(Function):
        @staticmethod
        def forward(ctx, x):
            v, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            return v, i

        @staticmethod
        def backward(ctx, gv, gi):
            (i,) = ctx.saved_tensors
            assert gi is None or float(gi.abs().sum()) == 0.0
            out = ember.zeros_like(gv)
            out[i] = gv
            return out
    x = d(3.0, 1.0, 2.0)
    v, i = SortWithIdx.apply(x)
    assert not i.requires_grad and v.requires_grad
    (v * ember.tensor([1.0, 10.0, 100.0], dtype=ember.float64)).sum().backward()
    assert x.grad.tolist() == [100.0, 1.0, 10.0]

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            assert gb is None
            return ga * 2
    x = d(1.0)
    a, b = Two.apply(x)
    a.backward()
    assert x.grad.item() == 2.0


def test_wrong_number_or_shape_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients \\(expected 2, got 1\\)"):
        Bad.apply(d(1.0), d(2.0)).backward()

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ember.ones(5, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got \\[5\\] but expected shape "
                                           "compatible with \\[2\\]"):
        BadShape.apply(d(1.0, 2.0)).sum().backward()


def test_once_differentiable():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g
    x = d(2.0)
    go = ember.ones((), dtype=ember.float64, requires_grad=True)
    (g,) = autograd.grad(Cube.apply(x).sum(), x, grad_outputs=go, create_graph=True)
    assert g.item() == 12.0 and g.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.backward()


def test_function_returning_input_unchanged_gets_history():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5
    x = d(1.0)
    y = Ident.apply(x)
    assert y is not x and y.grad_fn.name() == "IdentBackward"
    y.backward()
    assert x.grad.item() == 5.0


def test_setup_context_style():
    class Mul(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x
    x, y = d(2.0), d(5.0)
    Mul.apply(x, y).backward()
    assert x.grad.item() == 5.0 and y.grad.item() == 2.0


def test_apply_under_no_grad_records_nothing():
    x = d(1.0)
    with ember.no_grad():
        y = Linear.apply(x.reshape(1, 1), x.reshape(1, 1))
    assert y.grad_fn is None and not y.requires_grad


def test_gradcheck_reports_mismatch():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 x g
    x = d(1.5, 2.5)
    with pytest.raises(autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False
    assert gradcheck(Wrong.apply, (x,), atol=10.0, rtol=10.0)


def test_gradcheck_warns_for_float32_and_needs_inputs():
    with pytest.warns(UserWarning, match="not a double precision"):
        gradcheck(lambda a: a * 2, (ember.ones(2, requires_grad=True),), eps=1e-3, atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (ember.ones(2),))


def test_gradgradcheck_on_builtin_ops():
    x = d(0.3, -0.7, 1.2)
    assert gradgradcheck(lambda a: (a.tanh() * a.exp()).sum(), (x,))
    assert gradgradcheck(lambda a: a.sigmoid() * a, (x,))
