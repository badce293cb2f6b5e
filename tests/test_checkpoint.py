"""ember.utils.checkpoint and the saved-tensor hooks it is built on."""
import tracemalloc
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential
from opencl_probe import opencl_available as _opencl_available


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3), nn.Sigmoid())


def _grads(model, x, run):
    model.zero_grad(set_to_none=True)
    x.grad = None
    ember.manual_seed(1)
    run().square().sum().backward()
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_equal_plain_with_dropout(reentrant):
    m = _model()
    x = ember.randn(5, 4, requires_grad=True)
    ref = _grads(m, x, lambda: m(x))
    got = _grads(m, x, lambda: checkpoint(m, x, use_reentrant=reentrant))
    seq = _grads(m, x, lambda: checkpoint_sequential(m, 3, x, use_reentrant=reentrant))
    for a, b, c in zip(ref, got, seq):
        np.testing.assert_array_equal(a, b)  # same dropout mask: the RNG state is replayed
        np.testing.assert_array_equal(a, c)


def test_without_preserved_rng_the_mask_differs():
    m = _model()
    x = ember.randn(64, 4, requires_grad=True)
    ref = _grads(m, x, lambda: m(x))
    got = _grads(m, x, lambda: checkpoint(m, x, use_reentrant=False, preserve_rng_state=False))
    assert not np.array_equal(ref[0], got[0])


def test_closed_form_gradient_and_autograd_grad():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = checkpoint(lambda t, k: (t * k).exp().sum(), x, k=3.0, use_reentrant=False)
    (g,) = ember.autograd.grad(y, x)
    np.testing.assert_allclose(g.numpy(), 3 * np.exp(3 * np.array([0.5, -1.0, 2.0])), rtol=1e-6)


def test_reentrant_refuses_grad_and_inputs():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = checkpoint(lambda t: t.exp().sum(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        ember.autograd.grad(y, x)
    y = checkpoint(lambda t: t.exp().sum(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        y.backward(inputs=[x])


def test_use_reentrant_default_warns_and_is_reentrant():
    w = nn.Linear(2, 2)
    x = ember.ones(1, 2)  # no input requires grad: the reentrant variant gives the weights no gradient
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = checkpoint(w, x)
    assert not y.requires_grad
    y = checkpoint(w, x, use_reentrant=False)  # the non-reentrant variant reaches the weights
    y.sum().backward()
    np.testing.assert_allclose(w.weight.grad.numpy(), np.ones((2, 2)))


def test_argument_errors():
    f = lambda t: t * 2  # noqa: E731
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: a"):
        checkpoint(f, x, use_reentrant=True, a=1)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(f, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(f, x, use_reentrant=False, determinism_check="bogus")
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        checkpoint_sequential([f], 1, x, use_reentrant=False, foo=1)


def test_determinism_check_catches_a_different_recomputation():
    calls = []

    def f(t):
        calls.append(1)
        return (t[: 3 - len(calls)] * t[: 3 - len(calls)]).sum()  # the second run saves a shorter slice

    x = ember.ones(3, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        y.backward()

    def g(t):  # the recomputation saves fewer tensors
        calls.append(1)
        return (t * t).exp().sum() if len(calls) == 1 else (t * 2).sum()

    calls.clear()
    y = checkpoint(g, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.backward()


def test_retain_graph_backward_twice():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = checkpoint(lambda t: (t.sin() * t).sum(), x, use_reentrant=False)
    y.backward(retain_graph=True)
    y.backward()
    xn = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.cos(xn) * xn + np.sin(xn)), rtol=1e-6)


def test_checkpoint_frees_activations():
    layers = []
    for _ in range(12):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    m = nn.Sequential(*layers)
    x = ember.randn(512, 64, requires_grad=True)

    def held(run):
        tracemalloc.start()
        y = run()
        live = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        y.sum().backward()
        return live

    plain = held(lambda: m(x))
    ckpt = held(lambda: checkpoint_sequential(m, 4, x, use_reentrant=False))
    one_activation = 512 * 64 * 4
    assert plain > 12 * one_activation  # every ReLU output kept for backward (one per block)
    # the 3 checkpointed segments keep their inputs only; the last (3 blocks) keeps its outputs
    assert ckpt < 7 * one_activation


def test_saved_tensors_hooks_pack_unpack_order():
    x = ember.tensor([0.3, -0.7], requires_grad=True)
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t.detach().numpy().copy()

    def unpack(a):
        log.append("unpack")
        return ember.from_numpy(a)

    with saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
    y.backward()
    assert log.count("unpack") == 3 and len([e for e in log if e != "unpack"]) == 3
    xn = np.array([0.3, -0.7])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xn) * (1 + xn), rtol=1e-6)


def test_saved_tensors_hooks_in_custom_function_and_version_check():
    class Sq(ember.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 2 * t * g

    packed = []
    a = ember.tensor([3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: packed.append(t) or len(packed) - 1, lambda i: packed[i]):
        y = Sq.apply(a)
    y.backward()
    assert len(packed) == 1 and a.grad.item() == 6.0
    b = ember.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        c = b * 1
        d = c * c
    c.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        d.sum().backward()


def test_save_on_cpu_and_disable():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with save_on_cpu():
        y = (x * x).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again
        pass


def test_no_warning_when_use_reentrant_given():
    x = ember.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda t: t * 2, x, use_reentrant=False).sum().backward()


@pytest.mark.skipif(not _opencl_available(), reason="needs the opencl backend with pyopencl and an OpenCL device")
@pytest.mark.parametrize("reentrant", [False, True])
def test_opencl_checkpoint_replays_dropout(reentrant):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 3)).to("opencl")
    x = ember.randn(5, 4, device="opencl", requires_grad=True)

    def grads(run):
        m.zero_grad(set_to_none=True)
        x.grad = None
        ember.manual_seed(1)
        run().square().sum().backward()
        return [t.grad.cpu().numpy() for t in [x, *m.parameters()]]

    ref = grads(lambda: m(x))
    got = grads(lambda: checkpoint(m, x, use_reentrant=reentrant))
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
