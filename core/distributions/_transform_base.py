"""The Transform protocol (call, inverse, log |det J|, shapes, caching) and the transforms that
act element by element or on one trailing vector or matrix."""
from __future__ import annotations

import math
from numbers import Number

from .. import _dtype as _D
from .. import linalg as _linalg
from .. import ops as _ops
from .._tensor import Tensor
from ..nn import functional as _F
from . import constraints
from .utils import tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["AbsTransform", "AffineTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "ExpTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "PowerTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "sum_rightmost"]


def sum_rightmost(t, n: int):
    """``t`` summed over its last ``n`` dims (a number is returned as is)."""
    if n <= 0 or not isinstance(t, Tensor):
        return t
    return t.reshape(tuple(t.shape[:t.dim() - n]) + (-1,)).sum(-1)


class Transform:
    """An invertible (or at least computable) map between two constrained spaces.

    Subclasses define ``domain``, ``codomain``, ``_call`` and, where they can, ``_inverse``,
    ``log_abs_det_jacobian(x, y)``, ``sign``, ``forward_shape``/``inverse_shape``. With
    ``cache_size=1`` the last (x, y) pair is remembered, so that ``t.inv(t(x))`` returns ``x``
    exactly.
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached = None
        super().__init__()

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (``t.inv.inv is t``)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        """+1 or -1: whether the (scalar, monotone) map increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        if self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        if self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__ + "()"

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, made by :attr:`Transform.inv`."""

    def __init__(self, transform: Transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class _Parameterless(Transform):
    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = object.__hash__


class ExpTransform(_Parameterless):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(_Parameterless):
    """y = 1 / (1 + exp(-x))."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        eps = _D.finfo(x.dtype).eps
        return x.sigmoid().clamp(min=eps, max=1 - eps)

    def _inverse(self, y):
        eps = _D.finfo(y.dtype).eps
        y = y.clamp(min=eps, max=1 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -_F.softplus(-x) - _F.softplus(x)


class SoftplusTransform(_Parameterless):
    """y = log(1 + exp(x))."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return _F.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -_F.softplus(-x)


class TanhTransform(_Parameterless):
    """y = tanh(x)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - _F.softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """y = |x| (not bijective: the inverse picks the non-negative root)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x, acting on events of ``event_dim`` dims."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real,
                                                                                      self._event_dim)

    @property
    def codomain(self):
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, Number) and isinstance(b, Number):
                if a != b:
                    return False
            elif not bool((_ops.as_tensor(a) == _ops.as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, Number):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, Number):
            out = _ops.full_like(x, math.log(abs(scale)))
        else:
            out = scale.abs().log()
        if self._event_dim:
            n = self._event_dim
            shape = tuple(out.shape[:out.dim() - n]) + (-1,)
            out = out.reshape(shape).sum(-1)
            return out.expand(tuple(x.shape[:x.dim() - n])) if out.dim() < x.dim() - n else out
        return out.expand(x.shape)

    def forward_shape(self, shape):
        return tuple(_ops.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                           tuple(getattr(self.scale, "shape", ()))))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = (exponent if isinstance(exponent, Tensor) else _ops.tensor(float(exponent)),)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    @property
    def sign(self):
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tuple(_ops.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SoftmaxTransform(_Parameterless):
    """y = softmax(x) over the last dim (not bijective: the inverse is log y)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        shifted = x - x.max(-1, keepdim=True)[0]
        e = shifted.exp()
        return e / e.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class StickBreakingTransform(_Parameterless):
    """R^(K-1) onto the K-simplex: piece i takes the fraction sigmoid(x_i - log(K-1-i)) of what
    is left (the offsets map x = 0 to the uniform vector)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _offsets(x):
        k1 = x.shape[-1]
        return (k1 - _ops.arange(k1, dtype=x.dtype, device=x.device)).log()

    def _call(self, x):
        z = (x - self._offsets(x)).sigmoid()
        keep = (1 - z).cumprod(-1)
        head = z * _ops.cat([_ops.ones_like(keep[..., :1]), keep[..., :-1]], -1)
        return _ops.cat([head, keep[..., -1:]], -1)

    def _inverse(self, y):
        head = y[..., :-1]
        left = 1 - head.cumsum(-1) + head  # 1 - sum_{j < i} y_j
        eps = _D.finfo(y.dtype).tiny
        z = (head / left.clamp(min=eps)).clamp(min=eps)
        return z.log() - (-z).log1p() + self._offsets(head)

    def log_abs_det_jacobian(self, x, y):
        # sum_i log y_i + log(1 - z_i), z_i = sigmoid(x_i - offset_i)
        u = x - self._offsets(x)
        log_z = -_F.softplus(-u)
        log_1mz = -_F.softplus(u)
        before = log_1mz.cumsum(-1) - log_1mz
        return (log_z + before + log_1mz).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(_Parameterless):
    """Square matrices to lower-triangular ones with a positive diagonal: the strict lower
    triangle is kept, the diagonal exponentiated."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + _ops.diag_embed(_ops.diagonal(x, 0, -2, -1).exp())

    def _inverse(self, y):
        return y.tril(-1) + _ops.diag_embed(_ops.diagonal(y, 0, -2, -1).log())


class PositiveDefiniteTransform(_Parameterless):
    """Square matrices to positive-definite ones: L L^T of the lower-Cholesky transform."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y):
        return LowerCholeskyTransform()._inverse(_linalg.cholesky(y))


class CumulativeDistributionTransform(Transform):
    """y = F(x), the CDF of a univariate ``distribution``."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


class CorrCholeskyTransform(_Parameterless):
    """Vectors of D(D-1)/2 reals to Cholesky factors of D x D correlation matrices: tanh gives
    partial correlations z (filled into the strict lower triangle row by row), and row i takes
    L_ij = z_ij sqrt(prod_{k<j} (1 - z_ik^2)), its diagonal what is left of the unit norm."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    @staticmethod
    def _left(z):
        """prod_{k<j} (1 - z_ik^2) (the squared norm a row has left before column j)."""
        keep = 1 - z.pow(2)
        return _ops.cat([_ops.ones_like(keep[..., :1]), keep[..., :-1]], -1).cumprod(-1)

    def _call(self, x):
        z = vec_to_tril_matrix(x.tanh(), diag=-1)
        z = z + _ops.eye(z.shape[-1], dtype=z.dtype, device=z.device)
        return z * self._left(z).sqrt()

    def _inverse(self, y):
        # the squared norm left before column j is 1 - sum_{k<j} L_ik^2
        sq = y.pow(2)
        before = sq.cumsum(-1) - sq
        left = (1 - before).clamp(min=_D.finfo(y.dtype).tiny)
        z = tril_matrix_to_vec(y / left.sqrt(), diag=-1)
        eps = _D.finfo(y.dtype).eps
        return z.clamp(min=-1 + eps, max=1 - eps).atanh()

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        z = vec_to_tril_matrix(x.tanh(), diag=-1)
        left = tril_matrix_to_vec(self._left(z), diag=-1)
        tanh_part = 2.0 * (math.log(2.0) - x - _F.softplus(-2.0 * x))  # log(1 - tanh(x)^2)
        return (tanh_part + 0.5 * left.log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((1 + (1 + 8 * n) ** 0.5) / 2)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)
