"""Random numbers: ``Generator``, ``manual_seed`` and the random creation ops.

Each backend supplies generator objects (``Backend.create_generator``) and two fill kernels,
``uniform_`` and ``normal_``; everything else (randint, randperm, bernoulli, multinomial...) is
built from them. Sequences are reproducible per seed and backend, not bit-identical to PyTorch.
"""
from __future__ import annotations

import math
import secrets
import threading

from .. import _devices
from .. import _dtype as D
from .. import _hoststep
from .. import _plugins
from .._tensor import Tensor
from . import _args as U
from . import arithmetic as A
from . import comparison as CMP
from . import complexops as CX
from . import creation as CR
from . import indexing as IX
from . import pointwise as PW
from . import reduction as R
from .vmap_hook import hooked
from . import unary as UN
from . import writes as W
from .registry import register_op

__all__ = ["bernoulli", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like", "randn",
           "randn_like", "randperm", "Generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state"]

DEFAULT_SEED = 67280421310721  # PyTorch's default cpu seed: unseeded runs repeat
_lock = threading.Lock()
_defaults: dict = {}  # canonical device -> Generator
_seed = [DEFAULT_SEED]


class Generator:
    """A random generator on one device (``ember.Generator('cpu').manual_seed(0)``)."""

    def __init__(self, device="cpu"):
        self._device = _devices.canonical(device)
        self._gen = self._device._backend.create_generator(self._device)

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed: int) -> "Generator":
        seed = int(seed)
        if seed < -(2 ** 63) or seed >= 2 ** 64:
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} must fit in 64 bits")
        _hoststep.host_effect("seeding a random generator (manual_seed)")
        self._gen.manual_seed(seed & 0xFFFFFFFFFFFFFFFF)
        return self

    def seed(self) -> int:
        _hoststep.host_effect("seeding a random generator (seed)")
        return self._gen.seed()

    def initial_seed(self) -> int:
        return self._gen.initial_seed()

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor: on cpu (as PyTorch), or on the generator's own device
        where no cpu backend is installed."""
        state = self._gen.get_state().copy()
        if self._device._type == "cpu" or _has_cpu():
            return CR.from_numpy(state)
        return CR.tensor(state, device=self._device)

    def set_state(self, new_state: Tensor) -> "Generator":
        if not isinstance(new_state, Tensor) or new_state._dtype is not D.uint8:
            raise TypeError("set_state expects an ember.ByteTensor (uint8) produced by get_state()")
        _hoststep.host_effect("setting a random generator's state (set_state / set_rng_state)")
        self._gen.set_state(new_state.detach()._host().copy())
        return self

    def __repr__(self):
        return f"<ember.Generator device={self._device}>"


def default_generator(device) -> Generator:
    g = _defaults.get(device)
    if g is None:
        with _lock:
            g = _defaults.get(device)
            if g is None:
                g = Generator(device)
                g._gen.manual_seed(_seed[0])  # (a first use, not a user's reseed: no break in a capture)
                _defaults[device] = g
    return g


def manual_seed(seed: int) -> Generator:
    """Seed the default generators of every device (loaded now or later); returns cpu's (the
    default device's where no cpu backend is installed)."""
    seed = int(seed)
    _hoststep.host_effect("seeding a random generator (manual_seed)")
    _seed[0] = seed & 0xFFFFFFFFFFFFFFFF
    for g in list(_defaults.values()):
        g.manual_seed(seed)
    if _has_cpu():
        return default_generator(_devices.cpu())
    try:
        return default_generator(CR.get_default_device())
    except RuntimeError:  # no cpu backend and no default device set: no generator to return
        return None


def _has_cpu() -> bool:
    _plugins.load()
    return "cpu" in _plugins._by_type


def seed() -> int:
    """Seed every default generator non-deterministically; returns the seed used."""
    s = secrets.randbits(63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator(_devices.cpu()).initial_seed()


def get_rng_state() -> Tensor:
    return default_generator(_devices.cpu()).get_state()


def set_rng_state(state: Tensor) -> None:
    default_generator(_devices.cpu()).set_state(state)



def _gen_for(t: Tensor, generator):
    if generator is None:
        return default_generator(t._device)._gen
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an ember.Generator, got {type(generator).__name__}")
    if generator._device is not t._device and generator._device != t._device:
        raise RuntimeError(f"Expected a '{t._device.type}' device type for generator but found "
                           f"'{generator._device.type}'")
    return generator._gen


_UNIFORM = register_op("uniform_", group="random", differentiable=False)
_NORMAL = register_op("normal_", group="random", differentiable=False)


def _check_float(t, op):
    if t._dtype.category != D._FLOAT:
        raise U.dtype_not_implemented(op, t._dtype, "expected a floating point tensor")


def check_continuous(t, what: str) -> None:
    """PyTorch's refusal of a continuous distribution's in-place sampler on a non-float tensor."""
    if t._dtype.category != D._FLOAT:
        raise RuntimeError(f"{what} distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {U.type_name(t._dtype)}")


def check_positive(v, what: str, op: str, name: str | None = None) -> None:
    """PyTorch's RuntimeError for a distribution parameter that must be > 0 (NaN included)."""
    if not v > 0:
        raise RuntimeError(f"{op} expects {what} > 0.0, but found {name or what}={v}")


def _float_bounds(dt):
    return {D.float16: 65504.0, D.bfloat16: 3.3895313892515355e38, D.float32: 3.4028234663852886e38}.get(
        dt, 1.7976931348623157e308)


@hooked("uniform_")
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples from U[from, to)."""
    _check_float(self, "uniform_")
    hi = _float_bounds(self._dtype)
    for name, v in (("from", from_), ("to", to)):
        if not -hi <= v <= hi:
            raise RuntimeError(f"uniform_: {name} is out of bounds for {self._dtype.name} (got {v})")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    if to - from_ > hi:
        raise RuntimeError(f"uniform_ expects to-from <= the largest {self._dtype.name}, but found to={to} and "
                           f"from={from_} which result in to-from to exceed the limit")
    return _fill(_UNIFORM, self, float(from_), float(to), generator)


def _check_std(std) -> None:
    if not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")


@hooked("normal_")
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples from N(mean, std^2)."""
    _check_float(self, "normal_")
    _check_std(std)
    return _fill(_NORMAL, self, float(mean), float(std), generator)


def _fill(op, t, a, b, generator):
    g = _gen_for(t, generator)
    if t.is_contiguous():
        return W.write_direct(op, t, t._device, (t, a, b, g), (), None)
    tmp = t._device._backend.empty(t._shape, t._dtype, t._device)
    t._device._kernels[op.name](tmp, a, b, g)
    return t.copy_(tmp)


@hooked("rand")
def rand(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    """Samples from U[0, 1)."""
    t = CR._allocate(CR._shape_args(sizes, "rand", size), dtype, device, "rand")
    parts = _parts(t)  # complex: the real and imaginary parts each U[0, 1), as PyTorch
    _check_float(parts, "rand")
    t._device._kernels["uniform_"](parts, 0.0, 1.0, _gen_for(t, generator))
    return CR._finish(t, requires_grad, out)


@hooked("randn")
def randn(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False) -> Tensor:
    """Samples from N(0, 1)."""
    t = CR._allocate(CR._shape_args(sizes, "randn", size), dtype, device, "randn")
    parts = _parts(t)  # complex: the real and imaginary parts each N(0, 1/2), as PyTorch (E|z|^2 = 1)
    _check_float(parts, "randn")
    t._device._kernels["normal_"](parts, 0.0, 1.0 if parts is t else math.sqrt(0.5), _gen_for(t, generator))
    return CR._finish(t, requires_grad, out)


def _parts(t):
    """A new complex tensor's real and imaginary parts as one real view; other tensors themselves."""
    return CX.view_as_real(t) if t._dtype.category == D._COMPLEX else t


def _uniform_float(shape, device, generator, span: float):
    """Uniform [0, 1) samples in a float dtype precise enough to index ``span`` values."""
    dt = D.float32 if span <= 2 ** 24 else D.float64
    dev = device
    if dt is D.float64 and not dev._backend.supports_dtype(D.float64):
        dt = D.float32
    t = dev._backend.empty(shape, dt, dev)
    dev._kernels["uniform_"](t, 0.0, 1.0, generator)
    return t


@hooked("randint")
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
            out=None, layout=None) -> Tensor:
    """Integers uniformly drawn from [low, high) (int64 by default)."""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = CR._shape_args((size,), "randint")
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    _check_random_bounds(low, high, dt)
    dev = CR._resolve_device(device)
    span = high - low
    probe = dev._backend.empty((), D.float32, dev)
    u = _uniform_float(shape, dev, _gen_for(probe, generator), span)
    r = UN.floor(A.mul(u, float(span)))
    r = PW.clamp(r, max=float(span - 1))  # guard against rounding up to span
    r = A.add(r.to(D.int64), low)
    return CR._finish(r.to(dt), requires_grad, out)


def _check_random_bounds(low: int, high: int, dt) -> None:
    """PyTorch's refusal of a [low, high) range the dtype cannot hold."""
    if dt.category == D._FLOAT:
        lo, hi = -_float_bounds(dt), _float_bounds(dt)
    elif dt is D.bool:
        lo, hi = 0, 1
    else:
        lo, hi = D.iinfo(dt).min, D.iinfo(dt).max
    if not lo <= low <= hi:
        raise RuntimeError(f"random_: from is out of bounds for {dt.name} (from={low})")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"random_: to - 1 is out of bounds for {dt.name} (to={high})")


_UNSET = object()


@hooked("random_")
def random_(self: Tensor, from_=_UNSET, to=_UNSET, *, generator=None) -> Tensor:
    """Fill with integers from [from, to) (to defaults to the dtype's range); ``random_(to)``
    alone draws from [0, to), as PyTorch."""
    if to is _UNSET:
        from_, to = (0, None) if from_ is _UNSET else (0, from_)
    elif from_ is _UNSET:
        from_ = 0
    if to is None:
        if self._dtype.category == D._FLOAT:  # integers exactly representable in the dtype
            to = {D.float16: 2 ** 11, D.bfloat16: 2 ** 8, D.float32: 2 ** 24}.get(self._dtype, 2 ** 53)
        elif self._dtype is D.bool:
            to = 2
        else:
            to = D.iinfo(self._dtype).max + 1
    if int(from_) < int(to):
        _check_random_bounds(int(from_), int(to), self._dtype)
    r = randint(from_, to, self._shape, generator=generator, device=self._device)
    return self.copy_(r)


@hooked("randperm")
def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad=False, out=None,
             layout=None, pin_memory=False) -> Tensor:
    """A random permutation of 0..n-1."""
    if n < 0:
        raise RuntimeError(f"randperm: Trying to create tensor with negative dimension {n}: [{n}]")
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    if dt is D.bool:
        raise U.dtype_not_implemented("randperm", dt)
    if dt.category == D._INT and n > 0:
        U.int_in_range(n - 1, dt, "randperm")
    if dt is D.float16 and n > 2049:
        raise RuntimeError(f"randperm: n cannot be greater than 2049 for Half type (got {n})")
    dev = CR._resolve_device(device)
    probe = dev._backend.empty((), D.float32, dev)
    u = _uniform_float((n,), dev, _gen_for(probe, generator), max(n, 2) ** 2)
    idx = IX.argsort(u, stable=True)
    return CR._finish(idx.to(dt), requires_grad, out)


@hooked("rand_like")
def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, generator=None) -> Tensor:
    return rand(input._shape, dtype=input._dtype if dtype is None else dtype,
                device=input._device if device is None else device, requires_grad=requires_grad, generator=generator)


@hooked("randn_like")
def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, generator=None) -> Tensor:
    return randn(input._shape, dtype=input._dtype if dtype is None else dtype,
                 device=input._device if device is None else device, requires_grad=requires_grad, generator=generator)


@hooked("randint_like")
def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, input._shape, dtype=input._dtype if dtype is None else dtype,
                   device=input._device if device is None else device, generator=generator)


@hooked("normal")
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
           out=None) -> Tensor:
    """Samples from N(mean, std^2); mean and std may be tensors (broadcast) or floats."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() with float mean and std needs a size")
        _check_std(std)
        t = randn(*((size,) if isinstance(size, int) else size), generator=generator, dtype=dtype, device=device)
        with_ = A.add(A.mul(t, float(std)), float(mean))
        return CR._finish(with_, requires_grad, out)
    if size is not None:
        raise TypeError("normal(): size is only accepted with float mean and std (the tensors' shapes give it)")
    ref = mean if mt else std
    if st and not bool((std >= 0).all()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not st:
        _check_std(std)
    shape = U.broadcast_shapes(mean._shape if mt else (), std._shape if st else (), "normal")
    z = randn(shape, generator=generator, dtype=ref._dtype, device=ref._device)
    r = A.add(A.mul(z, std), mean)
    return CR._finish(r.detach(), requires_grad, out)


@hooked("bernoulli")
def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """Samples 1 with probability ``input`` (or ``p``), else 0, in input's dtype."""
    probs = input if p is None else p
    if isinstance(probs, Tensor):
        if probs._dtype.category != D._FLOAT:
            raise U.dtype_not_implemented("bernoulli", probs._dtype, "the probabilities must be floating point")
        if not bool(((probs >= 0) & (probs <= 1)).all()):
            raise RuntimeError("bernoulli: all probabilities must be in the interval [0, 1]")
    elif not 0 <= probs <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={probs}")
    dt = input._dtype if input._dtype.category == D._FLOAT else D.get_default_dtype()
    u = rand(input._shape, dtype=dt if dt is not D.float16 and dt is not D.bfloat16 else D.float32,
             device=input._device, generator=generator)
    r = CMP.lt(u, probs.detach() if isinstance(probs, Tensor) else probs).to(input._dtype)
    return CR._finish(r, False, out)


@hooked("bernoulli_")
def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    return self.copy_(bernoulli(self if not isinstance(p, (int, float)) else self, p, generator=generator))


@hooked("multinomial")
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None, out=None) -> Tensor:
    """Indices sampled from the rows of ``input`` (non-negative weights)."""
    if input._dtype.category != D._FLOAT:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{U.type_name(input._dtype)}")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.dim()}")
    n_cat = input._shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if num_samples <= 0:
        raise RuntimeError(f"cannot sample n_sample <= 0 samples, got {num_samples}")
    w = input.detach().to(D.float64 if input._device._backend.supports_dtype(D.float64) else D.float32)
    if bool((w < 0).any()) or not bool(CMP.isfinite(w).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = w if w.dim() == 2 else w.unsqueeze(0)
    if bool((rows.sum(-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if replacement:
        cdf = R.cumsum(rows, -1)
        cdf = A.div(cdf, cdf[:, -1:])
        u = rand((rows._shape[0], num_samples), dtype=cdf._dtype, device=input._device, generator=generator)
        idx = IX.searchsorted(cdf, u, right=True)
        idx = PW.clamp(idx, max=n_cat - 1)
    else:
        # Gumbel top-k: argsort of log(w) + Gumbel noise, without replacement
        u = rand(rows._shape, dtype=rows._dtype, device=input._device, generator=generator)
        u = PW.clamp(u, min=1e-30)
        keys = A.sub(UN.log(rows), UN.log(UN.neg(UN.log(u))))
        keys = PW.where(rows > 0, keys, float("-inf"))
        idx = IX.argsort(keys, dim=-1, descending=True, stable=True)[:, :num_samples]
    if input.dim() == 1:
        idx = idx.squeeze(0)
    return CR._finish(idx.to(D.int64).contiguous(), False, out)


@hooked("poisson")
def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson samples with rates ``input`` (inversion by sequential search; rates should be modest)."""
    _check_float(input, "poisson")
    lam = input.detach().to(D.float64 if input._device._backend.supports_dtype(D.float64) else D.float32)
    if not bool((lam >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    u = rand(lam._shape, dtype=lam._dtype, device=lam._device, generator=generator)
    k = CR.zeros_like(lam)
    p = UN.exp(UN.neg(lam))
    s = p.clone()
    limit = (int(max(10.0, float(lam.max().item()) * 3 + 10 * math.sqrt(float(lam.max().item()) + 1)))
             if lam.numel() else 0)
    for i in range(1, limit + 1):
        more = u > s
        if not bool(more.any()):
            break
        k = PW.where(more, k + 1, k)
        p = A.mul(p, A.div(lam, float(i)))
        s = A.add(s, p)
    return k.to(input._dtype)
