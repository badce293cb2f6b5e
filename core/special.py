"""``ember.special``: PyTorch's ``torch.special`` namespace.

The functions of this namespace only are ops declared with PyTorch's names (``special_ndtr``,
``special_zeta``...) in :mod:`ember.ops.special_gamma`, :mod:`ember.ops.special_misc` and
:mod:`ember.ops.special_poly`; the others are the top-level ops under their ``torch.special``
names (``gammaln`` is ``lgamma``, ``psi`` is ``digamma``, ``expit`` is ``sigmoid``...).
docs/special.md lists every name with its accuracy.
"""
from __future__ import annotations

from .ops import reduction as _R
from .ops import special_airy as _AI
from .ops import special_bessel as _B
from .ops import special_gamma as _G
from .ops import special_igamma as _IG
from .ops import special_misc as _M
from .ops import special_poly as _P
from .ops import unary as _UN
from .ops.nn import activation as _ACT
from .ops.pointwise import sinc, xlogy

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

# the top-level ops under their torch.special names
erf, erfc, erfinv, exp2, expm1, log1p = _UN.erf, _UN.erfc, _UN.erfinv, _UN.exp2, _UN.expm1, _UN.log1p
round, logit, expit = _UN.round, _UN.logit, _UN.sigmoid  # noqa: A001
gammaln, digamma, psi, polygamma, multigammaln = _G.lgamma, _G.digamma, _G.digamma, _G.polygamma, _G.mvlgamma
logsumexp = _R.logsumexp
softmax, log_softmax = _ACT.softmax, _ACT.log_softmax
i0 = _M.i0
gammainc, gammaincc = _IG.igamma, _IG.igammac

# the ops of torch.special only
zeta = _G.special_zeta
airy_ai = _AI.special_airy_ai
ndtr, ndtri, log_ndtr, erfcx = _M.special_ndtr, _M.special_ndtri, _M.special_log_ndtr, _M.special_erfcx
entr, xlog1py = _M.special_entr, _M.special_xlog1py
i0e, i1, i1e = _M.special_i0e, _M.special_i1, _M.special_i1e
modified_bessel_i0, modified_bessel_i1 = _M.special_modified_bessel_i0, _M.special_modified_bessel_i1
spherical_bessel_j0 = _M.special_spherical_bessel_j0
bessel_j0, bessel_j1, bessel_y0, bessel_y1 = (_B.special_bessel_j0, _B.special_bessel_j1, _B.special_bessel_y0,
                                              _B.special_bessel_y1)
modified_bessel_k0, modified_bessel_k1 = _B.special_modified_bessel_k0, _B.special_modified_bessel_k1
scaled_modified_bessel_k0 = _B.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _B.special_scaled_modified_bessel_k1
chebyshev_polynomial_t = _P.special_chebyshev_polynomial_t
chebyshev_polynomial_u = _P.special_chebyshev_polynomial_u
chebyshev_polynomial_v = _P.special_chebyshev_polynomial_v
chebyshev_polynomial_w = _P.special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _P.special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _P.special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _P.special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _P.special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = _P.special_hermite_polynomial_h
hermite_polynomial_he = _P.special_hermite_polynomial_he
laguerre_polynomial_l = _P.special_laguerre_polynomial_l
legendre_polynomial_p = _P.special_legendre_polynomial_p

