"""Distributions made from other distributions: TransformedDistribution (a base pushed through
transforms), Independent (batch dims read as event dims) and MixtureSameFamily (a categorical
mixture of one batched family)."""
from __future__ import annotations

from .. import ops as _ops
from .._tensor import Size
from ..autograd import no_grad
from . import constraints
from ._transform_base import Transform, sum_rightmost
from ._transform_struct import ComposeTransform
from .discrete import Categorical
from .distribution import Distribution

__all__ = ["Independent", "MixtureSameFamily", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The law of ``transforms`` (applied in order) of a draw of ``base_distribution``."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event = len(base_distribution.event_shape)
        chain = ComposeTransform(self.transforms)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {chain.domain.event_dim}, "
                             f"but got {len(base_shape)}.")
        out_shape = tuple(chain.forward_shape(base_shape))
        wanted_base = tuple(chain.inverse_shape(out_shape))
        if wanted_base != base_shape:
            base_distribution = base_distribution.expand(wanted_base[:len(wanted_base) - base_event])
        extra = chain.domain.event_dim - base_event
        if extra > 0:
            base_distribution = Independent(base_distribution, extra)
        self.base_dist = base_distribution
        event_dim = chain.codomain.event_dim + max(base_event - chain.domain.event_dim, 0)
        cut = len(out_shape) - event_dim
        super().__init__(Size(out_shape[:cut]), Size(out_shape[cut:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        shape = tuple(batch_shape) + tuple(self._event_shape)
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        Distribution.__init__(new, Size(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        sup = self.transforms[-1].codomain
        if len(self._event_shape) > sup.event_dim:
            sup = constraints.independent(sup, len(self._event_shape) - sup.event_dim)
        return sup

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=Size()):
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        dims = len(self._event_shape)
        total = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            dims += t.domain.event_dim - t.codomain.event_dim
            total = total - sum_rightmost(t.log_abs_det_jacobian(x, y), dims - t.domain.event_dim)
            y = x
        return total + sum_rightmost(self.base_dist.log_prob(y), dims - len(self.base_dist.event_shape))

    def _flip(self, value):
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._flip(self.base_dist.cdf(value))

    def icdf(self, value):
        x = self.base_dist.icdf(self._flip(value))
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        return f"{type(self).__name__}()"


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dims read as
    event dims: log-probabilities and entropies are summed over them."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        if n > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {n} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = n + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        super().__init__(Size(shape[:cut]), Size(shape[cut:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Independent, _instance)
        batch = Size(batch_shape)
        inner = tuple(self.base_dist.batch_shape[len(self.base_dist.batch_shape) - self.reinterpreted_batch_ndims:])
        new.base_dist = self.base_dist.expand(tuple(batch) + inner)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        sup = self.base_dist.support
        return constraints.independent(sup, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims \
            else sup

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamily(Distribution):
    """A mixture whose components are the last batch dim of ``component_distribution``,
    weighted by the Categorical ``mixture_distribution``."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of torch.distributions.Distribution")
        mix_batch = mixture_distribution.batch_shape
        comp_batch = component_distribution.batch_shape[:-1]
        for a, b in zip(reversed(mix_batch), reversed(comp_batch)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mix_batch}) is not compatible with "
                                 f"`component_distribution.batch_shape`({comp_batch})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(tuple(batch) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _weights(self):
        """The mixture probabilities with unit dims for the event, against the components."""
        p = self._mixture_distribution.probs
        return p.reshape(tuple(p.shape) + (1,) * self._event_ndims)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        w = self._weights()
        k = -1 - self._event_ndims
        within = (w * self._component_distribution.variance).sum(k)
        between = (w * (self._component_distribution.mean - self._pad(self.mean)).pow(2)).sum(k)
        return within + between

    def cdf(self, x):
        c = self._component_distribution.cdf(self._pad(x))
        return (c * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        lp = self._component_distribution.log_prob(self._pad(x))
        mix = _ops.log_softmax(self._mixture_distribution.logits, -1)
        return (lp + mix).logsumexp(-1)

    def sample(self, sample_shape=Size()):
        with no_grad():
            shape = Size(sample_shape)
            which = self._mixture_distribution.sample(shape)
            draws = self._component_distribution.sample(shape)
            k = -1 - self._event_ndims
            idx = which.reshape(tuple(which.shape) + (1,) * (1 + self._event_ndims))
            idx = idx.expand(tuple(which.shape) + (1,) + tuple(self._event_shape))
            return draws.gather(draws.dim() + k, idx).squeeze(k)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution},\n  {self._component_distribution})")
