"""nn.Module API: registration and attribute magic, iterators, state dicts, hooks, modes,
conversion, containers, printed reprs, plugin modules."""
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        self.fc = nn.Linear(4, 2)
        self.register_buffer("scale", ember.ones(1))
        self.register_buffer("tmp", ember.zeros(1), persistent=False)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3))) * self.scale


def test_parameter_basics():
    t = ember.ones(3)
    p = nn.Parameter(t)
    assert isinstance(p, ember.Tensor) and p.requires_grad and p.is_leaf
    assert p.untyped_storage() is t.untyped_storage()
    with ember.no_grad():
        p.add_(1)
    assert t.tolist() == [2.0, 2.0, 2.0]  # shares storage with its data
    assert repr(p).startswith("Parameter containing:\ntensor([2., 2., 2.], requires_grad=True)")
    assert not nn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(ember.ones(2, dtype=ember.int64))
    q = (nn.Parameter(ember.ones(2)) * 2)
    assert type(q) is ember.Tensor
    import copy
    import pickle
    c = copy.deepcopy(p)
    assert isinstance(c, nn.Parameter) and c.untyped_storage() is not p.untyped_storage() and c.tolist() == p.tolist()
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.requires_grad and r.tolist() == p.tolist()


def test_registration_and_attribute_magic():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["features.0.weight", "features.0.bias", "features.1.weight",
                                                    "features.1.bias", "fc.weight", "fc.bias"]
    # a module's own tensors come before its children's, as in PyTorch
    assert [n for n, _ in m.named_buffers()] == ["scale", "tmp", "features.1.running_mean", "features.1.running_var",
                                                 "features.1.num_batches_tracked"]
    assert [n for n, _ in m.named_children()] == ["features", "fc"]
    assert [n for n, _ in m.named_modules()] == ["", "features", "features.0", "features.1", "features.2", "fc"]
    assert len(list(m.parameters(recurse=False))) == 0 and len(list(m.buffers(recurse=False))) == 2
    assert m.get_submodule("features.1") is m.features[1]
    assert m.get_parameter("fc.bias") is m.fc.bias
    assert m.get_buffer("features.1.running_var") is m.features[1].running_var
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("features.nope")
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nothing'"):
        m.nothing
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'weight'"):
        m.fc.weight = ember.ones(2, 4)
    m.fc.weight = nn.Parameter(ember.zeros(2, 4))
    assert m.fc.weight.sum().item() == 0
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("fc", ember.ones(1))
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    del m.fc
    assert "fc" not in dict(m.named_children())
    assert "features" in dir(m) and "scale" in dir(m) and "forward" in dir(m)
    # shared parameters appear once unless asked
    s = nn.Module()
    s.a = nn.Linear(2, 2)
    s.b = s.a
    assert len(list(s.parameters())) == 2
    assert len(list(s.named_parameters(remove_duplicate=False))) == 4


def test_state_dict_names_roundtrip_and_errors():
    m = Net()
    sd = m.state_dict()
    assert list(sd) == ["scale", "features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias",
                        "features.1.running_mean", "features.1.running_var", "features.1.num_batches_tracked",
                        "fc.weight", "fc.bias"]
    assert not sd["fc.weight"].requires_grad and m.state_dict(keep_vars=True)["fc.weight"] is m.fc.weight
    assert sd["fc.weight"].untyped_storage() is m.fc.weight.untyped_storage()
    assert list(m.state_dict(prefix="model."))[1] == "model.features.0.weight"
    m2 = Net()
    res = m2.load_state_dict({k: v.clone() for k, v in sd.items()})
    assert res.missing_keys == [] and res.unexpected_keys == [] and str(res) == "<All keys matched successfully>"
    for k, v in m2.state_dict().items():
        assert np.array_equal(v.numpy(), sd[k].numpy()), k
    bad = dict(sd)
    bad.pop("fc.bias")
    bad["extra.weight"] = ember.ones(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "fc.bias"') as ei:
        m2.load_state_dict(bad)
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in str(ei.value)
    r = m2.load_state_dict(bad, strict=False)
    assert r.missing_keys == ["fc.bias"] and r.unexpected_keys == ["extra.weight"]
    wrong = dict(sd)
    wrong["fc.weight"] = ember.ones(3, 4)
    before = m2.fc.weight.detach().clone()
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with shape "
                                           r"ember.Size\(\[3, 4\]\) from checkpoint, the shape in current model is "
                                           r"ember.Size\(\[2, 4\]\)"):
        m2.load_state_dict(wrong, strict=False)
    assert np.array_equal(m2.fc.weight.detach().numpy(), before.numpy())
    # assign=True takes the checkpoint's tensors
    m3 = nn.Linear(2, 3)
    w = ember.ones(3, 2)
    m3.load_state_dict({"weight": w, "bias": ember.zeros(3)}, assign=True)
    assert isinstance(m3.weight, nn.Parameter) and m3.weight.untyped_storage() is w.untyped_storage()
    # old BatchNorm checkpoints without num_batches_tracked load
    bn = nn.BatchNorm1d(2)
    old = OrderedDict((k, v) for k, v in bn.state_dict().items() if k != "num_batches_tracked")
    old._metadata = {"": {"version": 1}}
    assert bn.load_state_dict(old).missing_keys == []


def test_forward_hooks():
    m = nn.Linear(3, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    y = m(ember.ones(1, 3))
    assert calls == [ember.Size([1, 2])]
    assert np.allclose(y.detach().numpy(), m.bias.detach().numpy() + 1)
    h1.remove()
    h2.remove()
    m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True)
    order = []
    m.register_forward_hook(lambda *a: order.append("second"))
    m.register_forward_hook(lambda *a: order.append("first"), prepend=True)
    m(ember.ones(1, 3))
    assert order == ["first", "second"]
    from ember.nn.modules.module import register_module_forward_hook
    seen = []
    g = register_module_forward_hook(lambda mod, a, o: seen.append(type(mod).__name__))
    try:
        nn.Sequential(nn.ReLU(), nn.Tanh())(ember.ones(2))
    finally:
        g.remove()
    assert seen == ["ReLU", "Tanh", "Sequential"]


def test_full_backward_hooks():
    m = nn.Linear(3, 2)
    got = {}

    def pre(mod, grad_output):
        got["pre"] = grad_output[0].clone()
        return (grad_output[0] * 2,)

    def hook(mod, grad_input, grad_output):
        got["gi"] = grad_input
        got["go"] = grad_output
        return (grad_input[0] * 10,)
    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    x = ember.ones(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert np.allclose(got["pre"].numpy(), 1.0)
    assert np.allclose(got["go"][0].numpy(), 2.0)  # the pre-hook's replacement
    expected_gi = 2 * m.weight.detach().numpy().sum(0)
    assert np.allclose(got["gi"][0].numpy(), np.tile(expected_gi, (4, 1)), atol=1e-6)
    assert np.allclose(x.grad.numpy(), 10 * np.tile(expected_gi, (4, 1)), atol=1e-5)
    assert np.allclose(m.weight.grad.numpy(), 2 * 4 * np.ones((2, 3)))  # parameter grads see the pre-hook too
    # inputs that need no grad: grad_input holds None
    m2 = nn.Linear(2, 2)
    seen = []
    m2.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    m2(ember.ones(1, 2)).sum().backward()
    assert seen == [(None,)]


def test_train_eval_requires_grad_zero_grad_apply():
    m = Net()
    assert m.training and m.features[1].training
    m.eval()
    assert not m.training and not m.features[1].training
    m.train()
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    m(ember.randn(2, 1, 5, 5)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad.abs().sum().item() == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    names = []
    m.apply(lambda mod: names.append(type(mod).__name__))
    assert names == ["Conv2d", "BatchNorm2d", "ReLU", "Sequential", "Linear", "Net"]


def test_to_float_double_keeps_parameter_identity():
    m = Net()
    w = m.fc.weight
    m.double()
    assert m.fc.weight is w and w.dtype == ember.float64 and isinstance(w, nn.Parameter)
    assert m.features[1].num_batches_tracked.dtype == ember.int64  # integers are not cast
    m.to(ember.float32)
    assert w.dtype == ember.float32 and m.scale.dtype == ember.float32
    m.half()
    assert w.dtype == ember.float16
    m.float().to("cpu").cpu()
    assert m.fc.weight.device.type == "cpu"
    m.type(ember.float64)
    assert w.dtype == ember.float64
    with pytest.raises(TypeError, match="floating point"):
        m.to(ember.int32)
    w.grad = ember.ones(2, 4, dtype=ember.float64)
    m.float()
    assert w.grad.dtype == ember.float32


def test_containers():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[1], nn.ReLU) and isinstance(s[-1], nn.Linear)
    assert isinstance(s[:2], nn.Sequential) and len(s[:2]) == 2
    s.append(nn.Sigmoid())
    s.insert(0, nn.Identity())
    assert [type(m).__name__ for m in s] == ["Identity", "Linear", "ReLU", "Linear", "Sigmoid"]
    assert list(dict(s.named_children())) == ["0", "1", "2", "3", "4"]
    del s[0]
    assert type(s[0]).__name__ == "Linear" and list(dict(s.named_children())) == ["0", "1", "2", "3"]
    assert s(ember.ones(5, 2)).shape == (5, 1)
    with pytest.raises(IndexError):
        s[10]
    od = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(od.state_dict()) == ["fc.weight", "fc.bias"] and od.act is od[1]
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    assert len(ml) == 5 and [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    md["c"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and "a" in md and len(md) == 3
    pl = nn.ParameterList([ember.ones(2), nn.Parameter(ember.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"w": ember.ones(2, 2)})
    pd["b"] = ember.zeros(2)
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["b"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]


def test_printed_module_tree():
    m = Net()
    assert repr(m) == (
        "Net(\n"
        "  (features): Sequential(\n"
        "    (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1))\n"
        "    (1): BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "    (2): ReLU()\n"
        "  )\n"
        "  (fc): Linear(in_features=4, out_features=2, bias=True)\n"
        ")")
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    assert repr(ml) == ("ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
                        "  (3): ReLU()\n)")
    cases = {
        nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1, bias=False, padding_mode="reflect"):
            "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False, padding_mode=reflect)",
        nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1, dilation=2, groups=2):
            "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), dilation=(2, 2), output_padding=(1, 1), "
            "groups=2)",
        nn.MaxPool2d(2): "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        nn.AvgPool1d(3): "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))",
        nn.AdaptiveAvgPool2d((1, 1)): "AdaptiveAvgPool2d(output_size=(1, 1))",
        nn.LayerNorm(10): "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)",
        nn.GroupNorm(2, 4): "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)",
        nn.Embedding(10, 3, padding_idx=0): "Embedding(10, 3, padding_idx=0)",
        nn.EmbeddingBag(10, 3, mode="sum"): "EmbeddingBag(10, 3, mode='sum')",
        nn.Dropout(0.2): "Dropout(p=0.2, inplace=False)",
        nn.ReLU(inplace=True): "ReLU(inplace=True)",
        nn.LeakyReLU(0.1): "LeakyReLU(negative_slope=0.1)",
        nn.GELU(): "GELU(approximate='none')",
        nn.Softmax(dim=1): "Softmax(dim=1)",
        nn.Hardtanh(-2, 2): "Hardtanh(min_val=-2, max_val=2)",
        nn.CrossEntropyLoss(): "CrossEntropyLoss()",
        nn.Upsample(scale_factor=2): "Upsample(scale_factor=2.0, mode='nearest')",
        nn.ReflectionPad2d(1): "ReflectionPad2d((1, 1, 1, 1))",
        nn.ConstantPad1d(2, 3.5): "ConstantPad1d(padding=(2, 2), value=3.5)",
        nn.Flatten(): "Flatten(start_dim=1, end_dim=-1)",
        nn.PixelShuffle(2): "PixelShuffle(upscale_factor=2)",
        nn.Identity(): "Identity()",
        nn.PReLU(): "PReLU(num_parameters=1)",
        nn.InstanceNorm2d(3): ("InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                               "track_running_stats=False)"),
    }
    for mod, text in cases.items():
        assert repr(mod) == text


def test_forward_missing_and_plugin_lookup(monkeypatch):
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        nn.Module()(1)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchLayer'"):
        nn.NoSuchLayer

    class Plug(nn.Module):
        def forward(self, x):
            return x + 1
    from ember import _registry_hooks
    monkeypatch.setitem(_registry_hooks.modules, "PlugLayer", (Plug, "test"))
    assert nn.PlugLayer is Plug


def test_buffers_follow_assignment_and_nn_buffer():
    m = nn.Module()
    m.register_buffer("b", ember.ones(2))
    m.b = ember.zeros(2)
    assert "b" in dict(m.named_buffers()) and m.b.sum().item() == 0
    with pytest.raises(TypeError, match="cannot assign"):
        m.b = 3
    m.c = nn.Buffer(ember.ones(1), persistent=False)
    assert "c" in dict(m.named_buffers()) and "c" not in m.state_dict()
    assert type(m.c) is ember.Tensor


def test_sequential_del_renumbers_named_children_too():
    s = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh()), ("c", nn.ELU())]))
    del s[1]
    assert list(s._modules) == ["0", "1"] and [type(m) for m in s] == [nn.ReLU, nn.ELU]
    s.pop(0)
    assert list(s._modules) == ["0"]
