"""Optimizer state dicts: PyTorch's exact layout (state keyed by parameter index, groups holding
index lists and every option, per-parameter state as tensors), round trips that resume
bit-identically (also through pickle), copies on load, and clear errors for checkpoints that do
not fit."""
import copy
import pickle

import numpy as np
import pytest

import ember
import ember.optim as optim

# PyTorch 2.x: the keys of a parameter group, in order, and each optimizer's per-parameter state
GROUP_KEYS = {
    "SGD": ["lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach", "differentiable",
            "fused"],
    "Adam": ["lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable",
             "fused", "decoupled_weight_decay"],
    "AdamW": ["lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable",
              "fused", "decoupled_weight_decay"],
    "Adamax": ["lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable"],
    "NAdam": ["lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "maximize", "foreach",
              "capturable", "differentiable"],
    "RAdam": ["lr", "betas", "eps", "weight_decay", "maximize", "foreach", "capturable", "decoupled_weight_decay",
              "differentiable"],
    "Adagrad": ["lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value", "foreach", "maximize",
                "differentiable", "fused"],
    "RMSprop": ["lr", "momentum", "alpha", "eps", "centered", "weight_decay", "capturable", "foreach", "maximize",
                "differentiable"],
    "Adadelta": ["lr", "rho", "eps", "weight_decay", "maximize", "capturable", "foreach", "differentiable"],
    "Rprop": ["lr", "etas", "step_sizes", "foreach", "maximize", "differentiable", "capturable"],
    "ASGD": ["lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable"],
    "LBFGS": ["lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"],
}

# (options, per-parameter state: name -> "scalar" (0-d tensor) or "param" (shaped like the parameter))
STATE = {
    "SGD": [(dict(lr=0.1), {}), (dict(lr=0.1, momentum=0.9), {"momentum_buffer": "param"})],
    "Adam": [(dict(lr=0.1), {"step": "scalar", "exp_avg": "param", "exp_avg_sq": "param"}),
             (dict(lr=0.1, amsgrad=True), {"step": "scalar", "exp_avg": "param", "exp_avg_sq": "param",
                                           "max_exp_avg_sq": "param"})],
    "AdamW": [(dict(lr=0.1), {"step": "scalar", "exp_avg": "param", "exp_avg_sq": "param"})],
    "Adamax": [(dict(lr=0.1), {"step": "scalar", "exp_avg": "param", "exp_inf": "param"})],
    "NAdam": [(dict(lr=0.1), {"step": "scalar", "mu_product": "scalar", "exp_avg": "param", "exp_avg_sq": "param"})],
    "RAdam": [(dict(lr=0.1), {"step": "scalar", "exp_avg": "param", "exp_avg_sq": "param"})],
    "Adagrad": [(dict(lr=0.1), {"step": "scalar", "sum": "param"})],
    "RMSprop": [(dict(lr=0.01), {"step": "scalar", "square_avg": "param"}),
                (dict(lr=0.01, momentum=0.9, centered=True),
                 {"step": "scalar", "square_avg": "param", "momentum_buffer": "param", "grad_avg": "param"})],
    "Adadelta": [(dict(), {"step": "scalar", "square_avg": "param", "acc_delta": "param"})],
    "Rprop": [(dict(lr=0.01), {"step": "scalar", "prev": "param", "step_size": "param"})],
    "ASGD": [(dict(lr=0.01, t0=1), {"step": "scalar", "eta": "scalar", "mu": "scalar", "ax": "param"})],
}
CASES = [(n, kw, st) for n, lst in STATE.items() for kw, st in lst]
IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)]

INIT = [np.array([1.0, -2.0, 0.5]), np.array([[0.3, -0.7], [1.1, 0.2]]), np.array([2.0])]


def make(name, kw, values=INIT):
    params = [ember.tensor(v, dtype=ember.float32, requires_grad=True) for v in values]
    opt = getattr(optim, name)([{"params": params[:1]}, {"params": params[1:], "lr": kw.get("lr", 1.0) / 2}], **kw)
    return params, opt


def train(params, opt, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((p - 0.3) ** 2).sum() + (p * 1.5).sin().sum() for p in params)
        loss.backward()
        opt.step()


@pytest.mark.parametrize("name,kw,expected", CASES, ids=IDS)
def test_layout_matches_pytorch(name, kw, expected):
    params, opt = make(name, kw)
    train(params, opt, 2)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1, 2]]
    for g in sd["param_groups"]:
        assert list(g) == GROUP_KEYS[name] + ["params"]
    assert sd["param_groups"][1]["lr"] == kw.get("lr", 1.0) / 2
    if not expected:
        assert sd["state"] == {}
        return
    assert sorted(sd["state"]) == [0, 1, 2]
    for i, p in enumerate(params):
        st = sd["state"][i]
        assert set(st) == set(expected), f"state of parameter {i}: {sorted(st)}"
        for key, kind in expected.items():
            v = st[key]
            assert isinstance(v, ember.Tensor)
            if kind == "scalar":
                assert v.shape == () and v.dtype == ember.float32 and v.device.type == "cpu"
            else:
                assert v.shape == p.shape and v.dtype == p.dtype
        if "step" in st:
            assert st["step"].item() == 2.0


def test_lbfgs_group_layout():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.LBFGS([x])
    assert list(opt.state_dict()["param_groups"][0]) == GROUP_KEYS["LBFGS"] + ["params"]


def test_sgd_documented_layout():
    """The example of PyTorch's ``Optimizer.state_dict`` documentation, key for key."""
    ps = [ember.tensor([1.0], requires_grad=True) for _ in range(4)]
    opt = optim.SGD([{"params": ps[:1], "lr": 0.01, "weight_decay": 0},
                     {"params": ps[1:], "lr": 0.001, "weight_decay": 0.5}], lr=0.1, momentum=0.9)
    for p in ps:
        p.grad = ember.tensor([1.0])
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0, 1, 2, 3]
    assert all(list(s) == ["momentum_buffer"] for s in sd["state"].values())
    assert (sd["param_groups"][0]["lr"], sd["param_groups"][0]["weight_decay"], sd["param_groups"][0]["params"]) == \
        (0.01, 0, [0])
    assert (sd["param_groups"][1]["lr"], sd["param_groups"][1]["weight_decay"], sd["param_groups"][1]["params"]) == \
        (0.001, 0.5, [1, 2, 3])


@pytest.mark.parametrize("name,kw,expected", CASES, ids=IDS)
def test_round_trip_through_pickle_resumes_identically(name, kw, expected):
    p1, o1 = make(name, kw)
    train(p1, o1, 6)

    p2, o2 = make(name, kw)
    train(p2, o2, 3)
    blob = pickle.dumps(o2.state_dict())
    values = [p.detach().numpy().copy() for p in p2]

    p3, o3 = make(name, {**kw, "lr": 123.0})      # the loaded groups bring back the saved options
    with ember.no_grad():
        for p, v in zip(p3, values):
            p.copy_(ember.tensor(v))
    o3.load_state_dict(pickle.loads(blob))
    assert o3.param_groups[0]["lr"] == kw.get("lr", 1.0)
    train(p3, o3, 3)
    for a, b in zip(p1, p3):
        assert np.isfinite(a.detach().numpy()).all()
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert [g["params"] for g in o3.param_groups] == [p3[:1], p3[1:]]


def test_pickling_the_whole_optimizer():
    params, opt = make("Adam", dict(lr=0.1))
    train(params, opt, 2)
    clone = pickle.loads(pickle.dumps(opt))
    assert isinstance(clone, optim.Adam)
    cp = clone.param_groups[0]["params"][0]
    assert cp is not params[0] and cp.tolist() == params[0].tolist()
    assert clone.state[cp]["step"].item() == 2.0
    cp.grad = ember.ones(3)
    clone.step()                                   # hooks and step work after unpickling
    assert clone.state[cp]["step"].item() == 3.0
    deep = copy.deepcopy(opt)
    assert deep.state_dict()["state"][0]["exp_avg"].tolist() == opt.state_dict()["state"][0]["exp_avg"].tolist()


def test_load_copies_instead_of_aliasing():
    p1, o1 = make("Adam", dict(lr=0.1))
    train(p1, o1, 2)
    p2, o2 = make("Adam", dict(lr=0.1))
    o2.load_state_dict(o1.state_dict())
    before = o1.state[p1[0]]["exp_avg"].tolist()
    train(p2, o2, 2)
    assert o1.state[p1[0]]["exp_avg"].tolist() == before
    assert o1.state[p1[0]]["step"].item() == 2.0 and o2.state[p2[0]]["step"].item() == 4.0
    # and the loaded groups are not the saved dict's groups
    sd = o1.state_dict()
    o2.load_state_dict(sd)
    o2.param_groups[0]["lr"] = 7.0
    assert sd["param_groups"][0]["lr"] == 0.1


def test_state_dict_is_live_like_pytorch():
    params, opt = make("SGD", dict(lr=0.1, momentum=0.9))
    train(params, opt, 1)
    sd = opt.state_dict()
    buf = opt.state[params[0]]["momentum_buffer"]
    assert sd["state"][0]["momentum_buffer"] is buf


def test_load_casts_floating_state_to_the_parameter_dtype():
    p64 = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in INIT]
    o64 = optim.Adam(p64, lr=0.1)
    train(p64, o64, 2)
    p32 = [ember.tensor(v, dtype=ember.float32, requires_grad=True) for v in INIT]
    o32 = optim.Adam(p32, lr=0.1)
    o32.load_state_dict(o64.state_dict())
    st = o32.state[p32[1]]
    assert st["exp_avg"].dtype == ember.float32 and st["step"].dtype == ember.float32
    train(p32, o32, 1)
    assert st["step"].item() == 3.0


def test_pytorch_style_checkpoint_written_by_hand_loads():
    """A state dict laid out as PyTorch writes it (with an old-style integer ``step``)."""
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.5)
    ckpt = {"state": {0: {"step": 4, "exp_avg": ember.tensor([0.1, 0.2]), "exp_avg_sq": ember.tensor([0.01, 0.04])}},
            "param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False,
                              "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                              "fused": None, "params": [0]}]}
    opt.load_state_dict(ckpt)
    st = opt.state[w]
    assert isinstance(st["step"], ember.Tensor) and st["step"].item() == 4.0
    assert opt.param_groups[0]["decoupled_weight_decay"] is False        # missing option: the default
    assert opt.param_groups[0]["lr"] == 0.01
    w.grad = ember.tensor([1.0, 1.0])
    opt.step()
    assert st["step"].item() == 5.0


def test_mismatched_checkpoints_are_refused():
    params, opt = make("Adam", dict(lr=0.1))
    train(params, opt, 1)
    sd = opt.state_dict()
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.Adam([a]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.Adam([{"params": [a]}, {"params": [ember.tensor([1.0], requires_grad=True)]}]).load_state_dict(sd)
    b = ember.tensor([[1.0, 2.0, 3.0]], requires_grad=True)       # 3 elements, shape (1, 3) instead of (3,)
    c = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    d = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"state 'exp_avg' of parameter 0 has shape \[3\] but the parameter has "
                                         r"shape \[1, 3\]"):
        optim.Adam([{"params": [b]}, {"params": [c, d]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="has no 'param_groups' entry"):
        opt.load_state_dict({"state": {}})


def test_adagrad_has_state_before_the_first_step():
    params, opt = make("Adagrad", dict(lr=0.1, initial_accumulator_value=0.25))
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1, 2]
    assert sd["state"][1]["sum"].tolist() == [[0.25, 0.25], [0.25, 0.25]] and sd["state"][1]["step"].item() == 0.0
