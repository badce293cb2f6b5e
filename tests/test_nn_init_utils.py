"""nn.init distributions and layer defaults, nn.utils (clipping, vector conversion,
parametrizations), and user-facing errors of the functional forms."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn import init
from ember.nn.utils import parametrize


def _np(t):
    return t.detach().numpy().astype(np.float64)


def test_calculate_gain_and_fans():
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("selu") == 0.75 and init.calculate_gain("conv2d") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("nope")
    assert init._calculate_fan_in_and_fan_out(ember.empty(8, 3, 5, 5)) == (75, 200)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(3))


def test_init_distributions():
    ember.manual_seed(0)
    w = ember.empty(400, 300)
    init.xavier_uniform_(w)
    a = math.sqrt(6 / 700)
    assert _np(w).max() <= a and _np(w).min() >= -a and abs(_np(w).std() - a / math.sqrt(3)) < 0.01 * a
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(_np(w).std() - math.sqrt(2 / 400)) < 0.003
    init.kaiming_uniform_(w, a=math.sqrt(5))
    assert abs(_np(w).max() - 1 / math.sqrt(300)) < 1e-3
    init.trunc_normal_(w, mean=1.0, std=2.0, a=-1.0, b=2.0)
    assert _np(w).min() >= -1.0 and _np(w).max() <= 2.0
    init.normal_(w, 3.0, 0.5)
    assert abs(_np(w).mean() - 3.0) < 0.01 and abs(_np(w).std() - 0.5) < 0.01
    init.constant_(w, 0.25)
    assert np.all(_np(w) == 0.25)
    e = ember.empty(3, 5)
    init.eye_(e)
    assert np.array_equal(_np(e), np.eye(3, 5))
    d = ember.empty(4, 2, 3, 3)
    init.dirac_(d)
    x = ember.randn(1, 2, 5, 5)
    assert np.allclose(F.conv2d(x, d, padding=1)[:, :2].numpy(), x.numpy(), atol=1e-6)
    q = ember.empty(6, 4)
    init.orthogonal_(q, gain=2.0)
    assert np.allclose(_np(q).T @ _np(q), 4 * np.eye(4), atol=1e-5)
    q2 = ember.empty(3, 8)
    init.orthogonal_(q2)
    assert np.allclose(_np(q2) @ _np(q2).T, np.eye(3), atol=1e-5)
    s = ember.empty(10, 4)
    init.sparse_(s, 0.3)
    assert all((_np(s)[:, c] == 0).sum() >= 3 for c in range(4))
    p = nn.Parameter(ember.empty(3, 3))
    init.zeros_(p)  # works on leaves that require grad (no autograd recording)
    assert p.grad_fn is None and np.all(_np(p) == 0)


def test_layer_default_initialisations():
    ember.manual_seed(1)
    lin = nn.Linear(500, 400)
    bound = 1 / math.sqrt(500)
    assert _np(lin.weight).max() <= bound and abs(_np(lin.weight).max() - bound) < 1e-3
    assert _np(lin.bias).max() <= bound and _np(lin.bias).min() >= -bound
    conv = nn.Conv2d(8, 16, 3)
    cb = 1 / math.sqrt(8 * 9)
    assert _np(conv.weight).max() <= cb and abs(_np(conv.weight).max() - cb) < 5e-3
    ct = nn.ConvTranspose2d(8, 6, 3)
    assert _np(ct.bias).max() <= 1 / math.sqrt(6 * 9)
    emb = nn.Embedding(1000, 20, padding_idx=3)
    assert abs(_np(emb.weight).std() - 1) < 0.05 and np.all(_np(emb.weight)[3] == 0)
    bn = nn.BatchNorm2d(5)
    assert np.all(_np(bn.weight) == 1) and np.all(_np(bn.bias) == 0) and np.all(_np(bn.running_var) == 1)
    assert np.all(_np(nn.PReLU(3).weight) == 0.25)
    bil = nn.Bilinear(4, 5, 2)
    assert _np(bil.weight).max() <= 0.5


def test_clip_grad_and_vectors():
    a = nn.Parameter(ember.tensor([3.0, 0.0]))
    b = nn.Parameter(ember.tensor([0.0, 4.0]))
    a.grad = ember.tensor([3.0, 0.0])
    b.grad = ember.tensor([0.0, 4.0])
    total = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert abs(total.item() - 5.0) < 1e-6
    assert np.allclose(a.grad.numpy(), [0.6, 0.0], atol=1e-5) and np.allclose(b.grad.numpy(), [0.0, 0.8], atol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], 10.0, norm_type="inf")
    assert abs(total.item() - 0.8) < 1e-5 and np.allclose(b.grad.numpy(), [0.0, 0.8], atol=1e-5)
    a.grad = ember.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    a.grad = ember.tensor([-5.0, 0.5])
    nn.utils.clip_grad_value_(a, 1.0)
    assert a.grad.tolist() == [-1.0, 0.5]
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    nn.utils.vector_to_parameters(ember.arange(8.0), m.parameters())
    assert m.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and m.bias.tolist() == [6, 7]
    with pytest.raises(RuntimeError, match="8"):
        nn.utils.vector_to_parameters(ember.arange(7.0), m.parameters())


def test_weight_norm_parametrization():
    m = nn.Linear(4, 3)
    w0 = _np(m.weight)
    nn.utils.parametrizations.weight_norm(m)
    assert type(m).__name__ == "ParametrizedLinear" and parametrize.is_parametrized(m, "weight")
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    g = _np(m.parametrizations.weight.original0)
    assert g.shape == (3, 1) and np.allclose(g[:, 0], np.linalg.norm(w0, axis=1), atol=1e-6)
    assert np.allclose(_np(m.weight), w0, atol=1e-6)
    m(ember.randn(2, 4)).sum().backward()
    assert m.parametrizations.weight.original0.grad is not None and m.parametrizations.weight.original1.grad is not None
    with ember.no_grad():
        m.parametrizations.weight.original0.mul_(2)
    assert np.allclose(_np(m.weight), 2 * w0, atol=1e-5)
    m2 = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
    m2.load_state_dict(m.state_dict())
    assert np.allclose(_np(m2.weight), _np(m.weight))
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter) and np.allclose(_np(m.weight), 2 * w0, atol=1e-5)
    assert sorted(m.state_dict()) == ["bias", "weight"]  # re-registered last, as in PyTorch


def test_spectral_norm_and_custom_parametrization():
    ember.manual_seed(0)
    m = nn.utils.parametrizations.spectral_norm(nn.Linear(6, 5))
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                                      "parametrizations.weight.original"]
    for _ in range(10):
        w = m.weight
    sigma = np.linalg.svd(_np(w), compute_uv=False)[0]
    assert abs(sigma - 1.0) < 1e-3

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(0, 1)

        def right_inverse(self, A):
            return A.triu()
    lin = nn.Linear(3, 3)
    parametrize.register_parametrization(lin, "weight", Symmetric())
    W = _np(lin.weight)
    assert np.allclose(W, W.T)
    S = ember.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]])
    lin.weight = S  # goes through right_inverse
    assert np.allclose(_np(lin.weight), S.numpy())
    with parametrize.cached():
        assert lin.weight is lin.weight
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(nn.Linear(3, 3), "weight", type("P", (nn.Module,), {
            "forward": lambda self, x: x[:2]})())


def test_functional_errors_name_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"linear: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        F.linear(ember.ones(2, 3), ember.ones(5, 4))
    with pytest.raises(RuntimeError, match=r"conv2d: Given groups=1, weight of size \[6, 1, 5, 5\], expected "
                                           r"input\[2, 3, 28, 28\] to have 1 channels, but got 3 channels instead"):
        F.conv2d(ember.ones(2, 3, 28, 28), ember.ones(6, 1, 5, 5))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input"):
        F.conv2d(ember.ones(2, 2), ember.ones(1, 1, 1, 1))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.conv2d(ember.ones(1, 1, 3, 3, dtype=ember.float64), ember.ones(1, 1, 2, 2))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        F.conv2d(ember.ones(1, 1, 5, 5), ember.ones(1, 1, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 2, 2), output_padding=1)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(ember.ones(1, 1, 5, 5), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool2d(ember.ones(1, 1, 2, 2), 3)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(ember.ones(2, 5), ember.tensor([1, 7]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target batch_size \(3\)"):
        F.cross_entropy(ember.ones(2, 5), ember.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.nll_loss(ember.ones(2, 5), ember.tensor([1, 2]), weight=ember.ones(4))
    with pytest.raises(RuntimeError, match="expected scalar type Long"):
        F.nll_loss(ember.ones(2, 5), ember.ones(2))
    with pytest.raises(ValueError, match="that is different to the input size"):
        F.binary_cross_entropy(ember.full((3,), 0.5), ember.ones(3, 1))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.full((3,), 1.5), ember.ones(3))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(ember.ones(3), 1.5)
    with pytest.raises(IndexError, match="index 10 is out of range"):
        F.embedding(ember.tensor([10]), ember.ones(4, 2))
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(ember.ones(2), ember.ones(4, 2))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.layer_norm(ember.ones(3, 5), (4,))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(ember.ones(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(ember.ones(1, 1, 3), (3, 3), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(ember.ones(2, 2), (1,))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(ember.ones(2, 3))
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(ember.ones(1, 1, 2), size=4, scale_factor=2)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(ember.tensor([3]), 2)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 3"):
        F.ctc_loss(ember.zeros(3, 1, 4), ember.tensor([[1]]), [4], [1])
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def test_legacy_reduction_flags_and_loss_modules():
    x, t = ember.tensor([[1.0, 2.0]]), ember.tensor([[0.0, 0.0]])
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        m = nn.MSELoss(size_average=False)
    assert m.reduction == "sum" and m(x, t).item() == 5.0
    with pytest.warns(UserWarning):
        assert F.l1_loss(x, t, reduce=False).tolist() == [[1.0, 2.0]]
    w = ember.tensor([1.0, 3.0])
    ce = nn.CrossEntropyLoss(weight=w)
    assert "weight" in dict(ce.named_buffers())
    assert abs(ce(ember.zeros(2, 2), ember.tensor([0, 1])).item() - math.log(2)) < 1e-6


def test_unbatched_inputs_and_module_forwards():
    assert nn.Conv2d(2, 3, 3)(ember.ones(2, 5, 5)).shape == (3, 3, 3)
    assert nn.MaxPool2d(2)(ember.ones(3, 4, 4)).shape == (3, 2, 2)
    assert nn.InstanceNorm1d(2)(ember.randn(2, 5)).shape == (2, 5)
    ct = nn.ConvTranspose2d(2, 3, 3, stride=2)
    assert ct(ember.ones(1, 2, 4, 4), output_size=(10, 10)).shape == (1, 3, 10, 10)
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        ct(ember.ones(1, 2, 4, 4), output_size=(12, 12))
    u = nn.Unflatten(1, (2, 3))
    assert u(ember.ones(4, 6)).shape == (4, 2, 3)
    eb = nn.EmbeddingBag.from_pretrained(ember.eye(3), mode="sum")
    assert eb(ember.tensor([[0, 1]])).tolist() == [[1.0, 1.0, 0.0]] and not eb.weight.requires_grad
    e = nn.Embedding(5, 2, max_norm=1.0)
    with ember.no_grad():
        e.weight.mul_(10)
    e(ember.tensor([1]))
    assert abs(np.linalg.norm(_np(e.weight)[1]) - 1.0) < 1e-4 and np.linalg.norm(_np(e.weight)[0]) > 2
