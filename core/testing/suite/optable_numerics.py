"""Op table, numerics beyond the basics (docs/math.md): quantiles, differences and integrals,
covariance, histograms, sets and products, distances, float representation and integer ops,
against numpy float64 references on every layout; gradchecked in float64 where differentiable."""
from __future__ import annotations

import numpy as np

import ember
from ember.testing.helpers import BackendCase as C

F = (ember.float32, ember.float64)
I = (ember.int32, ember.int64)
S2 = (3, 4)
S3 = (2, 3, 4)


def _cdist(a, b, p):
    d = np.abs(a[:, None, :] - b[None, :, :])
    return np.max(d, -1) if p == np.inf else np.sum(d ** p, -1) ** (1.0 / p)


def _renorm(x, p, dim, maxnorm):
    axes = tuple(i for i in range(x.ndim) if i != dim)
    n = np.sum(np.abs(x) ** p, axis=axes, keepdims=True) ** (1.0 / p)
    return x * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


NUMERICS_CASES = [
    C("quantile_dim_q_tensor",
      lambda x: ember.quantile(x, ember.tensor([0.1, 0.5, 0.9], dtype=x.dtype, device=x.device), dim=1),
      lambda x: np.quantile(x, [0.1, 0.5, 0.9], axis=1), [S3], dtypes=F, grad=True),
    C("quantile_all_keepdim", lambda x: ember.quantile(x, 0.3, keepdim=True),
      lambda x: np.quantile(x, 0.3, keepdims=True), [S3], dtypes=F, grad=True),
    C("quantile_lower_higher_midpoint_nearest",
      lambda x: ember.stack([ember.quantile(x, 0.35, dim=-1, interpolation=m)
                             for m in ("lower", "higher", "midpoint", "nearest")]),
      lambda x: np.stack([np.quantile(x, 0.35, axis=-1, method=m) for m in ("lower", "higher", "midpoint", "nearest")]),
      [S3], dtypes=F),
    C("nanquantile", lambda x: ember.nanquantile(ember.where(x > 2, float("nan"), x), 0.5, dim=0),
      lambda x: np.nanquantile(np.where(x > 2, np.nan, x), 0.5, axis=0), [S3], dtypes=F),
    C("diff_n2_prepend", lambda x: ember.diff(x, n=2, dim=1, prepend=x[:, :1] * 0),
      lambda x: np.diff(x, n=2, axis=1, prepend=x[:, :1] * 0), [S3], dtypes=F + I, grad=True),
    C("trapezoid_x", lambda y, x: ember.trapezoid(y, x, dim=0), lambda y, x: np.trapezoid(y, x, axis=0),
      [S2, (3,)], dtypes=F, grad=True),
    C("trapezoid_dx_int", lambda y: ember.trapezoid(y, dx=0.5), lambda y: np.trapezoid(y, dx=0.5), [S2], dtypes=F + I),
    C("cumulative_trapezoid", lambda y: ember.cumulative_trapezoid(y, dim=-1),
      lambda y: np.cumsum((y[..., 1:] + y[..., :-1]) / 2, -1), [S3], dtypes=F, grad=True),
    C("cov_weights", lambda x: ember.cov(x, fweights=ember.tensor([1, 2, 1, 3], device=x.device),
                                         aweights=ember.tensor([0.5, 1.0, 2.0, 1.0], dtype=x.dtype,
                                                                           device=x.device)),
      lambda x: np.cov(x, fweights=[1, 2, 1, 3], aweights=[0.5, 1.0, 2.0, 1.0]), [S2], dtypes=F, grad=True),
    C("corrcoef", ember.corrcoef, np.corrcoef, [S2], dtypes=F, grad=True),
    C("histogram_range_weight", lambda x, w: tuple(ember.histogram(x, 5, range=(-2.0, 2.0), weight=w)),
      lambda x, w: np.histogram(x, 5, range=(-2.0, 2.0), weights=w), [S2, S2], dtypes=F),
    C("histogramdd", lambda x: (ember.histogramdd(x, [2, 3]).hist, *ember.histogramdd(x, [2, 3]).bin_edges),
      lambda x: (np.histogramdd(x, [2, 3])[0], *np.histogramdd(x, [2, 3])[1]), [(6, 2)], dtypes=F,
      layouts_=("contiguous",)),  # equal rows put values on an edge: a tie of the float32 edges
    C("isin", lambda a, b: ember.isin(a, b), lambda a, b: np.isin(a, b), [dict(shape=S2, low=0, high=5),
                                                                          dict(shape=(3,), low=0, high=5)],
      dtypes=I + F),
    C("cartesian_prod", lambda a, b: ember.cartesian_prod(a, b),
      lambda a, b: np.stack(np.meshgrid(a, b, indexing="ij"), -1).reshape(-1, 2), [(3,), (2,)], dtypes=F + I,
      grad=True),
    C("combinations_replacement", lambda x: ember.combinations(x, 2, with_replacement=True),
      lambda x: np.array([[x[i], x[j]] for i in range(4) for j in range(i, 4)]), [(4,)], dtypes=F + I, grad=True),
    C("vander", lambda x: ember.vander(x, N=4), lambda x: np.vander(x, 4), [(3,)], dtypes=F, grad=True),
    C("cdist_p", lambda a, b: ember.stack([ember.cdist(a, b, p=p) for p in (1.0, 2.0, 3.0, float("inf"))]),
      lambda a, b: np.stack([_cdist(a, b, p) for p in (1.0, 2.0, 3.0, np.inf)]), [S2, (2, 4)], dtypes=F, grad=True),
    C("renorm", lambda x: ember.renorm(x, 2, 0, 3.0), lambda x: _renorm(x, 2, 0, 3.0), [S3], dtypes=F, grad=True),
    C("frexp", lambda x: tuple(ember.frexp(x * 1e3)), lambda x: np.frexp(x * 1e3), [S2], dtypes=F),
    C("ldexp", lambda x: ember.ldexp(x, ember.tensor([-3, 0, 5, 60], device=x.device)),
      lambda x: np.ldexp(x, [-3, 0, 5, 60]), [S2], dtypes=F, grad=True),
    C("nextafter", lambda a, b: ember.nextafter(a, b), lambda a, b: np.nextafter(a, b), [S2, S2], dtypes=F),
    C("gcd_lcm", lambda a, b: ember.stack([ember.gcd(a, b), ember.lcm(a, b)]),
      lambda a, b: np.stack([np.gcd(a, b), np.lcm(a, b)]), [dict(shape=S2, low=-20, high=20),
                                                           dict(shape=S2, low=-20, high=20)], dtypes=I),
]
