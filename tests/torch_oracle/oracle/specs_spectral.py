"""Generators of calls for ``torch.fft`` (every transform, with drawn ``n``/``s``, ``dim`` and
``norm``, including invalid ones for the errors), ``fftfreq``/``rfftfreq``/the shifts,
``stft``/``istft`` and the window functions. Inputs are real, integer, bool, half and complex,
on every layout; sides are at least 1 (a zero-size batch dim makes PyTorch's MKL build raise an
internal error, where ember returns an empty result) and values finite (the transforms mix every
input into every output: a NaN or an infinity only tells which NaN pattern each FFT library
produces)."""
from __future__ import annotations

from hypothesis import strategies as st

from .calls import D, Call
from .tensors import COMPLEX, tensors

__all__ = ["SPECTRAL"]

SPECTRAL = {}

_REALS = ("float32", "float64", "int64", "bool", "float16")
_ANY = _REALS + COMPLEX
_NORMS = (None, "backward", "ortho", "forward")


def _input(draw, dtypes, min_dims=1):
    return draw(tensors(dtypes, min_dims=min_dims, max_dims=3, min_side=1, max_side=5, low=-2, high=2,
                        special=False))


def _one_d(name, dtypes):
    @st.composite
    def gen(draw):
        x = _input(draw, dtypes, min_dims=0 if not draw(st.integers(0, 15)) else 1)
        nd = max(len(x.shape), 1)
        kw = {"n": draw(st.one_of(st.none(), st.integers(1, 9), st.just(0))), "dim": draw(st.integers(-nd, nd - 1)),
              "norm": draw(st.sampled_from(_NORMS + ("bogus",) if not draw(st.integers(0, 15)) else _NORMS))}
        return Call(f"fft_{name}", f"fft.{name}", (x,), {k: v for k, v in kw.items() if v is not None})
    return gen()


def _n_d(name, dtypes, two=False):
    @st.composite
    def gen(draw):
        x = _input(draw, dtypes, min_dims=2 if two else 1)
        nd = len(x.shape)
        kw = {"norm": draw(st.sampled_from(_NORMS))}
        k = 2 if two else draw(st.integers(1, nd))
        if draw(st.booleans()):
            dims = draw(st.permutations(range(nd)))[:k]
            kw["dim"] = tuple(d - nd if draw(st.booleans()) else d for d in dims)
        if draw(st.booleans()):
            kw["s"] = tuple(draw(st.sampled_from((-1, 1, 2, 3, 4, 6))) for _ in range(k))
        if not draw(st.integers(0, 19)):  # the errors: repeated dims, s and dim of different lengths
            kw["dim"] = (0, 0) if draw(st.booleans()) else (0,)
        return Call(f"fft_{name}", f"fft.{name}", (x,), kw)
    return gen()


for _name in ("fft", "ifft", "irfft", "hfft"):
    SPECTRAL[f"fft_{_name}"] = _one_d(_name, _ANY)
for _name in ("rfft", "ihfft"):
    SPECTRAL[f"fft_{_name}"] = _one_d(_name, _REALS + COMPLEX[:1])
for _name in ("fft2", "ifft2", "irfft2", "hfft2"):
    SPECTRAL[f"fft_{_name}"] = _n_d(_name, _ANY, two=True)
for _name in ("rfft2", "ihfft2"):
    SPECTRAL[f"fft_{_name}"] = _n_d(_name, _REALS, two=True)
for _name in ("fftn", "ifftn", "irfftn", "hfftn"):
    SPECTRAL[f"fft_{_name}"] = _n_d(_name, _ANY)
for _name in ("rfftn", "ihfftn"):
    SPECTRAL[f"fft_{_name}"] = _n_d(_name, _REALS)


@st.composite
def _freq(draw, name):
    kw = {"dtype": D(draw(st.sampled_from(("float32", "float64"))))} if draw(st.booleans()) else {}
    return Call(name, f"fft.{name}", (draw(st.integers(0, 9)), draw(st.sampled_from((1.0, 0.5, 0.1, 3)))), kw,
                grad=False)


@st.composite
def _shift(draw, name):
    x = _input(draw, ("float32", "float64", "int64", "complex64"))
    nd = len(x.shape)
    dim = draw(st.one_of(st.none(), st.integers(-nd, nd - 1), st.just(tuple(range(nd))[:1])))
    return Call(name, f"fft.{name}", (x,), {} if dim is None else {"dim": dim})


SPECTRAL["fft_fftfreq"] = _freq("fftfreq")
SPECTRAL["fft_rfftfreq"] = _freq("rfftfreq")
SPECTRAL["fft_fftshift"] = _shift("fftshift")
SPECTRAL["fft_ifftshift"] = _shift("ifftshift")


def _window(name):
    @st.composite
    def gen(draw):
        args = [draw(st.integers(0, 12)), draw(st.booleans())]
        if name == "kaiser_window":
            args.append(draw(st.sampled_from((0.0, 2.5, 12.0))))
        if name == "hamming_window" and draw(st.booleans()):
            args += [0.5, 0.5]
        dt = draw(st.sampled_from(("float32", "float64", "float16")))
        return Call(name, name, tuple(args), {"dtype": D(dt)}, grad=False)
    return gen()


for _name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"):
    SPECTRAL[_name] = _window(_name)


@st.composite
def _stft(draw):
    n_fft = draw(st.integers(2, 8))
    batch = draw(st.sampled_from(((), (2,))))
    x = draw(tensors(("float32", "float64", "complex64"), shape=batch + (draw(st.integers(n_fft, 20)),), low=-2,
                     high=2, special=False))
    win = draw(st.integers(1, n_fft))
    kw = {"hop_length": draw(st.integers(1, n_fft)), "win_length": win, "center": draw(st.booleans()),
          "normalized": draw(st.booleans()), "return_complex": True}
    if kw["center"]:
        kw["pad_mode"] = draw(st.sampled_from(("reflect", "constant", "replicate", "circular")))
    if draw(st.booleans()):
        kw["window"] = draw(tensors(("float32", "float64"), shape=(win,), low=0.1, high=1, special=False))
    return Call("stft", "stft", (x, n_fft), kw)


@st.composite
def _istft(draw):
    n_fft = draw(st.integers(2, 8))
    hop = draw(st.integers(1, max(n_fft // 2, 1)))
    onesided = draw(st.booleans())
    batch = draw(st.sampled_from(((), (2,))))
    z = draw(tensors(COMPLEX, shape=batch + (n_fft // 2 + 1 if onesided else n_fft, draw(st.integers(1, 6))),
                     low=-2, high=2, special=False))
    kw = {"hop_length": hop, "center": draw(st.booleans()), "normalized": draw(st.booleans()),
          # the window in the input's precision: with a float64 window, a complex64 input's frames are
          # float32 values (rounded differently by each FFT library) in a float64 result
          "window": draw(tensors(("float32" if z.dtype == "complex64" else "float64",), shape=(n_fft,), low=0.5,
                                 high=1, special=False))}
    if not onesided:
        kw["onesided"] = False
        kw["return_complex"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["length"] = draw(st.integers(1, 30))
    return Call("istft", "istft", (z, n_fft), kw)


SPECTRAL["stft"] = _stft()
SPECTRAL["istft"] = _istft()


def _signal_window(name):
    @st.composite
    def gen(draw):
        sym = draw(st.booleans())
        kw = {"sym": sym, "dtype": D(draw(st.sampled_from(("float32", "float64", "float16"))))}
        if name == "general_cosine":
            kw["a"] = draw(st.lists(st.sampled_from((0.5, 0.3, 0.1, 0.02)), min_size=1, max_size=4))
        elif name == "general_hamming":
            kw["alpha"] = draw(st.sampled_from((0.5, 0.54, 0.6)))
        elif name == "exponential":
            kw["tau"] = draw(st.sampled_from((0.5, 1.0, 3.0, 0.0)))
            if not sym and draw(st.booleans()):
                kw["center"] = draw(st.sampled_from((0.0, 1.5, 4.0)))
        elif name == "gaussian":
            kw["std"] = draw(st.sampled_from((0.7, 1.0, 2.5, -1.0)))
        elif name == "kaiser":
            kw["beta"] = draw(st.sampled_from((0.0, 3.0, 12.0)))
        return Call(f"signal.windows.{name}", f"signal.windows.{name}", (draw(st.integers(-1, 12)),), kw, grad=False)
    return gen()


for _name in ("bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
              "hamming", "hann", "kaiser", "nuttall"):
    SPECTRAL[f"signal.windows.{_name}"] = _signal_window(_name)
