"""ember.utils.safetensors.save_model/load_model: a module's state dict with tied tensors stored once,
as safetensors.torch's functions do (tests/torch_oracle/test_safetensors_model_torch.py reads and
writes the same files with real PyTorch)."""
import pytest

pytest.importorskip("safetensors", reason="ember.utils.safetensors needs safetensors (pip install safetensors)")

import safetensors.numpy as stnp  # noqa: E402

import ember  # noqa: E402
import ember.nn as nn  # noqa: E402
from ember.utils import safetensors as st  # noqa: E402


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied, as language models do


def test_tied_weights_are_saved_once_with_the_dropped_name_in_the_metadata(tmp_path):
    ember.manual_seed(0)
    m = Tied()
    path = tmp_path / "m.safetensors"
    st.save_model(m, path, metadata={"format": "pt"})
    with st.safe_open(path) as f:
        assert f.keys() == ["embed.weight"]  # the first name in sorted order
        assert f.metadata() == {"format": "pt", "head.weight": "embed.weight"}
    with pytest.raises(RuntimeError, match="share memory"):
        st.save_file(m.state_dict(), tmp_path / "plain.safetensors")  # what save_model is for

    ember.manual_seed(1)
    m2 = Tied()
    missing, unexpected = st.load_model(m2, path)
    assert missing == set() and unexpected == []
    assert ember.equal(m2.head.weight, m.embed.weight) and m2.head.weight is m2.embed.weight


def test_user_metadata_wins_and_is_not_modified(tmp_path):
    meta = {"head.weight": "mine"}
    st.save_model(Tied(), tmp_path / "m.safetensors", metadata=meta)
    assert meta == {"head.weight": "mine"}
    assert stnp.load_file(str(tmp_path / "m.safetensors")).keys() == {"embed.weight"}
    with st.safe_open(tmp_path / "m.safetensors") as f:
        assert f.metadata() == {"head.weight": "mine"}


def test_a_file_with_the_other_name_of_a_tied_pair_loads(tmp_path):
    ember.manual_seed(0)
    w = ember.randn(10, 4)
    st.save_file({"head.weight": w}, tmp_path / "other.safetensors")  # kept under the other name
    m = Tied()
    assert st.load_model(m, tmp_path / "other.safetensors") == (set(), [])
    assert ember.equal(m.embed.weight, w)


def test_strict_lists_missing_and_unexpected_keys(tmp_path):
    st.save_file({"embed.weight": ember.zeros(10, 4), "extra": ember.zeros(1)}, tmp_path / "a.safetensors")
    m = nn.Sequential(nn.Linear(4, 10))
    with pytest.raises(RuntimeError) as e:
        st.load_model(m, tmp_path / "a.safetensors")
    assert str(e.value) == ('Error(s) in loading state_dict for Sequential:\n'
                            '    Missing key(s) in state_dict: "0.bias", "0.weight"\n'
                            '    Unexpected key(s) in state_dict: "embed.weight", "extra"')
    missing, unexpected = st.load_model(m, tmp_path / "a.safetensors", strict=False)
    assert missing == {"0.weight", "0.bias"} and sorted(unexpected) == ["embed.weight", "extra"]
    with pytest.raises(ValueError, match="backend"):
        st.load_model(m, tmp_path / "a.safetensors", backend="fast")


def test_views_that_cover_part_of_a_storage_are_refused(tmp_path):
    class Halves(nn.Module):
        def __init__(self):
            super().__init__()
            base = ember.arange(8.0)
            self.register_buffer("a", base[:5])
            self.register_buffer("b", base[3:])  # overlaps a; neither covers the storage

    with pytest.raises(RuntimeError, match="None is covering the entire storage"):
        st.save_model(Halves(), tmp_path / "h.safetensors")


def test_disjoint_views_of_one_storage_are_saved_apart(tmp_path):
    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            base = ember.arange(8.0)
            self.register_buffer("a", base[:4])
            self.register_buffer("b", base[4:])

    st.save_model(Split(), tmp_path / "s.safetensors")
    back = st.load_file(tmp_path / "s.safetensors")
    assert back["a"].tolist() == [0.0, 1.0, 2.0, 3.0] and back["b"].tolist() == [4.0, 5.0, 6.0, 7.0]
