"""The von Mises distribution on the circle, sampled by Best and Fisher's wrapped-Cauchy
rejection method (vectorised: rejected elements are redrawn together)."""
from __future__ import annotations

import math

from .. import _dtype as _D
from .. import ops as _ops
from .. import special as _special
from .._tensor import Size
from ..autograd import no_grad
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["VonMises"]

_MAX_ROUNDS = 1000


def _wide(t):
    be = getattr(t.device, "_backend", None)
    return t.to(_D.float64 if be is None or be.supports_dtype(_D.float64) else _D.float32)


class VonMises(Distribution):
    """Density exp(concentration cos(x - loc)) / (2 pi I0(concentration)) on [-pi, pi)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        log_i0 = _special.i0e(k).log() + k  # log I0(k), without overflow
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_i0

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """The circular variance 1 - I1(k) / I0(k)."""
        k = self.concentration
        return 1 - _special.i1e(k) / _special.i0e(k)

    def sample(self, sample_shape=Size()):
        with no_grad():
            shape = self._extended_shape(sample_shape)
            k = _wide(self.concentration).expand(shape)
            tau = 1 + (1 + 4 * k * k).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * k)
            r = (1 + rho * rho) / (2 * rho)
            angle = _ops.zeros_like(k)
            pending = _ops.ones_like(k, dtype=_D.bool)
            for _ in range(_MAX_ROUNDS):
                if not bool(pending.any()):
                    break
                u1, u2, u3 = (_ops.rand_like(k) for _ in range(3))
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                u2 = u2.clamp(min=_D.finfo(k.dtype).tiny)
                ok = (c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)
                theta = (u3 - 0.5).sign() * f.clamp(min=-1.0, max=1.0).acos()
                take = pending & ok
                angle = _ops.where(take, theta, angle)
                pending = pending & ~ok
            tiny = k < 1e-8  # the circle's uniform law
            angle = _ops.where(tiny, (_ops.rand_like(k) * 2 - 1) * math.pi, angle)
            out = angle + _wide(self.loc)
            out = (out + math.pi).remainder(2 * math.pi) - math.pi
            return out.to(self.loc.dtype)
