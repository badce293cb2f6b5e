"""From constraints to transforms: ``biject_to(c)`` gives a bijection from unconstrained space
onto ``c`` (for reparameterising samplers that need exact log-Jacobians), ``transform_to(c)`` a
transform onto ``c`` that need not be bijective (for unconstrained optimisation)."""
from __future__ import annotations

from . import constraints
from ._transform_base import (AffineTransform, CorrCholeskyTransform, ExpTransform, LowerCholeskyTransform,
                              PositiveDefiniteTransform, SigmoidTransform, SoftmaxTransform, StickBreakingTransform)
from ._transform_struct import CatTransform, ComposeTransform, IndependentTransform, StackTransform

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes (or objects, meaning their class) to factories
    ``factory(constraint) -> Transform``."""

    def __init__(self):
        self._registry: dict = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Register ``factory`` for ``constraint``; without ``factory``, a decorator."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _real(c):
    return ComposeTransform([])


def _independent_biject(c):
    return IndependentTransform(biject_to(c.base_constraint), c.reinterpreted_batch_ndims)


def _independent_transform(c):
    return IndependentTransform(transform_to(c.base_constraint), c.reinterpreted_batch_ndims)


def _above(c):
    return ComposeTransform([ExpTransform(), AffineTransform(c.lower_bound, 1)])


def _below(c):
    return ComposeTransform([ExpTransform(), AffineTransform(c.upper_bound, -1)])


def _interval(c):
    lo, hi = c.lower_bound, c.upper_bound
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo == 0 and hi == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(lo, hi - lo)])


def _cat(registry):
    return lambda c: CatTransform([registry(x) for x in c.cseq], c.dim, c.lengths)


def _stack(registry):
    return lambda c: StackTransform([registry(x) for x in c.cseq], c.dim)


for _reg in (biject_to, transform_to):
    _reg.register(constraints.real, _real)
    _reg.register(constraints.positive, _above)
    _reg.register(constraints.nonnegative, _above)
    _reg.register(constraints.less_than, _below)
    _reg.register(constraints.interval, _interval)
    _reg.register(constraints.half_open_interval, _interval)
    _reg.register(constraints.cat, _cat(_reg))
    _reg.register(constraints.stack, _stack(_reg))
biject_to.register(constraints.independent, _independent_biject)
transform_to.register(constraints.independent, _independent_transform)
biject_to.register(constraints.simplex, lambda c: StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: LowerCholeskyTransform())
biject_to.register(constraints.corr_cholesky, lambda c: CorrCholeskyTransform())
transform_to.register(constraints.corr_cholesky, lambda c: CorrCholeskyTransform())
transform_to.register(constraints.positive_definite, lambda c: PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite, lambda c: PositiveDefiniteTransform())
