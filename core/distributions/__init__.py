"""ember.distributions: probability distributions with PyTorch's API (torch.distributions).

See docs/distributions.md for the families, how each one samples, and what is left.
"""
from __future__ import annotations

from . import constraints, transforms, utils
from .constraint_registry import biject_to, transform_to
from .circular import VonMises
from .continuous_bernoulli import ContinuousBernoulli
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .derived import (ExpRelaxedCategorical, Gumbel, HalfCauchy, HalfNormal, Kumaraswamy, LogisticNormal,
                      LogitRelaxedBernoulli, LogNormal, Pareto, RelaxedBernoulli, RelaxedOneHotCategorical, Weibull)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial,
                       OneHotCategorical, Poisson)
from .distribution import Distribution, ExponentialFamily
from .wrappers import Independent, MixtureSameFamily, TransformedDistribution
from .kl import kl_divergence, register_kl
from .multivariate import LowRankMultivariateNormal, MultivariateNormal
from .gamma_family import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, StudentT

__all__ = ["biject_to", "transform_to", "kl_divergence", "register_kl", "ContinuousBernoulli", "VonMises", "Gumbel", "HalfCauchy", "HalfNormal", "Kumaraswamy", "LogNormal", "LogisticNormal", "Pareto",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "Weibull", "Independent", "MixtureSameFamily", "TransformedDistribution", "LowRankMultivariateNormal", "MultivariateNormal", "Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "StudentT", "Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial", "NegativeBinomial",
           "OneHotCategorical", "Poisson", "Cauchy", "Distribution", "Exponential", "ExponentialFamily", "Laplace", "Normal", "Uniform",
           "constraints", "transforms", "utils"]
