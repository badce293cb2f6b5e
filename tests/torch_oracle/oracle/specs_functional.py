"""Generators of calls for ``nn.functional``: activations, losses, and (in specs_functional_nn)
convolution, pooling, normalisation, embedding, resampling and attention."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .calls import Call, D
from .tensors import FLOATS, T, tensors

__all__ = ["ACTIVATIONS", "LOSSES"]

F = "nn.functional."
ACTIVATIONS = {}
LOSSES = {}
_P = {  # parameters of each activation
    "celu": {"alpha": (0.5, 1.0, 2.0)}, "elu": {"alpha": (0.5, 1.0, 0.0)}, "gelu": {"approximate": ("none", "tanh")},
    "hardshrink": {"lambd": (0.5, 0.0, 1.0)}, "hardtanh": {"min_val": (-1.0, -0.5), "max_val": (1.0, 2.0)},
    "leaky_relu": {"negative_slope": (0.01, 0.2, -1.0)}, "softplus": {"beta": (1.0, 2.0), "threshold": (20.0, 1.0)},
    "softshrink": {"lambd": (0.5, 0.0)}, "threshold": {"threshold": (0.0, 1.0, -1.0), "value": (0.0, 2.0, -3.0)},
    "rrelu": {"lower": (0.125,), "upper": (0.3,)},
}
_REQUIRED = {"threshold": ("threshold", "value")}


def _act(name, dtypes=FLOATS):
    base = name.rstrip("_")

    @st.composite
    def gen(draw):
        x = draw(tensors(dtypes))
        kwargs, args = {}, [x]
        for k, opts in _P.get(base, {}).items():
            if k in _REQUIRED.get(base, ()):
                args.append(draw(st.sampled_from(opts)))
            elif draw(st.booleans()):
                kwargs[k] = draw(st.sampled_from(opts))
        return Call(name, F + name, tuple(args), kwargs)
    return gen()


for _n in ("celu celu_ elu elu_ gelu hardshrink hardsigmoid hardswish hardtanh hardtanh_ leaky_relu leaky_relu_ "
           "logsigmoid mish relu relu6 relu_ selu selu_ sigmoid silu softplus softshrink softsign tanh tanhshrink "
           "threshold threshold_").split():
    ACTIVATIONS[_n] = _act(_n)


@st.composite
def _softmaxlike(draw, name):
    x = draw(tensors(FLOATS))
    nd = len(x.shape)
    kw = {"dim": draw(st.integers(-max(nd, 1), max(nd, 1) - 1))}
    if draw(st.booleans()):
        kw["dtype"] = D(draw(st.sampled_from(("float64", "float32"))))
    return Call(name, F + name, (x,), kw)


for _n in ("softmax", "softmin", "log_softmax"):
    ACTIVATIONS[_n] = _softmaxlike(_n)


@st.composite
def _glu(draw):
    x = draw(tensors(FLOATS, min_dims=1))
    return Call("glu", F + "glu", (x,), {"dim": draw(st.integers(-len(x.shape), len(x.shape) - 1))})


@st.composite
def _prelu(draw):
    x = draw(tensors(FLOATS, min_dims=0))
    c = x.shape[1] if len(x.shape) > 1 else 1
    w = draw(tensors((x.dtype,), shape=draw(st.sampled_from(((1,), (c,))))))
    return Call("prelu", F + "prelu", (x, w))


@st.composite
def _normalize(draw):
    x = draw(tensors(FLOATS, min_dims=1))
    return Call("normalize", F + "normalize", (x,), {"p": draw(st.sampled_from((1.0, 2.0, 3.0))),
                                                     "dim": draw(st.integers(-len(x.shape), len(x.shape) - 1))})


@st.composite
def _random_act(draw, name):
    x = draw(tensors(FLOATS, min_dims=1))
    kw = {"training": draw(st.booleans())}
    if name == "gumbel_softmax":
        kw = {"tau": 1.0, "hard": draw(st.booleans())}
    elif name == "rrelu":
        pass
    else:
        kw["p"] = draw(st.sampled_from((0.0, 0.5, 1.0)))
    return Call(name, F + name, (x,), kw)


ACTIVATIONS.update({"glu": _glu(), "prelu": _prelu(), "normalize": _normalize()})
for _n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "gumbel_softmax", "rrelu"):
    ACTIVATIONS[_n] = _random_act(_n)

# ---- losses ------------------------------------------------------------------------------------------
_RED = st.sampled_from(("mean", "sum", "none"))


def _pair_loss(name, target=None, extra=None):
    @st.composite
    def gen(draw):
        x = draw(tensors(FLOATS, max_dims=2))
        shape = x.shape if draw(st.integers(0, 5)) else draw(st.sampled_from(((1,), (2, 1), (5,))))
        if target == "prob":
            y = draw(tensors((x.dtype,), shape=shape, low=0.0, high=1.0, special=False))
            x = draw(tensors((x.dtype,), shape=x.shape, low=0.0, high=1.0))
        elif target == "sign":
            n = int(np.prod(shape)) if shape else 1
            signs = draw(st.lists(st.sampled_from((-1.0, 1.0)), min_size=n, max_size=n))
            y = T(np.array(signs).reshape(shape), x.dtype)
        else:
            y = draw(tensors((x.dtype,), shape=shape))
        kw = {"reduction": draw(_RED)}
        if extra:
            kw.update(draw(extra(x)))
        return Call(name, F + name, (x, y), kw)
    return gen()


def _opt(**opts):
    return lambda x: st.fixed_dictionaries({}, optional=opts)


LOSSES.update({
    "l1_loss": _pair_loss("l1_loss"), "mse_loss": _pair_loss("mse_loss"),
    "smooth_l1_loss": _pair_loss("smooth_l1_loss", extra=_opt(beta=st.sampled_from((1.0, 0.5, 0.0)))),
    "huber_loss": _pair_loss("huber_loss", extra=_opt(delta=st.sampled_from((1.0, 0.5)))),
    "soft_margin_loss": _pair_loss("soft_margin_loss", target="sign"),
    "binary_cross_entropy": _pair_loss("binary_cross_entropy", target="prob"),
    "binary_cross_entropy_with_logits": _pair_loss("binary_cross_entropy_with_logits", target="prob"),
    "kl_div": _pair_loss("kl_div", extra=_opt(log_target=st.booleans())),
    "poisson_nll_loss": _pair_loss("poisson_nll_loss", extra=_opt(log_input=st.booleans(), full=st.booleans())),
    "hinge_embedding_loss": _pair_loss("hinge_embedding_loss", target="sign",
                                       extra=_opt(margin=st.sampled_from((1.0, 0.5)))),
    "multilabel_soft_margin_loss": _pair_loss("multilabel_soft_margin_loss", target="prob"),
})


@st.composite
def _gaussian(draw):
    x = draw(tensors(FLOATS, max_dims=2))
    y = draw(tensors((x.dtype,), shape=x.shape))
    var = draw(tensors((x.dtype,), shape=draw(st.sampled_from((x.shape, x.shape[:-1] + (1,) if x.shape else ()))),
                       low=0.0, high=3.0, special=False))
    return Call("gaussian_nll_loss", F + "gaussian_nll_loss", (x, y, var),
                {"full": draw(st.booleans()), "reduction": draw(_RED)})


@st.composite
def _three(draw, name):
    n, d = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    dt = draw(st.sampled_from(FLOATS))
    if name == "margin_ranking_loss":
        a, b = draw(tensors((dt,), shape=(n,))), draw(tensors((dt,), shape=(n,)))
        y = T(np.array(draw(st.lists(st.sampled_from((-1.0, 1.0)), min_size=n, max_size=n))), dt)
        return Call(name, F + name, (a, b, y), {"margin": draw(st.sampled_from((0.0, 0.5))), "reduction": draw(_RED)})
    if name == "cosine_embedding_loss":
        a, b = draw(tensors((dt,), shape=(n, d))), draw(tensors((dt,), shape=(n, d)))
        y = T(np.array(draw(st.lists(st.sampled_from((-1.0, 1.0)), min_size=n, max_size=n))), dt)
        return Call(name, F + name, (a, b, y), {"margin": draw(st.sampled_from((0.0, 0.5))), "reduction": draw(_RED)})
    a, p, q = (draw(tensors((dt,), shape=(n, d))) for _ in range(3))
    kw = {"margin": draw(st.sampled_from((1.0, 0.5))), "reduction": draw(_RED)}
    if name == "triplet_margin_loss":
        kw.update({"p": draw(st.sampled_from((1.0, 2.0))), "swap": draw(st.booleans())})
    else:
        kw["swap"] = draw(st.booleans())
    return Call(name, F + name, (a, p, q), kw)


@st.composite
def _class_loss(draw, name):
    n, c = draw(st.integers(0, 3)), draw(st.integers(1, 4))
    dt = draw(st.sampled_from(FLOATS))
    extra = draw(st.sampled_from(((), (2,))))
    x = draw(tensors((dt,), shape=(n, c) + extra))
    y = T(np.array(draw(st.lists(st.integers(0, c - 1), min_size=n * int(np.prod(extra)),
                                 max_size=n * int(np.prod(extra))))).reshape((n,) + extra), "int64")
    kw = {"reduction": draw(_RED)}
    if name in ("nll_loss", "cross_entropy"):
        if draw(st.booleans()):
            kw["weight"] = draw(tensors((dt,), shape=(c,), low=0.0, high=2.0, special=False))
        if draw(st.booleans()):
            kw["ignore_index"] = draw(st.sampled_from((0, -100, 1)))
        if name == "cross_entropy" and draw(st.booleans()):
            kw["label_smoothing"] = draw(st.sampled_from((0.1, 0.5)))
        if name == "cross_entropy" and draw(st.integers(0, 3)) == 0:
            y = draw(tensors((dt,), shape=x.shape, low=0.0, high=1.0, special=False))
    if name == "multi_margin_loss":
        if extra:
            x = draw(tensors((dt,), shape=(n, c)))
            y = T(np.zeros((n,), dtype=np.int64), "int64")
        kw.update(draw(st.fixed_dictionaries({}, optional={"p": st.sampled_from((1, 2)),
                                                           "margin": st.sampled_from((1.0, 0.5))})))
    return Call(name, F + name, (x, y), kw)


@st.composite
def _multilabel_margin(draw):
    n, c = draw(st.integers(0, 3)), draw(st.integers(1, 4))
    dt = draw(st.sampled_from(FLOATS))
    x = draw(tensors((dt,), shape=(n, c)))
    y = T(np.array(draw(st.lists(st.integers(-1, c - 1), min_size=n * c, max_size=n * c))).reshape(n, c), "int64")
    return Call("multilabel_margin_loss", F + "multilabel_margin_loss", (x, y), {"reduction": draw(_RED)})


@st.composite
def _ctc(draw):
    t_len, n, c, s = draw(st.integers(1, 5)), draw(st.integers(1, 2)), draw(st.integers(2, 4)), draw(st.integers(0, 2))
    lp = draw(tensors(("float32", "float64"), shape=(t_len, n, c), special=False))
    lp = T(lp.values - np.log(np.exp(lp.values).sum(-1, keepdims=True)), lp.dtype)
    tg = T(np.array(draw(st.lists(st.integers(1, c - 1), min_size=n * s, max_size=n * s))).reshape(n, s), "int64")
    il = T(np.array([t_len] * n), "int64")
    tl = T(np.array([s] * n), "int64")
    return Call("ctc_loss", F + "ctc_loss", (lp, tg, il, tl), {"reduction": draw(_RED),
                                                               "zero_infinity": draw(st.booleans())}, grad=False)


@st.composite
def _distance(draw, name):
    n, d = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    dt = draw(st.sampled_from(FLOATS))
    if name == "pdist":  # torch 2.13 segfaults in pdist's backward for 0 rows: not drawn
        n = max(n, 1)
        x = draw(tensors((dt,), shape=(n, d)))
        return Call(name, F + name, (x,), {"p": draw(st.sampled_from((1.0, 2.0, 0.0)))})
    a = draw(tensors((dt,), shape=(n, d)))
    b = draw(tensors((dt,), shape=draw(st.sampled_from(((n, d), (1, d), (d,))))))
    if name == "cosine_similarity":
        return Call(name, F + name, (a, b), {"dim": draw(st.sampled_from((1, -1, 0))), "eps": 1e-8})
    return Call(name, F + name, (a, b), {"p": draw(st.sampled_from((1.0, 2.0))), "keepdim": draw(st.booleans())})


LOSSES.update({"gaussian_nll_loss": _gaussian(), "margin_ranking_loss": _three("margin_ranking_loss"),
               "cosine_embedding_loss": _three("cosine_embedding_loss"),
               "triplet_margin_loss": _three("triplet_margin_loss"),
               "triplet_margin_with_distance_loss": _three("triplet_margin_with_distance_loss"),
               "nll_loss": _class_loss("nll_loss"), "cross_entropy": _class_loss("cross_entropy"),
               "multi_margin_loss": _class_loss("multi_margin_loss"), "multilabel_margin_loss": _multilabel_margin(),
               "ctc_loss": _ctc(), "pdist": _distance("pdist"), "pairwise_distance": _distance("pairwise_distance"),
               "cosine_similarity": _distance("cosine_similarity")})
