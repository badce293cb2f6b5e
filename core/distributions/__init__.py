"""ember.distributions: probability distributions with PyTorch's API (torch.distributions).

See docs/distributions.md for the families, how each one samples, and what is left.
"""
from __future__ import annotations

from . import constraints, utils
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .distribution import Distribution, ExponentialFamily

__all__ = ["Cauchy", "Distribution", "Exponential", "ExponentialFamily", "Laplace", "Normal", "Uniform",
           "constraints", "utils"]
