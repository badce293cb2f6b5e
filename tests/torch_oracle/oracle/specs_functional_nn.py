"""Generators of calls for the layers of ``nn.functional``: convolution, pooling, normalisation,
embedding, padding and resampling, shuffles, attention. Shapes are small; batch 0 and size-0
channels are drawn, as are bad configurations (the exception type is compared)."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .calls import Call
from .tensors import FLOATS, T, tensors

__all__ = ["LAYERS"]

F = "nn.functional."
LAYERS = {}
_FL = ("float32", "float64")


def _x(draw, nd, c=None, dtypes=_FL, min_n=0):
    n = draw(st.integers(min_n, 2))
    c = draw(st.integers(1, 3)) if c is None else c
    sp = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    return draw(tensors(dtypes, shape=(n, c) + sp))


@st.composite
def _conv(draw, nd, transpose=False):
    g = draw(st.sampled_from((1, 1, 2)))
    cin, cout = g * draw(st.integers(1, 2)), g * draw(st.integers(1, 2))
    x = _x(draw, nd, cin)
    dt = x.dtype
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    wshape = (cin, cout // g) + k if transpose else (cout, cin // g) + k
    w = draw(tensors((dt,), shape=wshape))
    kw = {"stride": draw(st.sampled_from((1, 2))), "padding": draw(st.sampled_from((0, 1))),
          "dilation": draw(st.sampled_from((1, 2))), "groups": g}
    if not transpose and draw(st.integers(0, 3)) == 0:
        kw["padding"] = draw(st.sampled_from(("same", "valid")))
        if kw["padding"] == "same":
            kw["stride"] = 1
    if transpose:
        kw["output_padding"] = draw(st.sampled_from((0, 0, 1)))
    if draw(st.booleans()):
        kw["bias"] = draw(tensors((dt,), shape=(cout,)))
    name = f"conv_transpose{nd}d" if transpose else f"conv{nd}d"
    return Call(name, F + name, (x, w), kw)


for _d in (1, 2, 3):
    LAYERS[f"conv{_d}d"] = _conv(_d)
    LAYERS[f"conv_transpose{_d}d"] = _conv(_d, True)


@st.composite
def _pool(draw, kind, nd):
    x = _x(draw, nd, dtypes=FLOATS if kind != "lp" else _FL)
    if draw(st.booleans()):  # unbatched
        x = T(x.values[0] if x.shape[0] else np.zeros(x.shape[1:]), x.dtype)
    k = draw(st.integers(1, 3))
    kw = {"kernel_size": k}
    if draw(st.booleans()):
        kw["stride"] = draw(st.integers(1, 3))
    if kind in ("avg", "max"):
        kw["padding"] = draw(st.sampled_from((0, 0, 1)))
        kw["ceil_mode"] = draw(st.booleans())
    if kind == "avg":
        kw["count_include_pad"] = draw(st.booleans())
        if nd > 1 and draw(st.integers(0, 3)) == 0:
            kw["divisor_override"] = draw(st.sampled_from((1, 3)))
    if kind == "max":
        kw["dilation"] = draw(st.sampled_from((1, 2)))
        kw["return_indices"] = draw(st.booleans())
    if kind == "lp":
        return Call(f"lp_pool{nd}d", F + f"lp_pool{nd}d", (x, draw(st.sampled_from((1.0, 2.0, 3.0))), k),
                    {k2: v for k2, v in kw.items() if k2 not in ("kernel_size",)})
    name = f"{kind}_pool{nd}d"
    # a window all of padding (a dilated one can step over the image): PyTorch's index there lies
    # outside the input and its backward aborts the process, so no gradient is compared
    grad = not (kind == "max" and _padding_only_window(x.shape[-nd:], k, kw.get("stride", k), kw["padding"],
                                                       kw["dilation"], kw["ceil_mode"]))
    return Call(name, F + name, (x,), kw, grad=grad)


def _padding_only_window(sp, k, s, p, d, ceil_mode):
    for n in sp:
        span = n + 2 * p - d * (k - 1) - 1
        if span < 0:
            continue
        out = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (out - 1) * s >= n + p:
            out -= 1
        if any(all(not 0 <= o * s - p + j * d < n for j in range(k)) for o in range(out)):
            return True
    return False


@st.composite
def _adaptive(draw, kind, nd):
    x = _x(draw, nd, dtypes=FLOATS)
    out = draw(st.sampled_from((1, 2, 3, None))) if nd > 1 else draw(st.integers(1, 4))
    out = tuple(out if i else draw(st.integers(1, 3)) for i in range(nd)) if nd > 1 else out
    kw = {"return_indices": draw(st.booleans())} if kind == "max" else {}
    name = f"adaptive_{kind}_pool{nd}d"
    return Call(name, F + name, (x, out), kw)


for _d in (1, 2, 3):
    for _k in ("avg", "max", "lp"):
        LAYERS[f"{_k}_pool{_d}d"] = _pool(_k, _d)
    LAYERS[f"adaptive_avg_pool{_d}d"] = _adaptive("avg", _d)
    LAYERS[f"adaptive_max_pool{_d}d"] = _adaptive("max", _d)


def _with_indices(name, src):
    return src.map(lambda c: Call(name, F + name, c.args, {k: v for k, v in c.kwargs.items()
                                                           if k not in ("return_indices",)}, grad=c.grad))


LAYERS["max_pool1d_with_indices"] = _with_indices("max_pool1d_with_indices", _pool("max", 1))
LAYERS["max_pool2d_with_indices"] = _with_indices("max_pool2d_with_indices", _pool("max", 2))
LAYERS["max_pool3d_with_indices"] = _with_indices("max_pool3d_with_indices", _pool("max", 3))
LAYERS["adaptive_max_pool1d_with_indices"] = _with_indices("adaptive_max_pool1d_with_indices", _adaptive("max", 1))
LAYERS["adaptive_max_pool2d_with_indices"] = _with_indices("adaptive_max_pool2d_with_indices", _adaptive("max", 2))


@st.composite
def _unpool(draw, nd):
    x = _x(draw, nd, min_n=1)
    k = 2
    n, c = x.shape[:2]
    sp = tuple(s for s in x.shape[2:])
    # indices of a real max pool: each window's chosen position inside the unpooled input
    out_sp = tuple(s * k for s in sp)
    idx = np.zeros(x.shape, dtype=np.int64)
    it = np.ndindex(*sp)
    for pos in it:
        off = tuple(p * k + draw(st.integers(0, k - 1)) for p in pos)
        idx[(Ellipsis,) + pos] = np.ravel_multi_index(off, out_sp)
    name = f"max_unpool{nd}d"
    return Call(name, F + name, (x, T(idx, "int64"), k), {})


for _d in (1, 2, 3):
    LAYERS[f"max_unpool{_d}d"] = _unpool(_d)


@st.composite
def _norm(draw, name):
    nd = draw(st.integers(0, 2))
    c = draw(st.integers(1, 4))
    x = _x(draw, nd, c, dtypes=FLOATS, min_n=0 if name != "instance_norm" else 1)
    dt = x.dtype
    kw, args = {}, [x]

    def vec(lo=None, hi=None):
        return draw(tensors((dt,), shape=(c,), low=lo, high=hi, special=False))
    if name == "batch_norm":
        training = draw(st.booleans())
        args += [vec(-1.0, 1.0), vec(0.1, 2.0)]
        kw = {"training": training, "momentum": 0.1, "eps": draw(st.sampled_from((1e-5, 0.1)))}
    elif name == "instance_norm":
        if draw(st.booleans()):
            kw.update({"running_mean": vec(-1.0, 1.0), "running_var": vec(0.1, 2.0),
                       "use_input_stats": draw(st.booleans())})
    elif name == "group_norm":
        args.append(draw(st.sampled_from(tuple(g for g in (1, 2, 3, 4) if c % g == 0) + (3,))))
    elif name in ("layer_norm", "rms_norm"):
        args.append(x.shape[-draw(st.integers(1, min(2, len(x.shape)))):])
        if name == "rms_norm" and draw(st.booleans()):
            kw["eps"] = 1e-3
    elif name == "local_response_norm":
        args.append(draw(st.integers(1, 3)))
        return Call(name, F + name, tuple(args), kw)
    if name in ("batch_norm", "instance_norm", "group_norm") and draw(st.booleans()):
        kw["weight"], kw["bias"] = vec(), vec()
    if name in ("layer_norm", "rms_norm") and draw(st.booleans()):
        kw["weight"] = draw(tensors((dt,), shape=args[1], special=False))
        if name == "layer_norm":
            kw["bias"] = draw(tensors((dt,), shape=args[1], special=False))
    return Call(name, F + name, tuple(args), kw)


for _n in ("batch_norm", "instance_norm", "group_norm", "layer_norm", "rms_norm", "local_response_norm"):
    LAYERS[_n] = _norm(_n)


@st.composite
def _embedding(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(0, 3))
    w = draw(tensors(_FL, shape=(v, d)))
    idx = T(np.array(draw(st.lists(st.integers(0, v - 1 + (draw(st.integers(0, 9)) == 0)), max_size=6))), "int64")
    kw = {}
    if draw(st.booleans()):
        kw["padding_idx"] = draw(st.integers(-v, v - 1))
    if draw(st.integers(0, 3)) == 0:
        kw["max_norm"] = 1.0
    return Call("embedding", F + "embedding", (idx, w), kw)


@st.composite
def _embedding_bag(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    w = draw(tensors(_FL, shape=(v, d)))
    k = draw(st.integers(0, 6))
    idx = T(np.array(draw(st.lists(st.integers(0, v - 1), min_size=k, max_size=k))), "int64")
    offsets = T(np.array(sorted(draw(st.lists(st.integers(0, k), min_size=1, max_size=3)))[:1] and
                         [0] + sorted(draw(st.lists(st.integers(0, k), max_size=2)))), "int64")
    kw = {"mode": draw(st.sampled_from(("sum", "mean", "max")))}
    if draw(st.booleans()):
        kw["include_last_offset"] = False
    return Call("embedding_bag", F + "embedding_bag", (idx, w, offsets), kw)


@st.composite
def _one_hot(draw):
    x = draw(tensors(("int64",), low=0, high=4))
    return Call("one_hot", F + "one_hot", (x,), {"num_classes": draw(st.sampled_from((-1, 5, 3)))})


@st.composite
def _pad(draw):
    mode = draw(st.sampled_from(("constant", "reflect", "replicate", "circular")))
    nd = draw(st.integers(1, 3)) if mode != "constant" else draw(st.integers(0, 3))
    x = _x(draw, nd, dtypes=FLOATS if mode != "constant" else FLOATS + ("int64", "bool"))
    npad = 2 * draw(st.integers(1, max(nd, 1)))
    pad = tuple(draw(st.integers(-1 if mode == "constant" else 0, 2)) for _ in range(npad))
    kw = {"mode": mode}
    if mode == "constant" and draw(st.booleans()):
        kw["value"] = draw(st.sampled_from((1.5, -2.0, 0.0)))
    return Call("pad", F + "pad", (x, pad), kw)


@st.composite
def _interp(draw, name="interpolate"):
    nd = draw(st.integers(1, 3))
    x = _x(draw, nd, dtypes=_FL, min_n=1)
    modes = {1: ("nearest", "linear", "area", "nearest-exact"), 2: ("nearest", "bilinear", "bicubic", "area",
                                                                    "nearest-exact"),
             3: ("nearest", "trilinear", "area", "nearest-exact")}[nd]
    mode = draw(st.sampled_from(modes))
    kw = {}
    if draw(st.booleans()):
        kw["size"] = tuple(draw(st.integers(1, 6)) for _ in range(nd))
    else:
        kw["scale_factor"] = draw(st.sampled_from((2, 0.5, 1.5, 3.0)))
    if name == "interpolate":
        kw["mode"] = mode
        if mode in ("linear", "bilinear", "bicubic", "trilinear") and draw(st.booleans()):
            kw["align_corners"] = draw(st.booleans())
    elif name == "upsample":
        kw["mode"] = mode if mode != "area" else "nearest"
    elif name != "upsample_nearest":
        x = _x(draw, 2, dtypes=_FL, min_n=1)
        if "size" in kw:
            kw["size"] = kw["size"][:1] * 2
    return Call(name, F + name, (x,), kw)


@st.composite
def _shuffle(draw, name):
    r = draw(st.integers(1, 2))
    if name == "pixel_shuffle":
        x = draw(tensors(FLOATS, shape=(draw(st.integers(0, 2)), r * r * draw(st.integers(1, 2)), 2, 3)))
        return Call(name, F + name, (x, r))
    if name == "pixel_unshuffle":
        x = draw(tensors(FLOATS, shape=(draw(st.integers(0, 2)), 2, 2 * r, 2 * r)))
        return Call(name, F + name, (x, r))
    g = draw(st.integers(1, 3))
    x = draw(tensors(FLOATS, shape=(2, g * draw(st.integers(1, 2)), 2)))
    return Call(name, F + name, (x, g))


@st.composite
def _fold(draw, name):
    k = draw(st.integers(1, 2))
    kw = {"kernel_size": k, "stride": draw(st.integers(1, 2)), "padding": draw(st.integers(0, 1)),
          "dilation": draw(st.integers(1, 2))}
    if name == "unfold":
        return Call(name, F + name, (_x(draw, 2, dtypes=_FL),), kw)
    size = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    nb = [(size[i] + 2 * kw["padding"] - kw["dilation"] * (k - 1) - 1) // kw["stride"] + 1 for i in range(2)]
    c = draw(st.integers(1, 2))
    x = draw(tensors(_FL, shape=(draw(st.integers(0, 2)), c * k * k, max(nb[0], 0) * max(nb[1], 0))))
    return Call(name, F + name, (x, size), kw)


@st.composite
def _linear(draw, name):
    i, o = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    dt = draw(st.sampled_from(FLOATS))
    x = draw(tensors((dt,), shape=draw(st.sampled_from(((i,), (2, i), (2, 1, i))))))
    if name == "linear":
        w = draw(tensors((dt,), shape=draw(st.sampled_from(((o, i), (i,))))))
        b = draw(st.one_of(st.none(), tensors((dt,), shape=(o,) if len(w.shape) == 2 else ())))
        return Call(name, F + name, (x, w, b))
    j = draw(st.integers(1, 3))
    x2 = draw(tensors((dt,), shape=x.shape[:-1] + (j,)))
    w = draw(tensors((dt,), shape=(o, i, j)))
    return Call(name, F + name, (x, x2, w, draw(st.one_of(st.none(), tensors((dt,), shape=(o,))))))


@st.composite
def _grid(draw, name):
    n = draw(st.integers(1, 2))
    if name == "affine_grid":
        theta = draw(tensors(_FL, shape=(n, 2, 3), special=False))
        return Call(name, F + name, (theta, (n, 1, 3, 2)), {"align_corners": draw(st.booleans())})
    x = draw(tensors(_FL, shape=(n, 2, 3, 4)))
    g = draw(tensors((x.dtype,), shape=(n, 2, 3, 2), low=-1.2, high=1.2, special=False))
    return Call(name, F + name, (x, g), {"mode": draw(st.sampled_from(("bilinear", "nearest", "bicubic"))),
                                         "padding_mode": draw(st.sampled_from(("zeros", "border", "reflection"))),
                                         "align_corners": draw(st.booleans())})


@st.composite
def _sdpa(draw):
    b, lq, lk, e = (draw(st.integers(0 if i < 3 else 1, 3)) for i in range(4))
    dt = draw(st.sampled_from(_FL))
    q, k, v = (draw(tensors((dt,), shape=(b, s, e), special=False)) for s in (lq, lk, lk))
    kw = {}
    mask = draw(st.integers(0, 3))
    if mask == 1:
        kw["attn_mask"] = draw(tensors(("bool",), shape=(lq, lk)))
    elif mask == 2:
        kw["attn_mask"] = draw(tensors((dt,), shape=(lq, lk), special=False))
    elif mask == 3:
        kw["is_causal"] = True
    if draw(st.booleans()):
        kw["scale"] = 0.5
    return Call("scaled_dot_product_attention", F + "scaled_dot_product_attention", (q, k, v), kw)


@st.composite
def _mha(draw):
    lq, n, e, h = draw(st.integers(1, 3)), draw(st.integers(1, 2)), 4, draw(st.sampled_from((1, 2)))
    dt = "float64"
    q = draw(tensors((dt,), shape=(lq, n, e), special=False))
    w_in = draw(tensors((dt,), shape=(3 * e, e), special=False, layouts=("contiguous",)))
    b_in = draw(tensors((dt,), shape=(3 * e,), special=False))
    w_out = draw(tensors((dt,), shape=(e, e), special=False))
    b_out = draw(tensors((dt,), shape=(e,), special=False))
    kw = {"training": False, "need_weights": draw(st.booleans())}
    if draw(st.booleans()):
        kw["key_padding_mask"] = T(np.array(draw(st.lists(st.booleans(), min_size=n * lq, max_size=n * lq)))
                                   .reshape(n, lq), "bool")
    return Call("multi_head_attention_forward", F + "multi_head_attention_forward",
                (q, q, q, e, h, w_in, b_in, None, None, False, 0.0, w_out, b_out), kw)


LAYERS.update({
    "embedding": _embedding(), "embedding_bag": _embedding_bag(), "one_hot": _one_hot(), "pad": _pad(),
    "interpolate": _interp(), "upsample": _interp("upsample"), "upsample_nearest": _interp("upsample_nearest"),
    "upsample_bilinear": _interp("upsample_bilinear"), "pixel_shuffle": _shuffle("pixel_shuffle"),
    "pixel_unshuffle": _shuffle("pixel_unshuffle"), "channel_shuffle": _shuffle("channel_shuffle"),
    "native_channel_shuffle": _shuffle("native_channel_shuffle"), "fold": _fold("fold"), "unfold": _fold("unfold"),
    "linear": _linear("linear"), "bilinear": _linear("bilinear"), "affine_grid": _grid("affine_grid"),
    "grid_sample": _grid("grid_sample"), "scaled_dot_product_attention": _sdpa(),
    "multi_head_attention_forward": _mha(),
})
