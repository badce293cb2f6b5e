"""``InstanceNorm1d/2d/3d``: per-sample, per-channel normalisation over the spatial dims."""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from .. import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _nsp = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        n = self._nsp
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.dim()}D input)")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        version = local_metadata.get("version", None)
        if version is None and not self.track_running_stats:
            for name in ("running_mean", "running_var"):
                state_dict.pop(prefix + name, None)  # old checkpoints saved unused running stats
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs, assign)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.dim() == self._nsp + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but "
                                 f"got: {x.shape[1]}.")
            warnings.warn("input's size at dim=1 does not match num_features. You can silence this warning by not "
                          "passing in num_features, which is not used because affine=False", stacklevel=2)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L)."""
    _nsp = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W)."""
    _nsp = 2


class InstanceNorm3d(_InstanceNorm):
    _nsp = 3
