"""Small APIs real PyTorch programs touch (issue 21): ``range`` indices, the ``size=`` keyword of
the creation functions, ``ember.jit``, ``ember.hub``, ``ember.onnx``,
``ember.utils.tensorboard`` and the ``ember.nn.modules.<file>`` paths checkpoints name. Each test
asserts PyTorch 2.13's documented behaviour (tests/torch_oracle/test_compat_apis_oracle.py checks
the same calls side by side with torch where it is installed)."""
from __future__ import annotations

import pytest

import ember


# -- indexing with a python range: a list of ints ------------------------------------------------

def test_range_index_reads_like_a_list_of_ints():
    x = ember.arange(12).reshape(4, 3)
    assert x[range(3)].tolist() == x[[0, 1, 2]].tolist()
    assert x[range(0, 4, 2), 1].tolist() == [1, 7]
    assert x[range(2), range(2)].tolist() == [0, 4]
    assert x[range(0)].shape == (0, 3)
    assert x[:, range(1, 3)].tolist() == [[1, 2], [4, 5], [7, 8], [10, 11]]
    assert x[range(3, 0, -1)].tolist() == [[9, 10, 11], [6, 7, 8], [3, 4, 5]]


def test_range_index_writes_and_differentiates():
    y = ember.arange(12).reshape(4, 3)
    y[range(0, 4, 2), 1] = -1
    assert y[:, 1].tolist() == [-1, 4, -1, 10]
    y[range(2)] = 0
    assert y[:2].tolist() == [[0, 0, 0], [0, 0, 0]]
    w = ember.ones(4, 3, requires_grad=True)
    w[range(1, 3)].sum().backward()
    assert w.grad[:, 0].tolist() == [0.0, 1.0, 1.0, 0.0]


def test_range_index_out_of_bounds_raises_index_error():
    with pytest.raises(IndexError):
        ember.zeros(3)[range(2, 5)]


# -- the size= keyword ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_size_keyword_of_creation_functions(name):
    fn = getattr(ember, name)
    assert fn(size=(2, 3)).shape == (2, 3)
    assert fn(size=[4]).shape == (4,)
    assert fn(size=ember.Size([1, 2])).shape == (1, 2)
    assert fn(size=()).shape == ()
    assert fn(size=(2,), dtype=ember.float64).dtype == ember.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        fn(2, size=(3,))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        fn(size=3)


def test_size_keyword_values_and_other_creation_functions():
    assert ember.zeros(size=(2,)).tolist() == [0.0, 0.0]
    assert ember.ones(size=(2,)).tolist() == [1.0, 1.0]
    assert ember.full(size=(2,), fill_value=3.0).tolist() == [3.0, 3.0]
    assert ember.randint(10, size=(5,)).shape == (5,)
    assert ember.randint(high=5, size=(3,)).shape == (3,)
    assert ember.randint(3, 10, size=(50,)).min().item() >= 3
    x = ember.ones(2, dtype=ember.float64)
    with pytest.raises(TypeError):
        ember.zeros_like(x, size=(3,))


def test_new_methods_take_size_by_keyword():
    x = ember.ones(2, dtype=ember.float64)
    z = x.new_zeros(size=(3, 1))
    assert z.shape == (3, 1) and z.dtype == ember.float64 and z.tolist() == [[0.0]] * 3
    assert x.new_ones(size=(2,)).tolist() == [1.0, 1.0]
    assert x.new_empty(size=(0, 2)).shape == (0, 2)
    assert x.new_full(size=(2,), fill_value=7).tolist() == [7.0, 7.0]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0]
    assert x.new_zeros(2, 3).shape == (2, 3)
    with pytest.raises(TypeError, match="multiple values"):
        x.new_zeros(2, size=(3,))
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        x.new_zeros(2, foo=1)


# -- ember.jit: TorchScript's decorators run the code eagerly ------------------------------------

def test_jit_queries_and_decorators_run_eagerly():
    import typing

    import ember.jit as jit
    assert ember.jit is jit
    assert jit.is_scripting() is False and jit.is_tracing() is False
    lin = ember.nn.Linear(2, 2)
    assert jit.script(lin) is lin

    def f(x):
        return x + 1
    assert jit.script(f) is f and jit.unused(f) is f and jit.export(f) is f and jit.script_method(f) is f
    assert jit.ignore(f) is f and jit.ignore(drop=True)(f) is f and jit.script_if_tracing(f) is f

    @jit.interface
    class Iface:
        def run(self, x: int) -> int: ...
    assert isinstance(Iface, type)
    assert jit.annotate(typing.List[int], []) == [] and jit.Attribute(3, int) == 3
    assert jit.Final is typing.Final
    assert jit.wait(jit.fork(f, 2)) == 3
    assert jit.isinstance([1, 2], typing.List[int]) and not jit.isinstance([1, "a"], list[int])
    assert jit.isinstance(None, typing.Optional[int]) and jit.isinstance({"a": 1}, dict[str, int])
    assert jit.isinstance((1, "a"), typing.Tuple[int, str]) and not jit.isinstance((1,), typing.Tuple[int, str])
    assert not isinstance(lin, jit.ScriptModule)


class _Scripted(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(2, 2)

    @ember.jit.export
    def extra(self, x):
        return self.fc(x) * 2

    @ember.jit.ignore
    def helper(self, x):
        return x

    def forward(self, x):
        if not ember.jit.is_scripting():
            x = self.helper(x)
        return self.fc(x)


def test_a_scripted_module_is_the_module():
    m = _Scripted()
    s = ember.jit.script(m)
    x = ember.ones(1, 2)
    assert s is m and s(x).tolist() == m.fc(x).tolist()
    assert s.extra(x).tolist() == (m.fc(x) * 2).tolist()


@pytest.mark.parametrize("name", ["trace", "trace_module", "save", "load", "freeze", "optimize_for_inference"])
def test_jit_compilation_entry_points_raise_not_implemented(name):
    with pytest.raises(NotImplementedError, match=f"ember.jit.{name} is not supported: ember has no TorchScript"):
        getattr(ember.jit, name)(ember.nn.Linear(1, 1), "x")
    with pytest.raises(NotImplementedError, match="no TorchScript"):
        ember.jit.ScriptModule()


# -- ember.onnx ----------------------------------------------------------------------------------

def test_onnx_imports_and_export_needs_the_onnx_package(tmp_path):
    import importlib.util
    import ember.onnx
    assert ember.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="dynamo_export is not supported"):
        ember.onnx.dynamo_export(ember.nn.Linear(1, 1))
    if importlib.util.find_spec("onnx") is None:  # (tests/test_onnx_export.py exports, where onnx is installed)
        with pytest.raises(ImportError, match=r"pip install 'ember\[onnx\]'"):
            ember.onnx.export(ember.nn.Linear(1, 1), (ember.ones(1, 1),), str(tmp_path / "m.onnx"))
        assert not (tmp_path / "m.onnx").exists()


# -- ember.hub: the weights cache ----------------------------------------------------------------

@pytest.fixture
def hub_home(tmp_path, monkeypatch):
    """A fresh TORCH_HOME, and set_dir undone afterwards."""
    import ember.hub as hub
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hub, "_hub_dir", [None])
    return tmp_path


def _weights(tmp_path, name="w.pt"):
    import hashlib
    src = tmp_path / name
    ember.save({"w": ember.arange(4.0)}, src)
    return src, hashlib.sha256(src.read_bytes()).hexdigest()


def test_hub_dir_follows_torch_home_and_set_dir(hub_home, monkeypatch):
    import os
    import ember.hub as hub
    assert hub.get_dir() == os.path.join(str(hub_home / "home"), "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(hub_home / "xdg"))
    assert hub.get_dir() == os.path.join(str(hub_home / "xdg"), "torch", "hub")
    hub.set_dir(hub_home / "mine")
    assert hub.get_dir() == str(hub_home / "mine")


def test_load_state_dict_from_url_downloads_into_checkpoints_then_uses_the_cache(hub_home, capsys):
    import ember.hub as hub
    src, digest = _weights(hub_home)
    sd = hub.load_state_dict_from_url(src.as_uri(), progress=False)
    assert sd["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    cached = hub_home / "home" / "hub" / "checkpoints" / "w.pt"
    assert cached.read_bytes() == src.read_bytes()
    assert "Downloading" in capsys.readouterr().out
    src.unlink()  # offline: the cached file answers and nothing is downloaded
    assert hub.load_state_dict_from_url(src.as_uri())["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "Downloading" not in capsys.readouterr().out
    named = hub.load_state_dict_from_url(cached.as_uri(), model_dir=str(hub_home / "md"), file_name="other.pt")
    assert named["w"].shape == (4,) and (hub_home / "md" / "other.pt").exists()


def test_check_hash_verifies_the_sha256_prefix_in_the_file_name(hub_home):
    import ember.hub as hub
    _, digest = _weights(hub_home)
    good = hub_home / f"net-{digest[:10]}.pt"
    (hub_home / "w.pt").rename(good)
    assert hub.load_state_dict_from_url(good.as_uri(), check_hash=True, progress=False)["w"].numel() == 4
    bad = hub_home / "net-0123abcd.pt"
    bad.write_bytes(good.read_bytes())
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "0123abcd"'):
        hub.load_state_dict_from_url(bad.as_uri(), check_hash=True, progress=False)
    ckpt = hub_home / "home" / "hub" / "checkpoints"
    assert not (ckpt / "net-0123abcd.pt").exists() and not list(ckpt.glob("*.partial"))


def test_download_url_to_file_and_a_miss_without_network(hub_home):
    from urllib.error import URLError

    import ember.hub as hub
    src, digest = _weights(hub_home)
    hub.download_url_to_file(src.as_uri(), str(hub_home / "copy.pt"), hash_prefix=digest[:8], progress=False)
    assert (hub_home / "copy.pt").read_bytes() == src.read_bytes()
    missing = (hub_home / "gone.pt").as_uri()
    with pytest.raises(URLError, match="could not download .*gone.pt.*place the file at"):
        hub.load_state_dict_from_url(missing, progress=False)
    assert not list((hub_home / "home" / "hub" / "checkpoints").iterdir())


def test_a_legacy_single_file_zip_is_extracted_and_loaded(hub_home):
    import zipfile

    import ember.hub as hub
    src, _ = _weights(hub_home, "inner.pt")
    z = hub_home / "legacy.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(src, "inner.pt")
    assert hub.load_state_dict_from_url(z.as_uri(), progress=False)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert (hub_home / "home" / "hub" / "checkpoints" / "inner.pt").exists()


@pytest.mark.parametrize("name", ["load", "list", "help"])
def test_hubconf_entry_points_are_not_supported(name):
    with pytest.raises(NotImplementedError, match=f"ember.hub.{name} is not supported"):
        getattr(ember.hub, name)("pytorch/vision", "resnet18")


# -- ember.utils.tensorboard ---------------------------------------------------------------------

def _tensorboard():
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        pytest.skip("the optional package tensorboard is not installed (pip install 'ember[tensorboard]')")


def _events(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0, "scalars": 0, "images": 0, "histograms": 0})
    acc.Reload()
    return acc


def test_summary_writer_writes_what_tensorboard_reads(tmp_path):
    _tensorboard()
    from ember.utils.tensorboard import SummaryWriter
    with SummaryWriter(tmp_path / "run") as w:
        assert w.get_logdir() == str(tmp_path / "run")
        for step in range(3):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.5, 7, new_style=True)
        w.add_histogram("weights", ember.arange(100.0), 0)
        w.add_histogram("counts", ember.arange(10.0), 1, bins=5)
        w.add_image("img", ember.ones(3, 4, 5) * 0.5, 0)
        w.add_image("gray", ember.zeros(4, 5, dtype=ember.uint8), 0, dataformats="HW")
        w.add_text("note", "hello **tensorboard**", 2)
        w.add_scalars("group", {"a": 1.0, "b": ember.tensor(2.0)}, 4)
        w.flush()
    acc = _events(tmp_path / "run")
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("loss")] == [(0, 1.0), (1, 0.5), (2, 0.333333)]
    lr = acc.Tensors("lr")[0]
    assert lr.step == 7 and lr.tensor_proto.float_val == [0.5]
    h = acc.Histograms("weights")[0].histogram_value
    assert h.num == 100 and h.min == 0.0 and h.max == 99.0 and h.sum == 4950.0 and sum(h.bucket) == 100
    assert sum(acc.Histograms("counts")[0].histogram_value.bucket) == 10
    img = acc.Images("img")[0]
    assert (img.height, img.width) == (4, 5) and img.encoded_image_string.startswith(b"\x89PNG")
    assert acc.Images("gray")[0].width == 5
    text = acc.Tensors("note/text_summary")[0]
    assert text.step == 2 and text.tensor_proto.string_val == [b"hello **tensorboard**"]
    sub = _events(tmp_path / "run" / "group_b")
    assert [(e.step, e.value) for e in sub.Scalars("group")] == [(4, 2.0)]


def test_summary_writer_rejects_bad_values(tmp_path):
    _tensorboard()
    from ember.utils.tensorboard import SummaryWriter
    w = SummaryWriter(str(tmp_path / "bad"))
    with pytest.raises(AssertionError, match="one element"):
        w.add_scalar("x", ember.ones(2))
    with pytest.raises(ValueError, match="dataformats"):
        w.add_image("x", ember.ones(2, 2), dataformats="CHW")
    with pytest.raises(ValueError, match="no element"):
        w.add_histogram("x", ember.ones(0))
    w.close()


def test_tensorboard_import_without_the_package_names_it():
    import subprocess
    import sys
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "import importlib.util as u; u.find_spec = lambda name, *a: None\n"
            "try:\n    import ember.utils.tensorboard\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "needs the tensorboard package" in r.stdout and "pip install tensorboard" in r.stdout, r.stderr


# -- PyTorch's nn.modules paths ------------------------------------------------------------------

def test_pytorch_module_paths_name_ember_layers():
    from ember.nn.modules.activation import MultiheadAttention
    from ember.nn.modules.channelshuffle import ChannelShuffle
    from ember.nn.modules.fold import Fold, Unfold
    from ember.nn.modules.linear import Linear, NonDynamicallyQuantizableLinear
    from ember.nn.modules.utils import _pair, _reverse_repeat_tuple, consume_prefix_in_state_dict_if_present
    assert MultiheadAttention is ember.nn.MultiheadAttention and ChannelShuffle is ember.nn.ChannelShuffle
    assert Fold is ember.nn.Fold and Unfold is ember.nn.Unfold and Linear is ember.nn.Linear
    mha = MultiheadAttention(4, 2)
    assert type(mha.out_proj) is NonDynamicallyQuantizableLinear and isinstance(mha.out_proj, Linear)
    assert "(out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)" in repr(mha)
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2) and _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    sd = {"module.w": 1, "b": 2}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd == {"w": 1, "b": 2}
    assert hasattr(ember.nn.utils, "clip_grad_norm_")  # ember.nn.utils is not shadowed by nn.modules.utils


def test_a_pickled_whole_model_names_pytorch_paths_and_loads(tmp_path):
    # a pickle naming torch.nn.modules.linear.Linear (as torch.save(model) writes) resolves to ember's class
    import zipfile
    path = tmp_path / "whole.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("whole/data.pkl", b"\x80\x02ctorch.nn.modules.activation\nMultiheadAttention\nq\x00)\x81q\x01.")
        z.writestr("whole/version", b"3\n")
    obj = ember.load(path, weights_only=False)
    assert type(obj) is ember.nn.MultiheadAttention
    with pytest.raises(ember.serialization.CheckpointError, match="ember.nn.modules.attention.MultiheadAttention"):
        ember.load(path)
