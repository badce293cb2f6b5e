"""ember.distributions: probability distributions with PyTorch's API (torch.distributions).

See docs/distributions.md for the families, how each one samples, and what is left.
"""
from __future__ import annotations

from . import constraints, utils
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial,
                       OneHotCategorical, Poisson)
from .distribution import Distribution, ExponentialFamily

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial", "NegativeBinomial",
           "OneHotCategorical", "Poisson", "Cauchy", "Distribution", "Exponential", "ExponentialFamily", "Laplace", "Normal", "Uniform",
           "constraints", "utils"]
