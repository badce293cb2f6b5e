"""nn.utils: fusion, stateless.functional_call, skip_init, the old weight_norm, prune."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.utils import prune, stateless


def _bn(n):
    bn = nn.BatchNorm2d(n)
    with ember.no_grad():
        bn.running_mean.copy_(ember.linspace(-0.5, 0.5, n))
        bn.running_var.copy_(ember.linspace(0.5, 2.0, n))
        bn.weight.copy_(ember.linspace(1.0, -1.0, n))
        bn.bias.copy_(ember.linspace(0.2, 0.4, n))
    return bn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_conv_then_bn(transpose):
    ember.manual_seed(0)
    conv = (nn.ConvTranspose2d(2, 3, 3) if transpose else nn.Conv2d(2, 3, 3, bias=False)).eval()
    bn = _bn(3)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    x = ember.randn(2, 2, 6, 6)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert conv.bias is None or conv.bias is not fused.bias  # a copy; the original is unchanged
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn_weights_closed_form():
    w, b = ember.tensor([[1.0, 2.0], [3.0, 4.0]]), ember.tensor([0.5, -0.5])
    rm, rv = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 0.0])
    g, beta = ember.tensor([2.0, 1.0]), ember.tensor([0.0, 1.0])
    fw, fb = nn.utils.fuse_linear_bn_weights(w, b, rm, rv, 1.0, g, beta)
    scale = np.array([2.0 / 2.0, 1.0 / 1.0])  # gamma / sqrt(var + eps)
    np.testing.assert_allclose(fw.detach().numpy(), np.array([[1.0, 2.0], [3.0, 4.0]]) * scale[:, None])
    np.testing.assert_allclose(fb.detach().numpy(), (np.array([0.5, -0.5]) - [1.0, 2.0]) * scale + [0.0, 1.0])
    assert isinstance(fw, nn.Parameter) and fw.requires_grad is False
    bn = nn.BatchNorm1d(3).eval()
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 4).eval(), bn)


def test_functional_call_swaps_for_the_call_only():
    m = nn.Linear(2, 1)
    w0 = m.weight.detach().clone()
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        out = stateless.functional_call(m, {"weight": ember.tensor([[1.0, 2.0]]), "bias": ember.tensor([0.5])},
                                        (ember.tensor([[3.0, 4.0]]),))
    assert out.item() == 11.5
    np.testing.assert_array_equal(m.weight.detach().numpy(), w0.numpy())
    with pytest.warns(FutureWarning):
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'.\n\tMissing key\\(s\\): 'bias'"):
            stateless.functional_call(m, {"weight": ember.ones(1, 2), "foo": ember.ones(1)}, ember.ones(1, 2),
                                      strict=True)


def test_functional_call_ties_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    with pytest.warns(FutureWarning):
        out = stateless.functional_call(m, {"a.weight": 2 * ember.eye(2)}, ember.ones(1, 2))
    np.testing.assert_array_equal(out.detach().numpy(), [[4.0, 4.0]])  # b.weight follows a.weight
    with pytest.warns(FutureWarning):
        with pytest.raises(ValueError, match="which are tied"):
            stateless.functional_call(m, {"a.weight": ember.eye(2), "b.weight": ember.ones(2, 2)}, ember.ones(1, 2))


def test_skip_init():
    m = nn.utils.skip_init(nn.Linear, 4, 2, bias=False)
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (2, 4) and m.bias is None
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(nn.ReLU)


def test_old_weight_norm_keys_values_and_remove():
    m = nn.Linear(3, 2)
    with ember.no_grad():
        m.weight.copy_(ember.tensor([[3.0, 0.0, 4.0], [0.0, 1.0, 0.0]]))
    with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
        nn.utils.weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(m.weight_g.detach().numpy(), [[5.0], [1.0]])
    with ember.no_grad():
        m.weight_g.mul_(2)
    m(ember.ones(1, 3))  # the pre-hook recomputes weight = g * v / ||v||
    np.testing.assert_allclose(m.weight.detach().numpy(), [[6.0, 0.0, 8.0], [0.0, 2.0, 0.0]], rtol=1e-6)
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        nn.utils.weight_norm(m)
    nn.utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m)
    with pytest.warns(FutureWarning):
        whole = nn.utils.weight_norm(nn.Linear(3, 2), dim=None)
    assert tuple(whole.weight_g.shape) == ()


def _lin():
    m = nn.Linear(4, 3)
    with ember.no_grad():
        m.weight.copy_(ember.tensor([[0.1, -0.5, 0.3, 0.9], [-0.2, 0.05, 0.7, -0.6], [0.4, -0.8, 0.15, 0.25]]))
    return m


def test_l1_unstructured_then_ln_structured_and_remove():
    m = _lin()
    prune.l1_unstructured(m, "weight", amount=0.5)  # the 6 smallest |w| go
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    np.testing.assert_array_equal(m.weight_mask.numpy(), [[0, 1, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]])
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)  # the row with the smallest kept norm goes
    np.testing.assert_array_equal(m.weight_mask.numpy(), [[0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 0, 0]])
    assert isinstance(next(iter(m._forward_pre_hooks.values())), prune.PruningContainer)
    assert prune.is_pruned(m)
    prune.remove(m, "weight")
    assert list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    np.testing.assert_allclose(m.weight.detach().numpy(), [[0, -0.5, 0, 0.9], [0, 0, 0.7, -0.6], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_global_unstructured_custom_mask_and_errors():
    a, b = nn.Linear(3, 2), nn.Linear(2, 2)
    with ember.no_grad():
        a.weight.copy_(ember.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]))
        b.weight.copy_(ember.tensor([[0.5, 7.0], [-0.1, 2.5]]))
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=4)
    np.testing.assert_array_equal(a.weight_mask.numpy(), [[0, 0, 1], [1, 1, 1]])
    np.testing.assert_array_equal(b.weight_mask.numpy(), [[0, 1], [0, 1]])
    prune.custom_from_mask(b, "bias", mask=ember.tensor([0.0, 1.0]))
    assert b.bias[0].item() == 0.0 and b.bias[1].item() == b.bias_orig[1].item()
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.L1Unstructured(1.5)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.L1Unstructured("x")
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number of parameters to prune=4"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=5)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
        prune.ln_structured(nn.Linear(2, 2), "bias", amount=1, n=1, dim=0)


def test_random_pruning_counts():
    ember.manual_seed(0)
    m = nn.Conv2d(4, 6, 3)
    prune.random_unstructured(m, "weight", amount=0.25)
    assert int(m.weight_mask.sum().item()) == 6 * 4 * 9 - round(0.25 * 6 * 4 * 9)
    prune.random_structured(m, "weight", amount=2, dim=0)
    per_channel = m.weight_mask.sum(dim=(1, 2, 3))
    assert int((per_channel == 0).sum().item()) == 2
    x = ember.randn(1, 4, 5, 5)
    np.testing.assert_allclose(m(x).detach().numpy(),
                               nn.functional.conv2d(x, m.weight_orig * m.weight_mask, m.bias).detach().numpy(),
                               rtol=1e-6)


def test_old_spectral_norm_power_iteration_keys_and_remove():
    m = nn.Linear(2, 2, bias=False)
    with ember.no_grad():
        m.weight.copy_(ember.tensor([[3.0, 0.0], [0.0, 1.0]]))
    nn.utils.spectral_norm(m, n_power_iterations=5)
    sd = m.state_dict()
    assert list(sd) == ["weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""]["spectral_norm"] == {"weight.version": 1}
    with ember.no_grad():
        m.weight_u.copy_(ember.tensor([0.8, 0.6]))
    m(ember.ones(1, 2))  # training mode: power iteration converges to sigma_max = 3
    np.testing.assert_allclose(m.weight.detach().numpy(), [[1.0, 0.0], [0.0, 1 / 3]], rtol=1e-3)
    np.testing.assert_allclose(np.abs(m.weight_u.numpy()), [1.0, 0.0], atol=1e-3)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["weight"] and "spectral_norm" not in m.state_dict()._metadata[""]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(m)
    ct = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 5, 3))  # dim 1 for transposed convolutions
    assert tuple(ct.weight_u.shape) == (5,) and tuple(ct.weight_v.shape) == (18,)
