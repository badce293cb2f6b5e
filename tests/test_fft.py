"""ember.fft, stft/istft and the windows: PyTorch's errors (types and messages), result dtypes
and shapes, the norm modes, n/s/dim handling, out=, the round trips, the windows' values (the
transforms' values against numpy.fft and the gradchecks are in the conformance suite,
core/testing/suite/optable_spectral.py)."""
import math
import warnings

import numpy as np
import pytest

import ember
from ember import fft as T


def _x(*shape, dtype=ember.float64, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal(shape)
    return ember.tensor(a, dtype=dtype)


def _close(a, b, tol=1e-9):
    return np.allclose(np.asarray(a.numpy() if isinstance(a, ember.Tensor) else a),
                       np.asarray(b.numpy() if isinstance(b, ember.Tensor) else b), atol=tol, rtol=tol)


def test_namespace_has_every_torch_fft_name():
    names = {"fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
             "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
    assert names <= set(T.__all__) and all(callable(getattr(T, n)) for n in names)
    assert ember.fft is T and T.Tensor is ember.Tensor


@pytest.mark.parametrize("dt,cdt", [(ember.float32, ember.complex64), (ember.float64, ember.complex128),
                                    (ember.int64, ember.complex64), (ember.bool, ember.complex64)])
def test_result_dtypes_follow_the_input_precision(dt, cdt):
    x = ember.ones(3, 8).to(dt)
    assert T.fft(x).dtype is cdt and T.rfft(x).dtype is cdt and T.ihfft(x).dtype is cdt
    rdt = ember.float64 if dt is ember.float64 else ember.float32
    assert T.irfft(x).dtype is rdt and T.hfftn(x).dtype is rdt
    assert T.fft(x.to(cdt)).dtype is cdt and T.irfft(x.to(cdt)).dtype is rdt and T.hfft2(x.to(cdt)).dtype is rdt


@pytest.mark.parametrize("dt,name", [(ember.float16, "Half"), (ember.bfloat16, "BFloat16")])
def test_low_precision_is_refused(dt, name):
    for f in (T.fft, T.rfft, T.irfft, T.hfft, T.fftn, T.rfft2):
        with pytest.raises(RuntimeError, match=f"^Unsupported dtype {name}$"):
            f(ember.ones(4, 4, dtype=dt))


def test_real_input_functions_refuse_complex():
    z = _x(4, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="^rfft expects a real input tensor, but got ComplexFloat$"):
        T.rfft(z)
    with pytest.raises(RuntimeError, match="^ihfft expects a real input tensor, but got ComplexFloat$"):
        T.ihfft(z)
    with pytest.raises(RuntimeError, match="^rfftn expects a real-valued input tensor, but got ComplexFloat$"):
        T.rfftn(z)


def test_argument_errors():
    x = _x(3, 8)
    for n in (0, -1):
        with pytest.raises(RuntimeError, match=rf"^Invalid number of data points \({n}\) specified$"):
            T.fft(x, n=n)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        T.fft(x, dim=2)
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        T.fft(ember.tensor(3.0))
    with pytest.raises(RuntimeError, match='^Invalid normalization mode: "bad"$'):
        T.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match=r"^Invalid number of data points \(0\) specified$"):
        T.irfft(_x(3, 1, dtype=ember.complex64))  # default n = 2 * (1 - 1)
    with pytest.raises(RuntimeError, match="^When given, dim and shape arguments must have the same length$"):
        T.fftn(x, s=(4,), dim=(0, 1))
    with pytest.raises(RuntimeError, match="^Got shape with 3 values but input tensor only has 2 dimensions.$"):
        T.fftn(x, s=(2, 4, 4))
    with pytest.raises(RuntimeError, match="^FFT dims must be unique$"):
        T.fftn(x, dim=(0, 0))
    with pytest.raises(RuntimeError, match="^rfftn must transform at least one axis$"):
        T.rfftn(x, dim=())
    with pytest.raises(RuntimeError, match="^irfftn must transform at least one axis$"):
        T.irfftn(x, dim=())
    with pytest.raises(IndexError):
        T.fft2(ember.ones(4))
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        T.fft([1.0, 2.0])


def test_norm_modes_scale_as_documented():
    x = _x(4, 6)
    n = 6
    base = T.fft(x)
    assert _close(T.fft(x, norm="backward"), base)
    assert _close(T.fft(x, norm="ortho"), base / math.sqrt(n))
    assert _close(T.fft(x, norm="forward"), base / n)
    assert _close(T.ifft(base), x.to(ember.complex128))
    assert _close(T.ifft(T.fft(x, norm="ortho"), norm="ortho"), x.to(ember.complex128))
    assert _close(T.ifft(T.fft(x, norm="forward"), norm="forward"), x.to(ember.complex128))
    assert _close(T.irfft(T.rfft(x, norm="ortho"), n=n, norm="ortho"), x)
    assert _close(T.hfft(T.ihfft(x), n=n), x)  # hfft inverts ihfft
    assert _close(T.irfftn(T.rfftn(x), s=x.shape), x)


def test_n_pads_and_trims_and_s_minus_one_keeps_the_size():
    x = _x(3, 8)
    assert T.fft(x, n=10).shape == (3, 10) and _close(T.fft(x, n=10), np.fft.fft(x.numpy(), n=10))
    assert T.rfft(x, n=5).shape == (3, 3) and _close(T.rfft(x, n=5), np.fft.rfft(x.numpy()[:, :5]))
    assert T.irfft(T.rfft(x), n=7).shape == (3, 7)
    assert T.fftn(x, s=(-1, 4)).shape == (3, 4)
    assert T.fftn(x, s=(4,)).shape == (3, 4)  # s alone: the last len(s) dims
    assert T.fftn(x, dim=1).shape == (3, 8)
    assert T.irfftn(_x(3, 5, dtype=ember.complex64)).shape == (3, 8)
    assert T.hfft2(_x(3, 5, dtype=ember.complex64), s=(4, 9)).shape == (4, 9)


def test_fftn_over_no_dims_is_a_complex_copy_and_0d_input_works():
    x = _x(2, 3)
    r = T.fftn(x, dim=())
    assert r.dtype is ember.complex128 and _close(r, x.to(ember.complex128))
    assert T.fftn(ember.tensor(3.0)).item() == 3 + 0j


def test_out_is_written_and_resized():
    x = _x(3, 8, dtype=ember.float32)
    out = ember.empty(0, dtype=ember.complex64)
    r = T.fft(x, out=out)
    assert r is out and out.shape == (3, 8) and _close(out, T.fft(x), 1e-6)
    with pytest.raises(RuntimeError):
        T.fft(x, out=ember.empty(0))


def test_irfft_ignores_the_imaginary_parts_of_the_self_conjugate_entries():
    z = _x(5, dtype=ember.complex128)
    z2 = z.clone()
    z2[0] = z2[0].real + 7j
    z2[4] = z2[4].real - 3j  # n = 8: entries 0 and 4 are their own mirror image
    assert _close(T.irfft(z), T.irfft(z2))


def test_hermitian_gradient_doubles_the_entries_that_appear_twice():
    z = ember.zeros(5, dtype=ember.complex128, requires_grad=True)
    T.irfft(z, n=8, norm="forward").sum().backward()  # sum of the signal = 8 * (DC of the spectrum)
    assert _close(z.grad, np.array([8, 0, 0, 0, 0], dtype=complex))
    y = ember.ones(8, dtype=ember.float64, requires_grad=True)
    ember.view_as_real(T.rfft(y)).sum().backward()
    assert y.grad.shape == (8,) and y.grad.dtype is ember.float64


def test_fftfreq_rfftfreq_and_shifts():
    assert _close(T.fftfreq(5), [0.0, 0.2, 0.4, -0.4, -0.2], 1e-7)
    assert _close(T.fftfreq(4, 0.5), [0.0, 0.5, -1.0, -0.5])
    assert _close(T.rfftfreq(5), [0.0, 0.2, 0.4], 1e-7)
    assert T.fftfreq(5).dtype is ember.float32 and T.fftfreq(5, dtype=ember.float64).dtype is ember.float64
    assert T.fftfreq(0).shape == (0,) and T.rfftfreq(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="^fftfreq requires a floating point or complex dtype$"):
        T.fftfreq(5, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="negative dimension"):
        T.fftfreq(-1)
    a = ember.arange(10).reshape(2, 5)
    assert T.fftshift(a).tolist() == [[8, 9, 5, 6, 7], [3, 4, 0, 1, 2]]
    assert T.fftshift(a, dim=1).tolist() == [[3, 4, 0, 1, 2], [8, 9, 5, 6, 7]]
    assert T.ifftshift(a, dim=(1,)).tolist() == [[2, 3, 4, 0, 1], [7, 8, 9, 5, 6]]
    assert T.ifftshift(T.fftshift(a)).tolist() == a.tolist()
    with pytest.raises(IndexError):
        T.fftshift(a, dim=3)


# -- windows --------------------------------------------------------------------------------------

def test_window_values():
    assert ember.hann_window(2).tolist() == [0.0, 1.0]
    assert _close(ember.hann_window(5, periodic=False, dtype=ember.float64), np.hanning(5))
    assert _close(ember.hamming_window(5, False, dtype=ember.float64), np.hamming(5))
    assert _close(ember.hamming_window(5, periodic=False, alpha=0.5, beta=0.5), [0.0, 0.5, 1.0, 0.5, 0.0], 1e-7)
    assert _close(ember.blackman_window(6, False, dtype=ember.float64), np.blackman(6))
    assert _close(ember.bartlett_window(5), [0.0, 0.4, 0.8, 0.8, 0.4], 1e-7)
    assert _close(ember.kaiser_window(7, False, 5.0, dtype=ember.float64), np.kaiser(7, 5.0))
    assert _close(ember.kaiser_window(5, False, 5.0), [0.0367109, 0.5528516, 1.0, 0.5528516, 0.0367109], 1e-6)
    # periodic: the symmetric window of n + 1 points, less its last
    assert _close(ember.hann_window(8, dtype=ember.float64), np.hanning(9)[:-1])


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_window_edge_cases_and_errors(name):
    f = getattr(ember, name)
    assert f(0).shape == (0,) and f(1).tolist() == [1.0]
    assert f(5, dtype=ember.float64).dtype is ember.float64 and f(5, dtype=ember.float16).dtype is ember.float16
    assert f(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match=f"^{name} requires non-negative window_length, got window_length=-1$"):
        f(-1)
    with pytest.raises(RuntimeError, match=f"^{name} expects floating point dtypes"):
        f(5, dtype=ember.int64)


# -- stft / istft ---------------------------------------------------------------------------------

def test_stft_shapes_dtypes_and_method():
    x = _x(2, 100, dtype=ember.float32)
    w = ember.hann_window(16)
    assert ember.stft(x, 16, window=w, return_complex=True).shape == (2, 9, 26)
    assert ember.stft(x[0], 16, window=w, return_complex=True, center=False).shape == (9, 22)
    assert ember.stft(x, 16, window=w, return_complex=True, onesided=False).shape == (2, 16, 26)
    assert x.stft(16, window=w, return_complex=True).dtype is ember.complex64
    assert ember.stft(x.double(), 16, window=w, return_complex=True).dtype is ember.complex128
    assert ember.stft(x, 16, win_length=10, center=False, align_to_window=True, window=ember.hann_window(10),
                      return_complex=True).shape == (2, 9, 23)
    with pytest.warns(UserWarning, match="deprecated"):
        r = ember.stft(x, 16, window=w, return_complex=False)
    assert r.shape == (2, 9, 26, 2) and r.dtype is ember.float32
    with pytest.warns(UserWarning, match="window was not provided"):
        ember.stft(x, 16, return_complex=True)
    assert ember.stft(x.to(ember.complex64), 16, window=w).shape == (2, 16, 26)  # complex: two-sided by default


def test_stft_errors():
    x = _x(100, dtype=ember.float32)
    w = ember.hann_window(16)
    with pytest.raises(RuntimeError, match="^stft requires the return_complex parameter be given for real inputs"):
        ember.stft(x, 16, window=w)
    with pytest.raises(RuntimeError, match="expected a 1D or 2D tensor"):
        ember.stft(x.reshape(2, 5, 10), 4, window=ember.hann_window(4), return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < n_fft < 100, but got n_fft=300"):
        ember.stft(x, 300, window=ember.hann_window(300), center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="expected hop_length > 0, but got hop_length=0"):
        ember.stft(x, 16, hop_length=0, window=w, return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < win_length <= n_fft, but got win_length=20"):
        ember.stft(x, 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match="expected a 1D window tensor of size equal to win_length=16"):
        ember.stft(x, 16, window=ember.ones(10), return_complex=True)
    with pytest.raises(NotImplementedError, match="^Unrecognised padding mode bogus$"):
        ember.stft(x, 16, window=w, pad_mode="bogus", return_complex=True)
    with pytest.raises(RuntimeError, match="^Cannot have onesided output if window or input is complex$"):
        ember.stft(x.to(ember.complex64), 16, window=w, onesided=True, return_complex=True)
    with pytest.raises(RuntimeError, match="^stft align_to_window should only be set when center = false$"):
        ember.stft(x, 16, window=w, align_to_window=True, return_complex=True)
    with pytest.raises(RuntimeError, match="expected a tensor of floating point or complex values"):
        ember.stft(ember.arange(100), 16, window=w, return_complex=True)


@pytest.mark.parametrize("kw", [{}, {"hop_length": 5, "win_length": 12}, {"normalized": True},
                                {"pad_mode": "constant"}, {"onesided": False}])
def test_stft_istft_round_trip(kw):
    x = _x(2, 120)
    win = kw.get("win_length", 16)
    w = ember.hann_window(win, dtype=ember.float64)
    z = ember.stft(x, 16, window=w, return_complex=True, **kw)
    inv = {k: v for k, v in kw.items() if k != "pad_mode"}
    y = ember.istft(z, 16, window=w, length=120, **inv)
    assert y.shape == (2, 120) and _close(y, x, 1e-9)
    assert _close(ember.istft(z[0], 16, window=w, length=120, **inv), x[0], 1e-9)


def test_istft_length_center_and_errors():
    x = _x(100)
    w = ember.hann_window(16, dtype=ember.float64)
    z = ember.stft(x, 16, window=w, return_complex=True)
    assert ember.istft(z, 16, window=w).shape == (100,)
    assert ember.istft(z, 16, window=w, length=50).shape == (50,)
    with pytest.warns(UserWarning):
        y = ember.istft(z, 16, window=w, length=120)
    # the signal ends with the padded frames' reach, 116 - 8 samples; zeros after it
    assert y.shape == (120,) and y[108:].abs().max().item() == 0 and _close(y[:100], x)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        ember.istft(z, 16, window=w, center=False)  # hann's first sample is 0: no overlap covers it
    with pytest.raises(RuntimeError, match="^istft requires a complex-valued input tensor"):
        ember.istft(ember.view_as_real(z), 16, window=w)
    with pytest.raises(RuntimeError, match="match n_fft / 2 \\+ 1 when onesided=True, but got 9"):
        ember.istft(z, 20)
    with pytest.raises(RuntimeError, match="^Cannot have onesided output if window or input is complex$"):
        ember.istft(z, 16, window=w, return_complex=True)
    zf = ember.stft(x, 16, window=w, return_complex=True, onesided=False)
    assert ember.istft(zf, 16, window=w, onesided=False, return_complex=True).dtype is ember.complex128
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.istft(16, window=w).shape == (100,)


# -- ember.signal.windows ---------------------------------------------------------------------------

def test_signal_windows_values_and_errors():
    W = ember.signal.windows
    assert _close(W.hann(5), [0.0, 0.5, 1.0, 0.5, 0.0], 1e-7)
    assert _close(W.hann(8, sym=False), ember.hann_window(8), 1e-7)  # sym=False is the periodic window
    assert _close(W.cosine(5), [math.sin(math.pi * (n + 0.5) / 5) for n in range(5)], 1e-7)
    assert _close(W.exponential(5, center=1.0, sym=False, dtype=ember.float64),
                  [math.exp(-abs(n - 1)) for n in range(5)])
    assert _close(W.gaussian(5, std=2.0, dtype=ember.float64), [math.exp(-0.5 * ((n - 2) / 2) ** 2) for n in range(5)])
    assert _close(W.general_hamming(5, alpha=0.6), [0.2, 0.6, 1.0, 0.6, 0.2], 1e-7)
    assert _close(W.nuttall(5), [0.0003628, 0.2269824, 1.0, 0.2269824, 0.0003628], 1e-6)
    assert _close(W.kaiser(7, beta=5.0, dtype=ember.float64), np.kaiser(7, 5.0))
    assert W.hann(0).shape == (0,) and W.hann(1).tolist() == [1.0] and W.hann(3, requires_grad=True).requires_grad
    for bad in (lambda: W.hann(-1), lambda: W.hann(4, dtype=ember.float16), lambda: W.gaussian(4, std=0.0),
                lambda: W.exponential(4, tau=0.0), lambda: W.kaiser(4, beta=-1.0),
                lambda: W.exponential(4, center=1.0)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(TypeError, match="^Coefficients must be a list/tuple$"):
        W.general_cosine(4, a=1.0)
