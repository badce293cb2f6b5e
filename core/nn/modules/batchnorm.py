"""``BatchNorm1d/2d/3d``: batch statistics (updating the running ones) in training, running
statistics in eval; ``momentum=None`` gives the cumulative average; state-dict keys
``weight``, ``bias``, ``running_mean``, ``running_var``, ``num_batches_tracked`` as PyTorch."""
from __future__ import annotations

from ... import _dtype as D
from ...ops import creation as _factory
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        fk = {"device": device, "dtype": dtype}
        for name, wanted in (("weight", affine), ("bias", affine and bias)):
            self.register_parameter(name, Parameter(_factory.empty(num_features, **fk)) if wanted else None)
        stats = {"running_mean": lambda: _factory.zeros(num_features, **fk),
                 "running_var": lambda: _factory.ones(num_features, **fk),
                 "num_batches_tracked": lambda: _factory.tensor(0, dtype=D.int64, device=device)}
        for name, make in stats.items():  # None buffers when statistics are not tracked
            self.register_buffer(name, make() if track_running_stats else None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Mean 0, variance 1 and no batch seen (when statistics are tracked)."""
        if not self.track_running_stats:
            return
        self.running_mean.zero_()
        self.running_var.fill_(1)
        self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   and self.num_batches_tracked.device.type != "meta"
                                   else _factory.tensor(0, dtype=D.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs, assign)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias, bn_training, factor,
                            self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W).

    >>> bn = ember.nn.BatchNorm2d(3)
    >>> sorted(bn.state_dict())
    ['bias', 'num_batches_tracked', 'running_mean', 'running_var', 'weight']
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """In one process, the same as BatchNorm (statistics are not synchronised across processes)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
