"""ember.nn recurrent layers and packed sequences (cpu): reprs, parameter names, shapes and init
as PyTorch, errors naming the shapes, dropout only between layers in training, one graph node
per layer, state-dict round trips."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import rnn as R


def test_reprs_as_pytorch():
    assert repr(nn.LSTM(10, 20)) == "LSTM(10, 20)"
    assert repr(nn.LSTM(10, 20, 2, bias=False, batch_first=True, dropout=0.5, bidirectional=True, proj_size=5)) == (
        "LSTM(10, 20, proj_size=5, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)")
    assert repr(nn.GRU(3, 4, num_layers=3)) == "GRU(3, 4, num_layers=3)"
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4, bias=False)) == "LSTMCell(3, 4, bias=False)"
    assert repr(nn.GRUCell(3, 4)) == "GRUCell(3, 4)"


def test_parameter_names_shapes_and_order():
    m = nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    sd = m.state_dict()
    names = list(sd)
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert names[5:10] == [n + "_reverse" for n in names[:5]]
    assert tuple(sd["weight_ih_l0"].shape) == (24, 3)
    assert tuple(sd["weight_hh_l0"].shape) == (24, 2)
    assert tuple(sd["weight_hr_l0"].shape) == (2, 6)
    assert tuple(sd["weight_ih_l1"].shape) == (24, 4)  # proj_size * 2 directions
    assert len(names) == 20
    assert [len(ws) for ws in m.all_weights] == [5, 5, 5, 5]
    assert m.all_weights[1][0] is m.weight_ih_l0_reverse
    g = nn.GRU(3, 4, bias=False)
    assert list(g.state_dict()) == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(g.weight_ih_l0.shape) == (12, 3)
    c = nn.LSTMCell(3, 4)
    assert {k: tuple(v.shape) for k, v in c.state_dict().items()} == {
        "weight_ih": (16, 3), "weight_hh": (16, 4), "bias_ih": (16,), "bias_hh": (16,)}


def test_default_init_is_uniform_over_inverse_sqrt_hidden():
    ember.manual_seed(0)
    m = nn.GRU(50, 64, num_layers=2)
    bound = 1 / math.sqrt(64)
    allv = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert allv.min() >= -bound and allv.max() <= bound
    assert allv.min() < -0.9 * bound and allv.max() > 0.9 * bound
    assert abs(allv.mean()) < 0.01 and abs(allv.std() - bound / math.sqrt(3)) < 0.005


def test_state_dict_round_trip_gives_same_outputs():
    a, b = nn.LSTM(3, 4, num_layers=2), nn.LSTM(3, 4, num_layers=2)
    b.load_state_dict(a.state_dict())
    x = ember.randn(5, 2, 3)
    assert np.array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())
    a.flatten_parameters()  # accepted, no effect


def test_constructor_errors():
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        nn.LSTM(3, 4.0)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_forward_errors_name_the_shapes():
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        m(ember.zeros(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 3, got 5"):
        m(ember.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(2, 2, 4\), got \[2, 3, 4\]"):
        m(ember.zeros(5, 2, 3), (ember.zeros(2, 3, 4), ember.zeros(2, 2, 4)))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D"):
        m(ember.zeros(5, 2, 3), (ember.zeros(2, 4), ember.zeros(2, 4)))
    with pytest.raises(ValueError, match="input dtype \\(ember.float64\\) does not match weight dtype"):
        m(ember.zeros(5, 2, 3, dtype=ember.float64))
    with pytest.raises(RuntimeError,
                       match=r"Expected sequence length to be larger than 0 in RNN \(input float32\[0, 2, 3\]"):
        m(ember.zeros(0, 2, 3))
    g = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D"):
        g(ember.zeros(5, 3), ember.zeros(1, 1, 4))
    c = nn.LSTMCell(3, 4)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        c(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        c(ember.zeros(2, 3), (ember.zeros(3, 4), ember.zeros(3, 4)))
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D, got 3D"):
        nn.GRUCell(3, 4)(ember.zeros(1, 2, 3))


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(0)
    m = nn.GRU(3, 8, num_layers=2, dropout=0.5)
    x = ember.randn(4, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c, d = m(x)[0], m(x)[0]
    assert not np.allclose(c.detach().numpy(), d.detach().numpy())
    single = nn.GRU(3, 8, num_layers=1)
    single.train()
    assert np.array_equal(single(x)[0].detach().numpy(), single(x)[0].detach().numpy())


def test_one_graph_node_per_layer_and_direction():
    m = nn.LSTM(3, 4, bidirectional=True)
    out, (h, c) = m(ember.randn(50, 2, 3))
    names = set()
    stack = [out.grad_fn]
    seen = set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.add(n.name())
        stack.extend(f for f, _ in n.next_functions)
    assert "LstmLayerBackward0" in names
    assert len(seen) < 20  # 50 steps would be hundreds of nodes op by op


def test_hidden_state_is_carried_between_calls():
    m = nn.LSTM(2, 3)
    x = ember.randn(6, 1, 2)
    whole, _ = m(x)
    first, state = m(x[:3])
    second, _ = m(x[3:], state)
    assert np.allclose(ember.cat([first, second]).detach().numpy(), whole.detach().numpy(), atol=1e-6)


def test_module_to_double_keeps_working():
    m = nn.GRU(2, 3).double()
    out, h = m(ember.randn(4, 2, 2, dtype=ember.float64))
    assert out.dtype is ember.float64 and h.dtype is ember.float64


# -- packed sequence helpers ----------------------------------------------------------------------

def test_packed_sequence_fields_and_to():
    p = R.pack_sequence([ember.ones(3, 2), ember.ones(1, 2)])
    assert p.batch_sizes.tolist() == [2, 1, 1] and p.sorted_indices is None and p.unsorted_indices is None
    data, bs, si, ui = p
    assert tuple(data.shape) == (4, 2)
    q = p.to(ember.float64)
    assert q.data.dtype is ember.float64 and q.batch_sizes is p.batch_sizes
    assert p.double().data.dtype is ember.float64
    assert not p.is_cuda
    assert p.to("cpu") is p


def test_pack_errors():
    x = ember.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        R.pack_padded_sequence(x, [1, 3, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [3, 2, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2"):
        R.pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="longer than the padded sequences"):
        R.pack_padded_sequence(x, [5, 2, 1])
    p = R.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest"):
        R.pad_packed_sequence(p, total_length=3)
    with pytest.raises(ValueError, match="padding_side"):
        R.pad_sequence([ember.zeros(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match="sequence 1 is"):
        R.pad_sequence([ember.zeros(2, 3), ember.zeros(2, 4)])


def test_pack_padded_batch_first_and_lengths_tensor():
    x = ember.arange(24.0).reshape(3, 4, 2)  # (B, T, F)
    p = R.pack_padded_sequence(x, ember.tensor([2, 4, 1]), batch_first=True, enforce_sorted=False)
    assert p.batch_sizes.tolist() == [3, 2, 1, 1]
    assert p.sorted_indices.tolist() == [1, 0, 2]
    assert p.data[:3].tolist() == [[8.0, 9.0], [0.0, 1.0], [16.0, 17.0]]
    back, lengths = R.pad_packed_sequence(p, batch_first=True)
    assert lengths.tolist() == [2, 4, 1]
    expect = x.numpy().copy()
    expect[0, 2:] = 0
    expect[2, 1:] = 0
    assert np.array_equal(back.numpy(), expect)


def test_invert_permutation():
    perm = ember.tensor([2, 0, 3, 1])
    inv = R.invert_permutation(perm)
    assert inv.tolist() == [1, 3, 0, 2]
    assert R.invert_permutation(None) is None


def test_packed_hidden_state_follows_the_original_batch_order():
    m = nn.GRU(2, 3)
    seqs = [ember.randn(2, 2), ember.randn(4, 2), ember.randn(3, 2)]
    h0 = ember.randn(1, 3, 3)
    _, hn = m(R.pack_sequence(seqs, enforce_sorted=False), h0)
    for b, s in enumerate(seqs):
        _, h1 = m(s.unsqueeze(1), h0[:, b:b + 1])
        assert np.allclose(hn[:, b].detach().numpy(), h1[:, 0].detach().numpy(), atol=1e-6)


def test_no_warning_on_normal_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.1)(ember.randn(2, 1, 3))
