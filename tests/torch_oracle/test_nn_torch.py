"""ember.nn against PyTorch itself (an oracle only: run with torch installed,
``pytest tests/torch_oracle``; tox does not collect this folder). Same weights in, same outputs,
gradients, state-dict keys and printed reprs out."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.nn.functional as EF

torch.manual_seed(0)


def _e(t):
    return ember.tensor(t.detach().numpy())


def _close(e, t, rtol=1e-4, atol=1e-5):
    a = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    b = t.detach().numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _pair(build, *inputs, train=True, **kw):
    """Build the same module in both, copy torch's weights into ember, compare forward and grads."""
    tm = build(torch.nn)
    em = build(enn)
    em.load_state_dict({k: _e(v) for k, v in tm.state_dict().items()})
    tm.train(train)
    em.train(train)
    tin = [torch.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    ein = [ember.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    to, eo = tm(*tin, **kw), em(*ein, **kw)
    if isinstance(to, tuple):
        to, eo = to[0], eo[0]
    _close(eo, to)
    g = np.random.default_rng(0).standard_normal(tuple(to.shape)).astype(np.float32)
    to.backward(torch.tensor(g))
    eo.backward(ember.tensor(g))
    for (n, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        _close(ep.grad, tp.grad, rtol=1e-3, atol=1e-4)
    for t, e in zip(tin, ein):
        if t.grad is not None:
            _close(e.grad, t.grad, rtol=1e-3, atol=1e-4)
    for (n, tb), (_, eb) in zip(tm.named_buffers(), em.named_buffers()):
        _close(eb, tb)
    assert repr(em) == repr(tm).replace("torch.", "ember.")
    assert list(em.state_dict()) == list(tm.state_dict())


def r(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


LAYERS = [
    ("linear", lambda nn: nn.Linear(5, 3), (r(4, 5),)),
    ("bilinear", lambda nn: nn.Bilinear(3, 4, 2), (r(5, 3), r(5, 4))),
    ("conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=1), (r(2, 3, 9),)),
    ("conv2d_groups", lambda nn: nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2), (r(2, 4, 7, 6),)),
    ("conv2d_same_circ", lambda nn: nn.Conv2d(2, 3, 4, padding="same", padding_mode="circular"), (r(1, 2, 6, 5),)),
    ("conv2d_reflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (r(1, 2, 5, 5),)),
    ("conv3d", lambda nn: nn.Conv3d(2, 2, 2, stride=(1, 2, 1)), (r(1, 2, 4, 5, 3),)),
    ("convT2d", lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
     (r(2, 4, 3, 4),)),
    ("convT1d", lambda nn: nn.ConvTranspose1d(2, 3, 4, stride=3, dilation=2), (r(2, 2, 5),)),
    ("maxpool2d", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), (r(2, 2, 7, 6),)),
    ("maxpool1d_dil", lambda nn: nn.MaxPool1d(2, 1, dilation=2), (r(2, 2, 7),)),
    ("avgpool2d", lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (r(2, 2, 6, 7),)),
    ("avgpool2d_div", lambda nn: nn.AvgPool2d(2, 1, 1, divisor_override=3), (r(1, 2, 4, 4),)),
    ("adaptiveavg", lambda nn: nn.AdaptiveAvgPool2d((3, 4)), (r(2, 2, 7, 9),)),
    ("adaptivemax", lambda nn: nn.AdaptiveMaxPool2d((2, 3)), (r(2, 2, 5, 7),)),
    ("lppool", lambda nn: nn.LPPool2d(2, 2), (np.abs(r(1, 2, 4, 4)) + 0.1,)),
    ("bn2d", lambda nn: nn.BatchNorm2d(3), (r(4, 3, 3, 3),)),
    ("bn1d_nomom", lambda nn: nn.BatchNorm1d(3, momentum=None, affine=False), (r(6, 3),)),
    ("in2d", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (r(2, 3, 4, 4),)),
    ("ln", lambda nn: nn.LayerNorm((3, 4)), (r(2, 3, 4),)),
    ("gn", lambda nn: nn.GroupNorm(2, 4), (r(2, 4, 3),)),
    ("rms", lambda nn: nn.RMSNorm(4), (r(3, 4),)),
    ("lrn", lambda nn: nn.LocalResponseNorm(3), (r(2, 5, 3),)),
    ("prelu", lambda nn: nn.PReLU(3), (r(2, 3, 4),)),
    ("embedding", lambda nn: nn.Embedding(6, 3, padding_idx=2), (np.array([[0, 2, 5], [1, 2, 2]]),)),
    ("embbag", lambda nn: nn.EmbeddingBag(6, 3, mode="max"), (np.array([[0, 2, 5], [1, 2, 2]]),)),
    ("upsample_bicubic", lambda nn: nn.Upsample(size=(5, 7), mode="bicubic"), (r(1, 2, 3, 4),)),
    ("upsample_bilinear_ac", lambda nn: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
     (r(1, 2, 3, 4),)),
    ("upsample_nearest", lambda nn: nn.Upsample(size=7), (r(1, 2, 5),)),
    ("pixelshuffle", lambda nn: nn.PixelShuffle(2), (r(1, 8, 2, 3),)),
    ("reflpad", lambda nn: nn.ReflectionPad2d((1, 2, 2, 1)), (r(1, 2, 4, 4),)),
    ("repad3d", lambda nn: nn.ReplicationPad3d(1), (r(1, 1, 2, 3, 2),)),
    ("circpad1d", lambda nn: nn.CircularPad1d((2, 1)), (r(1, 2, 4),)),
    ("celu", lambda nn: nn.CELU(0.7), (r(3, 4),)),
    ("gelu_tanh", lambda nn: nn.GELU("tanh"), (r(3, 4),)),
    ("softplus", lambda nn: nn.Softplus(2, 3), (r(3, 4),)),
    ("mish", lambda nn: nn.Mish(), (r(3, 4),)),
    ("glu", lambda nn: nn.GLU(1), (r(3, 4),)),
    ("logsoftmax", lambda nn: nn.LogSoftmax(1), (r(3, 4),)),
    ("softmin", lambda nn: nn.Softmin(0), (r(3, 4),)),
    ("relu6_hswish", lambda nn: nn.Sequential(nn.ReLU6(), nn.Hardswish(), nn.Hardsigmoid()), (r(3, 4) * 4,)),
    ("selu_elu", lambda nn: nn.Sequential(nn.SELU(), nn.ELU(0.5), nn.Threshold(0.1, -1.0)), (r(3, 4),)),
    ("shrinks", lambda nn: nn.Sequential(nn.Tanhshrink(), nn.Softshrink(0.2), nn.Hardshrink(0.1)), (r(3, 4),)),
    ("logsigmoid_softsign", lambda nn: nn.Sequential(nn.LogSigmoid(), nn.Softsign()), (r(3, 4),)),
    ("rrelu_eval", lambda nn: nn.RReLU(), (r(3, 4),)),
    ("trilinear", lambda nn: nn.Upsample(size=(3, 5, 4), mode="trilinear"), (r(1, 2, 2, 3, 3),)),
    ("linear_ac", lambda nn: nn.Upsample(scale_factor=2.5, mode="linear", align_corners=True), (r(2, 2, 4),)),
    ("nearest_exact3d", lambda nn: nn.Upsample(size=(3, 5, 2), mode="nearest-exact"), (r(1, 1, 2, 3, 4),)),
    ("avgpool3d_ceil", lambda nn: nn.AvgPool3d(2, 2, 1, ceil_mode=True), (r(1, 2, 3, 4, 5),)),
    ("maxpool3d", lambda nn: nn.MaxPool3d(2, (1, 2, 2), 1), (r(1, 2, 3, 4, 5),)),
    ("adaptivemax3d", lambda nn: nn.AdaptiveMaxPool3d((2, 1, 3)), (r(1, 2, 3, 4, 5),)),
    ("adaptiveavg1d", lambda nn: nn.AdaptiveAvgPool1d(4), (r(2, 3, 7),)),
    ("convT3d", lambda nn: nn.ConvTranspose3d(2, 2, 2, stride=2), (r(1, 2, 2, 2, 3),)),
    ("conv1d_replicate", lambda nn: nn.Conv1d(2, 3, 3, padding=2, padding_mode="replicate"), (r(2, 2, 6),)),
    ("conv2d_unbatched", lambda nn: nn.Conv2d(2, 3, 2, stride=2), (r(2, 5, 5),)),
    ("dropout_eval", lambda nn: nn.Sequential(nn.Dropout(0.4), nn.Dropout2d(0.3), nn.AlphaDropout(0.2)),
     (r(2, 3, 4, 4),)),
    ("channelshuffle", lambda nn: nn.ChannelShuffle(3), (r(2, 6, 2, 2),)),
    ("pixelunshuffle", lambda nn: nn.PixelUnshuffle(2), (r(1, 2, 4, 6),)),
    ("zeropad", lambda nn: nn.ZeroPad2d((1, 0, 2, 1)), (r(1, 2, 3, 3),)),
    ("fold", lambda nn: nn.Fold((4, 5), (2, 3), padding=1, stride=(1, 2)), (r(2, 2 * 6, 5 * 3),)),
    ("unfold", lambda nn: nn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=2), (r(2, 2, 5, 6),)),
    ("cosine_sim", lambda nn: nn.CosineSimilarity(1), (r(3, 4), r(4, 3).T.copy())),
    ("pairwise", lambda nn: nn.PairwiseDistance(1.5), (r(3, 4), r(4, 3).T.copy())),
    ("flatten_unflatten", lambda nn: nn.Sequential(nn.Flatten(0, 1), nn.Unflatten(0, (3, 2))), (r(2, 3, 4),)),
    ("lppool1d", lambda nn: nn.LPPool1d(3, 2), (np.abs(r(1, 2, 6)) + 0.1,)),
]


@pytest.mark.parametrize("name,build,inputs", LAYERS, ids=[x[0] for x in LAYERS])
def test_layer_matches_torch(name, build, inputs):
    _pair(build, *inputs, train=not name.endswith("_eval"))


LOSSES = [
    ("ce_ls_w", lambda nn: nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2, 3]) if nn is torch.nn else
                                               ember.tensor([1.0, 2, 3]), label_smoothing=0.1, ignore_index=1),
     (r(4, 3, 2), np.array([[0, 1], [2, 2], [1, 0], [0, 2]]))),
    ("ce_prob", lambda nn: nn.CrossEntropyLoss(label_smoothing=0.2), (r(4, 3), np.abs(r(4, 3)))),
    ("nll_none", lambda nn: nn.NLLLoss(reduction="none"), (r(4, 3), np.array([0, 2, 1, 1]))),
    ("bcelogits_pw", lambda nn: nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0, 0.5]) if nn is torch.nn else
                                                     ember.tensor([2.0, 0.5])), (r(3, 2), np.abs(r(3, 2)) % 1)),
    ("kldiv", lambda nn: nn.KLDivLoss(reduction="batchmean"), (r(3, 4), np.abs(r(3, 4)))),
    ("huber", lambda nn: nn.HuberLoss(delta=0.5), (r(3, 4), r(4, 3).T.copy())),
    ("smoothl1", lambda nn: nn.SmoothL1Loss(beta=0.3), (r(3, 4), r(4, 3).T.copy())),
    ("poisson_full", lambda nn: nn.PoissonNLLLoss(full=True), (r(3, 4), np.abs(r(3, 4)) * 3)),
    ("multimargin", lambda nn: nn.MultiMarginLoss(p=2, margin=0.5), (r(4, 5), np.array([0, 4, 2, 1]))),
    ("multilabel_margin", lambda nn: nn.MultiLabelMarginLoss(), (r(2, 4), np.array([[3, 0, -1, 1], [1, 2, 3, 0]]))),
    ("softmargin", lambda nn: nn.SoftMarginLoss(), (r(3, 4), np.sign(r(4, 3).T.copy()))),
    ("bce_w", lambda nn: nn.BCELoss(weight=torch.tensor([1.0, 2.0]) if nn is torch.nn else ember.tensor([1.0, 2.0])),
     (np.abs(r(3, 2)) % 1 * 0.9 + 0.05, np.abs(r(2, 3).T.copy()) % 1)),
    ("l1_sum", lambda nn: nn.L1Loss(reduction="sum"), (r(3, 4), r(4, 3).T.copy())),
    ("mse_none", lambda nn: nn.MSELoss(reduction="none"), (r(3, 4), r(4, 3).T.copy())),
    ("multilabel_soft", lambda nn: nn.MultiLabelSoftMarginLoss(), (r(3, 4), (r(4, 3).T > 0).astype(np.float32))),
    ("nll_2d_weighted", lambda nn: nn.NLLLoss(weight=torch.tensor([0.5, 1.0, 2.0]) if nn is torch.nn else
                                              ember.tensor([0.5, 1.0, 2.0])),
     (r(2, 3, 2, 2), np.array([[[0, 1], [2, 2]], [[1, 0], [2, 1]]]))),
]


def test_pair_and_triplet_losses_match_torch():
    a, p, n = (r(4, 3), r(3, 4).T.copy(), r(6, 2).reshape(4, 3))
    y = np.array([1.0, -1.0, -1.0, 1.0], dtype=np.float32)
    cases = [
        (lambda F, A, P, N, Y: F.triplet_margin_loss(A, P, N, margin=0.5, p=1.5, swap=True)),
        (lambda F, A, P, N, Y: F.cosine_embedding_loss(A, P, Y, margin=0.2)),
        (lambda F, A, P, N, Y: F.margin_ranking_loss(A[:, 0], P[:, 0], Y, margin=0.1)),
        (lambda F, A, P, N, Y: F.hinge_embedding_loss(A, Y[:, None].expand(4, 3) if hasattr(Y, "expand") else Y)),
        (lambda F, A, P, N, Y: F.gaussian_nll_loss(A, P, N.abs() + 0.1, full=True)),
        (lambda F, A, P, N, Y: F.triplet_margin_with_distance_loss(A, P, N)),
    ]
    for f in cases:
        ta, tp, tn = (torch.tensor(v, requires_grad=True) for v in (a, p, n))
        ea, ep, en = (ember.tensor(v, requires_grad=True) for v in (a, p, n))
        t = f(torch.nn.functional, ta, tp, tn, torch.tensor(y))
        e = f(EF, ea, ep, en, ember.tensor(y))
        _close(e, t)
        t.backward()
        e.backward()
        for ev, tv in ((ea, ta), (ep, tp), (en, tn)):
            if tv.grad is not None:
                _close(ev.grad, tv.grad, rtol=1e-3, atol=1e-5)


def test_embedding_bag_offsets_and_weights_match_torch():
    w = torch.randn(7, 3)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 6])
    offs = torch.tensor([0, 3, 3, 6])
    psw = torch.rand(8)
    for mode, kw in (("sum", {"per_sample_weights": psw}), ("mean", {}), ("max", {}), ("sum", {"padding_idx": 4}),
                     ("mean", {"include_last_offset": True})):
        o = torch.tensor([0, 3, 3, 8]) if kw.get("include_last_offset") else offs
        t = torch.nn.functional.embedding_bag(idx, w, o, mode=mode, **kw)
        ekw = {k: (_e(v) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
        e = EF.embedding_bag(ember.tensor(idx.numpy()), _e(w), ember.tensor(o.numpy()), mode=mode, **ekw)
        _close(e, t)
    with pytest.raises(ValueError, match="last offset must equal the number of indices"):
        EF.embedding_bag(ember.tensor(idx.numpy()), _e(w), ember.tensor(offs.numpy()), include_last_offset=True)


@pytest.mark.parametrize("name,build,inputs", LOSSES, ids=[x[0] for x in LOSSES])
def test_loss_matches_torch(name, build, inputs):
    tl, el = build(torch.nn), build(enn)
    tin = [torch.tensor(x, requires_grad=x.dtype.kind == "f" and i == 0) for i, x in enumerate(inputs)]
    ein = [ember.tensor(x, requires_grad=x.dtype.kind == "f" and i == 0) for i, x in enumerate(inputs)]
    to, eo = tl(*tin), el(*ein)
    _close(eo, to)
    to.sum().backward()
    eo.sum().backward()
    _close(ein[0].grad, tin[0].grad, rtol=1e-3, atol=1e-5)


def test_ctc_matches_torch():
    # PyTorch's CTC backward returns exp(log_probs) - posteriors, which is the gradient through a
    # log_softmax, not with respect to log_probs themselves: compare gradients of the logits.
    logits = torch.randn(12, 3, 5, requires_grad=True)
    tg = torch.tensor([[1, 2, 2], [3, 4, 0], [1, 1, 1]])
    il, tl = [12, 10, 11], [3, 2, 3]
    for red in ("mean", "sum", "none"):
        t = torch.nn.functional.ctc_loss(logits.log_softmax(2), tg, il, tl, reduction=red)
        el = ember.tensor(logits.detach().numpy(), requires_grad=True)
        e = EF.ctc_loss(el.log_softmax(2), ember.tensor(tg.numpy()), il, tl, reduction=red)
        _close(e, t, rtol=1e-4, atol=1e-4)
        t.sum().backward()
        e.sum().backward()
        _close(el.grad, logits.grad, rtol=1e-3, atol=1e-4)
        logits.grad = None


def test_grid_sample_and_interpolate_match_torch():
    x = torch.randn(2, 3, 5, 6)
    g = torch.rand(2, 4, 3, 2) * 2.4 - 1.2
    for mode in ("bilinear", "nearest", "bicubic"):
        for pm in ("zeros", "border", "reflection"):
            for ac in (False, True):
                t = torch.nn.functional.grid_sample(x, g, mode=mode, padding_mode=pm, align_corners=ac)
                e = EF.grid_sample(_e(x), _e(g), mode=mode, padding_mode=pm, align_corners=ac)
                _close(e, t, rtol=1e-4, atol=1e-4)
    theta = torch.randn(2, 2, 3)
    for ac in (False, True):
        _close(EF.affine_grid(_e(theta), (2, 3, 4, 5), align_corners=ac),
               torch.nn.functional.affine_grid(theta, (2, 3, 4, 5), align_corners=ac))
    for mode in ("nearest", "nearest-exact", "bilinear", "bicubic", "area"):
        kw = {} if mode in ("nearest", "nearest-exact", "area") else {"align_corners": False}
        _close(EF.interpolate(_e(x), size=(7, 4), mode=mode, **kw),
               torch.nn.functional.interpolate(x, size=(7, 4), mode=mode, **kw))


def test_torch_checkpoint_loads_one_to_one():
    def build(nn):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(8 * 4 * 4, 10), nn.LayerNorm(10), nn.Dropout(0.5))
    tm, em = build(torch.nn), build(enn)
    tm(torch.randn(4, 3, 8, 8))  # moves the running statistics
    res = em.load_state_dict({k: _e(v) for k, v in tm.state_dict().items()})
    assert res.missing_keys == [] and res.unexpected_keys == []
    tm.eval()
    em.eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        _close(em(_e(x)), tm(x))
    wn_t = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3))
    wn_e = ember.nn.utils.parametrizations.weight_norm(enn.Linear(4, 3))
    assert list(wn_e.state_dict()) == list(wn_t.state_dict())
    wn_e.load_state_dict({k: _e(v) for k, v in wn_t.state_dict().items()})
    _close(wn_e.weight, wn_t.weight)
    sn_t = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(4, 3))
    sn_e = ember.nn.utils.parametrizations.spectral_norm(enn.Linear(4, 3))
    assert sorted(sn_e.state_dict()) == sorted(sn_t.state_dict())
    sn_t.eval()
    sn_e.eval()
    sn_e.load_state_dict({k: _e(v) for k, v in sn_t.state_dict().items()})
    _close(sn_e.weight, sn_t.weight)
