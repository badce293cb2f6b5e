"""The Optimizer base: parameter groups, defaults, zero_grad, step hooks (per optimizer and
global), bad input (PyTorch's errors), subclassing, and plugin optimizers reachable as
``ember.optim.<Name>``."""
import warnings

import numpy as np
import pytest

import ember
import ember.optim as optim
from ember.optim.optimizer import Optimizer, required


def leaf(*values):
    return ember.tensor(list(values), requires_grad=True)


ALL = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "RMSprop", "Adadelta", "Rprop", "ASGD", "LBFGS"]


# -- construction and groups --------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_every_optimizer_is_exported_and_builds(name):
    cls = getattr(optim, name)
    assert issubclass(cls, Optimizer)
    opt = cls([leaf(1.0, 2.0)])
    assert len(opt.param_groups) == 1
    assert set(opt.defaults) <= set(opt.param_groups[0])


def test_defaults_fill_groups_and_group_options_win():
    a, b = leaf(1.0), leaf(2.0)
    opt = optim.SGD([{"params": a}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1, weight_decay=0.01)
    g0, g1 = opt.param_groups
    assert g0["params"] == [a] and g0["lr"] == 0.1 and g0["momentum"] == 0
    assert g1["lr"] == 0.5 and g1["momentum"] == 0.9 and g1["weight_decay"] == 0.01
    assert opt.defaults["lr"] == 0.1


def test_generator_and_named_parameters():
    a, b = leaf(1.0), leaf(2.0)
    opt = optim.Adam(p for p in (a, b))
    assert opt.param_groups[0]["params"] == [a, b]
    opt = optim.Adam([("w", a), ("b", b)])
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": [leaf(3.0)]})
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.Adam([("w", a), b])


def test_add_param_group_later():
    a, b = leaf(1.0), leaf(2.0)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    b.grad = ember.tensor([1.0])
    opt.step()
    assert abs(b.item() - 1.99) < 1e-7 and a.item() == 1.0
    assert opt.param_groups[1]["momentum"] == 0.9


def test_bad_params_are_refused():
    a = leaf(1.0)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([a, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [a]}, {"params": [leaf(2.0), a]}], lr=0.1)
    with pytest.raises(ValueError, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        optim.SGD([a], lr=0.1).add_param_group([leaf(1.0)])


def test_non_leaf_that_retains_grad_is_accepted():
    a = leaf(1.0)
    b = a * 2
    b.retain_grad()
    optim.SGD([b], lr=0.1)


BAD_HYPERPARAMETERS = [
    ("SGD", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("SGD", dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    ("SGD", dict(lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    ("SGD", dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires"),
    ("SGD", dict(lr=float("nan")), "Invalid learning rate: nan"),
    ("Adam", dict(lr=-1e-3), "Invalid learning rate"),
    ("Adam", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("Adam", dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    ("Adam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("Adam", dict(weight_decay=-0.1), "Invalid weight_decay value"),
    ("AdamW", dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1"),
    ("Adamax", dict(betas=(-0.1, 0.9)), "Invalid beta parameter at index 0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(eps=-1.0), "Invalid epsilon value"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    ("RMSprop", dict(alpha=-0.5), "Invalid alpha value: -0.5"),
    ("RMSprop", dict(momentum=-0.5), "Invalid momentum value"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("Rprop", dict(etas=(0.5, 0.9)), "Invalid eta values"),
    ("ASGD", dict(weight_decay=-1), "Invalid weight_decay value"),
    ("LBFGS", dict(lr=-1), "Invalid learning rate"),
]


@pytest.mark.parametrize("name,kw,msg", BAD_HYPERPARAMETERS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD_HYPERPARAMETERS)])
def test_bad_hyperparameters_raise_value_error(name, kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        getattr(optim, name)([leaf(1.0)], **kw)


def test_bad_hyperparameters_in_a_group_are_refused_too():
    # PyTorch checks only the constructor's values; a bad per-group value would train silently
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.SGD([{"params": [leaf(1.0)], "lr": -1}], lr=0.1)
    opt = optim.Adam([leaf(1.0)])
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0"):
        opt.add_param_group({"params": [leaf(2.0)], "betas": (2.0, 0.9)})


def test_hyperparameter_of_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="'lr' must be a real number, got str"):
        optim.SGD([leaf(1.0)], lr="0.1")
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        optim.Adam([leaf(1.0)], lr=ember.tensor([0.1, 0.2]))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_option_conflicts(name):
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        getattr(optim, name)([leaf(1.0)], fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        getattr(optim, name)([leaf(1.0)], fused=True, differentiable=True)


def test_required_hyperparameter():
    class Plain(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            pass
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Plain([leaf(1.0)])
    assert Plain([{"params": [leaf(1.0)], "lr": 0.1}]).param_groups[0]["lr"] == 0.1
    assert repr(required) == "<required parameter>"


def test_repr_lists_groups():
    r = repr(optim.SGD([leaf(1.0)], lr=0.1, momentum=0.9))
    assert r.startswith("SGD (") and "Parameter Group 0" in r and "momentum: 0.9" in r and "lr: 0.1" in r


# -- zero_grad ----------------------------------------------------------------------------------

def test_zero_grad_sets_to_none_by_default():
    a = leaf(1.0, 2.0)
    (a * a).sum().backward()
    opt = optim.SGD([a], lr=0.1)
    opt.zero_grad()
    assert a.grad is None


def test_zero_grad_to_zeros_keeps_the_tensor():
    a = leaf(1.0, 2.0)
    (a * a).sum().backward()
    g = a.grad
    optim.SGD([a], lr=0.1).zero_grad(set_to_none=False)
    assert a.grad is g and g.tolist() == [0.0, 0.0] and not g.requires_grad


def test_zero_grad_detaches_a_grad_with_history():
    a = leaf(1.0, 2.0)
    (g,) = ember.autograd.grad((a * a).sum(), a, create_graph=True)
    a.grad = g
    assert a.grad.grad_fn is not None
    optim.SGD([a], lr=0.1).zero_grad(set_to_none=False)
    assert a.grad.grad_fn is None and a.grad.tolist() == [0.0, 0.0]


# -- step, closure and hooks ------------------------------------------------------------------------

def test_step_returns_the_closure_loss_and_runs_it_with_grad():
    a = leaf(1.0)
    opt = optim.SGD([a], lr=0.1)
    seen = []

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        seen.append(ember.is_grad_enabled())
        loss.backward()
        return loss
    with ember.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 1.0 and abs(a.item() - 0.8) < 1e-7
    assert not a.grad.requires_grad


def test_step_runs_without_recording_history():
    a = leaf(1.0, 2.0)
    a.grad = ember.ones(2)
    opt = optim.Adam([a])
    opt.step()
    assert a.grad_fn is None and a.is_leaf and a.requires_grad
    assert opt.state[a]["exp_avg"].grad_fn is None


def test_step_hooks_order_and_removal():
    a = leaf(1.0)
    a.grad = ember.tensor([1.0])
    opt = optim.SGD([a], lr=0.1)
    calls = []
    h1 = optim.register_optimizer_step_pre_hook(lambda o, args, kw: calls.append(("global-pre", o)))
    h2 = optim.register_optimizer_step_post_hook(lambda o, args, kw: calls.append(("global-post", o)))
    h3 = opt.register_step_pre_hook(lambda o, args, kw: calls.append(("pre", a.item())))
    h4 = opt.register_step_post_hook(lambda o, args, kw: calls.append(("post", a.item())))
    try:
        opt.step()
    finally:
        for h in (h1, h2, h3, h4):
            h.remove()
    assert [c[0] for c in calls] == ["global-pre", "pre", "post", "global-post"]
    assert calls[1][1] == 1.0 and abs(calls[2][1] - 0.9) < 1e-7 and calls[0][1] is opt
    calls.clear()
    opt.step()
    assert calls == []


def test_global_hooks_see_every_optimizer():
    opts = [optim.SGD([leaf(1.0)], lr=0.1), optim.Adam([leaf(1.0)])]
    seen = []
    with optim.register_optimizer_step_post_hook(lambda o, args, kw: seen.append(type(o).__name__)):
        for o in opts:
            o.step()
    assert seen == ["SGD", "Adam"]


def test_pre_hook_may_replace_the_arguments():
    a = leaf(2.0)
    opt = optim.SGD([a], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss
    opt.register_step_pre_hook(lambda o, args, kw: ((), {"closure": closure}))
    loss = opt.step()
    assert loss.item() == 4.0 and a.item() == 0.0
    opt.register_step_pre_hook(lambda o, args, kw: "nonsense")
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\)"):
        opt.step()


def test_state_dict_hooks():
    opt = optim.SGD([leaf(1.0)], lr=0.1)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1 and calls == ["pre"]
    opt.register_load_state_dict_pre_hook(lambda o, sd: calls.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load-post"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("first"), prepend=True)
    opt.load_state_dict(opt.state_dict())
    assert calls == ["pre", "pre", "load-pre", "first", "load-post"]


# -- subclassing (what a Lookahead plugin does) -------------------------------------------------------

class SignSGD(Optimizer):
    """A user optimizer written the PyTorch way."""

    def __init__(self, params, lr=required, decay=0.0):
        if lr is not required and lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, decay=decay))

    @ember.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state["n"] = state.get("n", 0) + 1
                p.add_(p.grad.sign(), alpha=-group["lr"] / state["n"] ** group["decay"])
        return loss


class Lookahead(Optimizer):
    """Wraps any optimizer: every k steps the slow weights move alpha towards the fast ones."""

    def __init__(self, base, k=2, alpha=0.5):
        self.base, self.k, self.alpha = base, k, alpha
        self.param_groups = base.param_groups
        self.defaults = base.defaults
        self.state = base.state
        self._init_hooks()
        self.slow = {p: p.detach().clone() for g in self.param_groups for p in g["params"]}
        self.count = 0

    def step(self, closure=None):
        loss = self.base.step(closure)
        self.count += 1
        if self.count % self.k == 0:
            with ember.no_grad():
                for p, s in self.slow.items():
                    s.add_(p - s, alpha=self.alpha)
                    p.copy_(s)
        return loss


def test_subclass_steps_and_saves_state():
    a = leaf(1.0, -1.0)
    opt = SignSGD([a], lr=0.5, decay=1.0)
    for _ in range(2):
        a.grad = ember.tensor([3.0, -0.1])
        opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [1 - 0.5 - 0.25, -1 + 0.5 + 0.25])
    sd = opt.state_dict()
    assert sd["state"] == {0: {"n": 2}} and sd["param_groups"][0]["params"] == [0]
    b = leaf(0.0, 0.0)
    opt2 = SignSGD([b], lr=0.5, decay=1.0)
    opt2.load_state_dict(sd)
    assert opt2.state[b]["n"] == 2


def test_subclass_step_is_hooked_once_even_through_super():
    class Counting(optim.SGD):
        def step(self, closure=None):
            return super().step(closure)
    a = leaf(1.0)
    a.grad = ember.tensor([1.0])
    opt = Counting([a], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda *args: calls.append(1))
    opt.step()
    assert calls == [1] and abs(a.item() - 0.9) < 1e-7


def test_wrapper_optimizer_runs_inner_and_outer_hooks():
    a = leaf(1.0)
    inner = optim.SGD([a], lr=0.25)
    la = Lookahead(inner, k=2, alpha=0.5)
    calls = []
    inner.register_step_post_hook(lambda *args: calls.append("inner"))
    la.register_step_post_hook(lambda *args: calls.append("outer"))
    for _ in range(2):
        a.grad = ember.tensor([1.0])
        la.step()
    assert calls == ["inner", "outer", "inner", "outer"]
    assert abs(a.item() - 0.75) < 1e-7          # fast weights at 0.5, slow 1.0 -> 0.75
    assert la.param_groups is inner.param_groups
    sched = optim.lr_scheduler.StepLR(la, step_size=1, gamma=0.5)
    la.step()
    sched.step()
    assert inner.param_groups[0]["lr"] == 0.125


# -- plugins ------------------------------------------------------------------------------------------

class _OptimizerPlugin:
    @ember.hookimpl
    def ember_register_optimizers(self, register):
        register(Lookahead)
        register(SignSGD, name="SignSGDFromPlugin")


def test_plugin_optimizers_are_reachable_by_name():
    from ember import _plugins
    name = _plugins.register_plugin(_OptimizerPlugin(), name="optim-plugin-test")
    try:
        assert optim.Lookahead is Lookahead
        assert optim.SignSGDFromPlugin is SignSGD
        assert "Lookahead" in dir(optim)
        assert optim.SGD.__module__ == "ember.optim.sgd"  # built-ins are not shadowed
    finally:
        _plugins.unregister_plugin(name)
    with pytest.raises(AttributeError, match="no attribute 'Lookahead'"):
        optim.Lookahead


def test_unknown_optimizer_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'Adamm'"):
        optim.Adamm
    assert not hasattr(optim, "NoSuchOptimizer")


def test_import_ember_as_torch_style_loop():
    torch = ember
    w = torch.zeros(3, requires_grad=True)
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    y = torch.tensor([1.0, -1.0])
    opt = torch.optim.SGD([w], lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(60):
            opt.zero_grad()
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            opt.step()
            sched.step()
    assert loss.item() < 1e-3
    assert sched.get_last_lr() == [0.05 * 0.5 ** 6]


def test_wrapper_without_optimizer_init_still_steps():
    class Bare(Optimizer):
        def __init__(self, base):
            self.base = base
            self.param_groups = base.param_groups
            self.defaults = base.defaults
            self.state = base.state

        def step(self, closure=None):
            return self.base.step(closure)
    a = leaf(1.0)
    a.grad = ember.tensor([1.0])
    seen = []
    with optim.register_optimizer_step_pre_hook(lambda o, args, kw: seen.append(type(o).__name__)):
        Bare(optim.SGD([a], lr=0.5)).step()
    assert a.item() == 0.5 and seen == ["Bare", "SGD"]
