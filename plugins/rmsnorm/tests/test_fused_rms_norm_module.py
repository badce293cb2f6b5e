"""ember.nn.FusedRMSNorm: reachable through the plugin hook, a drop-in for nn.RMSNorm (arguments,
repr, state dict, values and gradients), trainable on every installed backend."""
import pytest

import ember
from ember import nn
from ember.testing import assert_close


def test_reachable_through_the_plugin_hook():
    from ember_rmsnorm.module import FusedRMSNorm
    assert nn.FusedRMSNorm is FusedRMSNorm and issubclass(FusedRMSNorm, nn.Module)


def test_a_drop_in_for_nn_rmsnorm(device):
    ref = nn.RMSNorm((3, 4), eps=1e-5).to(device)
    with ember.no_grad():
        ref.weight.copy_(ember.randn(3, 4))
    fused = nn.FusedRMSNorm((3, 4), eps=1e-5).to(device)
    fused.load_state_dict(ref.state_dict())
    assert repr(fused) == "FusedRMSNorm((3, 4), eps=1e-05, elementwise_affine=True)"
    assert list(fused.state_dict()) == ["weight"]
    x = ember.randn(2, 5, 3, 4, device=device, requires_grad=True)
    y_ref, y = ref(x), fused(x)
    assert_close(y, y_ref.detach(), rtol=1e-5, atol=1e-6)
    (gx_ref, gw_ref) = ember.autograd.grad((y_ref * y_ref).sum(), (x, ref.weight))
    (gx, gw) = ember.autograd.grad((y * y).sum(), (x, fused.weight))
    assert_close(gx, gx_ref, rtol=1e-4, atol=1e-5)
    assert_close(gw, gw_ref, rtol=1e-4, atol=1e-5)


def test_arguments():
    m = nn.FusedRMSNorm(8)
    assert m.normalized_shape == (8,) and m.eps is None and m.weight.tolist() == [1.0] * 8
    m = nn.FusedRMSNorm([2, 3], elementwise_affine=False)
    assert m.weight is None and list(m.parameters()) == [] and m.normalized_shape == (2, 3)
    assert tuple(m(ember.randn(4, 2, 3)).shape) == (4, 2, 3)
    m = nn.FusedRMSNorm(4, dtype=ember.float64)
    assert m.weight.dtype is ember.float64
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\]"):
        m(ember.randn(2, 5, dtype=ember.float64))


def test_trains(device):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.FusedRMSNorm(16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=0.02)
    x = ember.randn(64, 8, device=device)
    y = (x[:, :1] * 2 - x[:, 1:2]).detach()
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.1 * first
    assert model[1].weight.grad is not None
