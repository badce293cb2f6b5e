"""Optimizers with ``ember.nn`` models: per-module parameter groups, parameters updated in place
(the module keeps its Parameter objects), named parameters, and a model + optimizer checkpoint
that resumes identically."""
import pickle

import numpy as np
import pytest

import ember
from ember import nn


def model_and_data(seed=0):
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal((16, 4)), dtype=ember.float32)
    y = ember.tensor(rng.standard_normal((16, 2)), dtype=ember.float32)
    return model, x, y


def per_module_sgd(model):
    return ember.optim.SGD([{"params": model[0].parameters()},
                            {"params": model[2].parameters(), "lr": 1e-3}], lr=1e-2, momentum=0.9)


def train(model, opt, x, y, steps):
    loss_fn = nn.MSELoss()
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_per_module_groups_use_their_own_learning_rate():
    model, x, y = model_and_data()
    opt = per_module_sgd(model)
    before = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    params = {n: p for n, p in model.named_parameters()}
    nn.MSELoss()(model(x), y).backward()
    grads = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    opt.step()
    for n, p in model.named_parameters():
        lr = 1e-2 if n.startswith("0.") else 1e-3
        np.testing.assert_allclose(p.detach().numpy(), before[n] - lr * grads[n], rtol=1e-6, atol=1e-7, err_msg=n)
        assert p is params[n] and isinstance(p, nn.Parameter) and p.is_leaf
    assert [len(g["params"]) for g in opt.param_groups] == [2, 2]


def test_training_reduces_the_loss_and_the_module_sees_the_new_values():
    model, x, y = model_and_data()
    opt = ember.optim.Adam(model.parameters(), lr=3e-2)
    losses = train(model, opt, x, y, 100)
    assert losses[-1] < 0.5 * losses[0]
    sd = model.state_dict()
    np.testing.assert_array_equal(sd["0.weight"].numpy(), model[0].weight.detach().numpy())


def test_named_parameters_are_kept_in_the_state_dict():
    model, x, y = model_and_data()
    opt = ember.optim.AdamW(model.named_parameters(), lr=1e-3)
    train(model, opt, x, y, 1)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["param_names"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert sd["state"][0]["exp_avg"].shape == model[0].weight.shape


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_model_and_optimizer_checkpoint_resumes_identically(name):
    def make(seed=0):
        model, x, y = model_and_data(seed)
        if name == "SGD":
            return model, per_module_sgd(model), x, y
        kw = {"lr": 1e-2, "momentum": 0.5} if name == "RMSprop" else {"lr": 1e-2}
        return model, getattr(ember.optim, name)(model.parameters(), **kw), x, y

    m1, o1, x, y = make()
    full = train(m1, o1, x, y, 8)
    m2, o2, _, _ = make()
    train(m2, o2, x, y, 4)
    blob = pickle.dumps({"model": m2.state_dict(), "optim": o2.state_dict()})
    m3, o3, _, _ = make(seed=1)            # different initial weights: everything comes from the checkpoint
    ckpt = pickle.loads(blob)
    m3.load_state_dict(ckpt["model"])
    o3.load_state_dict(ckpt["optim"])
    rest = train(m3, o3, x, y, 4)
    assert rest == full[4:]
    for (n, a), (_, b) in zip(m1.named_parameters(), m3.named_parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=n)


def test_frozen_layer_added_later_with_add_param_group():
    model, x, y = model_and_data()
    for p in model[0].parameters():
        p.requires_grad_(False)
    opt = ember.optim.SGD(model[2].parameters(), lr=0.1)
    w0 = model[0].weight.detach().numpy().copy()
    train(model, opt, x, y, 2)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), w0)
    for p in model[0].parameters():
        p.requires_grad_(True)
    opt.add_param_group({"params": model[0].parameters(), "lr": 0.05})
    train(model, opt, x, y, 1)
    assert not np.array_equal(model[0].weight.detach().numpy(), w0)
