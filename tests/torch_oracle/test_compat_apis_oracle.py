"""issue 21's small APIs side by side with PyTorch (an oracle only, collected when torch is
installed): range indices, the size= keyword, ember.accelerator on a CPU-only torch, and whole
PyTorch models saved with torch.save loading as ember layers (``torch.nn.modules.<file>.<Name>``
resolves to ``ember.nn.modules.<file>.<Name>``)."""
import numpy as np
import pytest
import torch

import ember


def _outcome(f):
    try:
        r = f()
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return ("raise", next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"))
    return ("ok", r.tolist() if hasattr(r, "tolist") else r)


@pytest.mark.parametrize("key", [
    lambda r: (r(3),), lambda r: (r(0, 4, 2), 1), lambda r: (r(2), r(2)), lambda r: (r(0),),
    lambda r: (slice(None), r(1, 3)), lambda r: (r(3, 0, -1),), lambda r: (r(2, 6),), lambda r: (Ellipsis, r(2)),
])
def test_range_indices_match_torch(key):
    t = torch.arange(12).reshape(4, 3)
    e = ember.arange(12).reshape(4, 3)
    assert _outcome(lambda: e[key(range)]) == _outcome(lambda: t[key(range)])
    t2, e2 = t.clone(), e.clone()
    outcome = _outcome(lambda: e2.__setitem__(key(range), -1))
    assert outcome == _outcome(lambda: t2.__setitem__(key(range), -1))
    if outcome[0] == "ok":  # (torch's cpu kernel writes the in-bounds rows before it raises; ember checks first)
        assert e2.tolist() == t2.tolist()


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
@pytest.mark.parametrize("args,kwargs", [((), {"size": (2, 3)}), ((), {"size": []}), ((2,), {"size": (3,)}),
                                         ((), {"size": 3}), ((), {"size": (2,), "dtype": "float64"})])
def test_size_keyword_matches_torch(name, args, kwargs):
    def call(mod):
        kw = dict(kwargs)
        if "dtype" in kw:
            kw["dtype"] = getattr(mod, kw["dtype"])
        r = getattr(mod, name)(*args, **kw)
        return tuple(r.shape), str(r.dtype).split(".")[-1]
    assert _outcome(lambda: call(ember)) == _outcome(lambda: call(torch))


def test_accelerator_of_a_cpu_only_torch_and_of_ember_without_one():
    if torch.accelerator.is_available():
        pytest.skip("this torch sees an accelerator")
    assert torch.accelerator.current_accelerator() is None and torch.accelerator.device_count() == 0
    with pytest.raises(RuntimeError, match="none is available"):
        torch.accelerator.current_device_index()
    assert _outcome(lambda: torch.accelerator.set_device_index(-1)) == ("ok", None)
    assert torch.backends.mps.is_available() is ember.backends.mps.is_available() is False
    assert torch.backends.cudnn.is_available() is ember.backends.cudnn.is_available() is False


def _torch_models():
    torch.manual_seed(0)
    q = torch.randn(3, 1, 4)
    yield "cnn", torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(),
                                     torch.nn.Flatten(), torch.nn.Linear(8, 3), torch.nn.Dropout(0.1),
                                     torch.nn.LayerNorm(3)), (torch.randn(1, 1, 4, 4),), lambda y: y
    yield "mha", torch.nn.MultiheadAttention(4, 2), (q, q, q), lambda y: y[0]
    yield "lstm", torch.nn.LSTM(3, 4), (torch.randn(2, 1, 3),), lambda y: y[0]
    yield "encoder", torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), (q,), lambda y: y
    yield "fold", torch.nn.Sequential(torch.nn.Unfold(2), torch.nn.Identity(),
                                      torch.nn.Fold((3, 3), 2)), (torch.randn(1, 2, 3, 3),), lambda y: y


@pytest.mark.parametrize("name", ["cnn", "mha", "lstm", "encoder", "fold"])
def test_whole_torch_models_load_as_ember_layers(name, tmp_path):
    _, model, inputs, pick = next(m for m in _torch_models() if m[0] == name)
    model.eval()
    torch.save(model, tmp_path / "model.pt")
    with torch.no_grad():
        expected = pick(model(*inputs)).numpy()
    loaded = ember.load(tmp_path / "model.pt", weights_only=False)
    assert type(loaded).__module__.startswith("ember.nn.modules.")
    assert type(loaded).__name__ == type(model).__name__ and repr(loaded) == repr(model)
    got = pick(loaded(*[ember.tensor(i.numpy()) for i in inputs]))
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_whole_torch_model_under_weights_only_needs_the_ember_classes_allowed(tmp_path):
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()), tmp_path / "seq.pt")
    with pytest.raises(ember.serialization.CheckpointError,
                       match=r"add_safe_globals\(\[ember.nn.modules.container.Sequential\]\)"):
        ember.load(tmp_path / "seq.pt")
    with ember.serialization.safe_globals([ember.nn.Sequential, ember.nn.Linear, ember.nn.ReLU]):
        seq = ember.load(tmp_path / "seq.pt")
    assert isinstance(seq[0], ember.nn.Linear) and seq[0].weight.shape == (3, 2)
