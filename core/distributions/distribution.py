"""The base classes: :class:`Distribution` (shapes, argument and sample validation, the shared
derived quantities) and :class:`ExponentialFamily` (entropy from the log-normaliser)."""
from __future__ import annotations

import warnings

from .._tensor import Size, Tensor
from ..autograd import enable_grad, no_grad
from ..autograd import grad as _grad
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution", "ExponentialFamily"]


def _shown(t) -> str:
    if isinstance(t, Tensor) and t.dim() == 0:
        return str(t.item())
    return str(t)


class Distribution:
    """A family of probability distributions over tensors.

    ``batch_shape`` indexes independent (not identically distributed) distributions,
    ``event_shape`` is the shape of one draw. ``sample(sample_shape)`` returns tensors of shape
    ``sample_shape + batch_shape + event_shape``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument and sample validation on or off for distributions made afterwards."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                checks = self.arg_constraints
            except NotImplementedError:
                checks = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with `validate_args=False` "
                              "to turn off validation.", stacklevel=2)
            for name, constraint in checks.items():
                if constraints.is_dependent(constraint):
                    continue
                if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                    continue  # a parameter given the other way round; its twin is checked
                value = getattr(self, name)
                ok = constraint.check(value)
                if not bool(ok.all()):
                    raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, "
                                     f"but found invalid values:\n{_shown(value)}")
        super().__init__()

    # -- shapes ---------------------------------------------------------------------------------

    @property
    def batch_shape(self) -> Size:
        """The shape over which the parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample, without batching."""
        return self._event_shape

    def _extended_shape(self, sample_shape=Size()) -> Size:
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return type(self).__new__(type(self)) if _instance is None else _instance

    def expand(self, batch_shape, _instance=None):
        """A distribution with the parameters expanded (not copied) to ``batch_shape``."""
        raise NotImplementedError

    def _expand_params(self, cls, batch_shape, _instance, names, keep=()):
        """The common body of ``expand``: each tensor parameter in ``names`` that is set is
        expanded to ``batch_shape`` plus its own trailing dims; the attributes in ``keep`` are
        shared as they are."""
        new = self._get_checked_instance(cls, _instance)
        shape = Size(batch_shape)
        nb = len(self._batch_shape)
        for name in names:
            if name in self.__dict__:
                v = self.__dict__[name]
                new.__dict__[name] = v.expand(tuple(shape) + tuple(v.shape[nb:]))
        for name in keep:
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name]
        Distribution.__init__(new, shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- what subclasses define ----------------------------------------------------------------

    @property
    def arg_constraints(self) -> dict:
        """Parameter name to the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint every sample satisfies."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The square root of the variance."""
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()) -> Tensor:
        """A draw (no gradient); reparameterised families draw with :meth:`rsample`."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        """A draw through which gradients flow to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return self.entropy().exp()

    # -- validation -----------------------------------------------------------------------------

    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        start = len(shape) - len(self._event_shape)
        if Size(shape[start:] if start >= 0 else shape) != self._event_shape or start < 0:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        wanted = tuple(self._batch_shape) + tuple(self._event_shape)
        for a, b in zip(reversed(shape), reversed(wanted)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.size()} vs "
                                 f"{Size(wanted)}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if support is None:
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{_shown(value)}")

    def __repr__(self):
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        parts = []
        for k in names:
            v = self.__dict__[k]
            parts.append(f"{k}: {v.item() if v.numel() == 1 else v.size()}")
        return f"{self.__class__.__name__}({', '.join(parts)})"


def _ndim_sum(t: Tensor, n: int) -> Tensor:
    return t.sum(tuple(range(-n, 0))) if n else t


class ExponentialFamily(Distribution):
    """Densities p(x) = h(x) exp(<theta, T(x)> - A(theta)). A subclass gives its natural
    parameters ``_natural_params``, the log-normaliser ``_log_normalizer(*theta)`` and the
    expected log carrier measure ``_mean_carrier_measure``; the entropy follows from them."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        # H = A(theta) - <theta, grad A(theta)> - E[log h(x)]
        thetas = [p.detach().requires_grad_() for p in self._natural_params]
        with enable_grad():
            a = self._log_normalizer(*thetas)
            grads = _grad(a.sum(), thetas, create_graph=True)
        h = a - self._mean_carrier_measure
        n = len(self._event_shape)
        for th, g in zip(thetas, grads):
            h = h - _ndim_sum(th * g, n)
        return h
