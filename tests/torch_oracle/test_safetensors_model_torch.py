"""save_model/load_model files cross between PyTorch (safetensors.torch) and ember
(ember.utils.safetensors) both ways, tied weights included: the same kept name, the same metadata."""
import pytest

pytest.importorskip("safetensors", reason="needs safetensors (pip install 'ember[safetensors]')")

import safetensors.torch as stt  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402
from ember.utils import safetensors as st  # noqa: E402


def _tied(mod):
    class Tied(mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = mod.nn.Embedding(10, 4)
            self.head = mod.nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight
    return Tied()


def test_pytorch_file_into_ember_and_back(tmp_path):
    tm = _tied(torch)
    stt.save_model(tm, str(tmp_path / "t.safetensors"), metadata={"format": "pt"})
    em = _tied(ember)
    assert st.load_model(em, tmp_path / "t.safetensors") == (set(), [])
    assert em.head.weight.tolist() == tm.embed.weight.tolist()
    st.save_model(em, tmp_path / "e.safetensors", metadata={"format": "pt"})
    with st.safe_open(tmp_path / "e.safetensors") as a, stt.safe_open(str(tmp_path / "t.safetensors"), "pt") as b:
        assert a.keys() == list(b.keys()) and a.metadata() == b.metadata()
    tm2 = _tied(torch)
    assert stt.load_model(tm2, str(tmp_path / "e.safetensors")) == (set(), [])
    assert torch.equal(tm2.head.weight, tm.embed.weight)
