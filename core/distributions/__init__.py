"""ember.distributions: probability distributions with PyTorch's API (torch.distributions).

See docs/distributions.md for the families, how each one samples, and what is left.
"""
from __future__ import annotations

from . import constraints, transforms, utils
from .circular import VonMises
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, GeneralizedPareto, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .derived import (Gumbel, HalfCauchy, HalfNormal, Kumaraswamy, LogisticNormal,
                      LogNormal, Pareto, RelaxedBernoulli, RelaxedOneHotCategorical, Weibull)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial,
                       OneHotCategorical, OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution, ExponentialFamily
from .gamma_family import Beta, Chi2, Dirichlet, FisherSnedecor, Gamma, InverseGamma, StudentT
from . import kl_cross as _kl_cross  # registers the pairs across families
from .kl import kl_divergence, register_kl
from .lkj import LKJCholesky
from .multivariate import LowRankMultivariateNormal, MultivariateNormal
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform, LowerCholeskyTransform,
                         PositiveDefiniteTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
                         SoftmaxTransform, SoftplusTransform, StackTransform, StickBreakingTransform, TanhTransform,
                         Transform, identity_transform)
from .wishart import Wishart
from .wrappers import Independent, MixtureSameFamily, TransformedDistribution

__all__ = ["AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical",
           "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
           "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
           "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky",
           "Laplace", "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform",
           "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart",
           "biject_to", "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to",
           "transforms", "utils"]
