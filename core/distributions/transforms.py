"""ember.distributions.transforms: the public transforms (PyTorch's torch.distributions.transforms)."""
from __future__ import annotations

from ._transform_base import (AbsTransform, AffineTransform, CorrCholeskyTransform,
                              CumulativeDistributionTransform, ExpTransform, LowerCholeskyTransform,
                              PositiveDefiniteTransform, PowerTransform, SigmoidTransform, SoftmaxTransform,
                              SoftplusTransform, StickBreakingTransform, TanhTransform, Transform)
from ._transform_struct import (CatTransform, ComposeTransform, IndependentTransform, ReshapeTransform,
                                StackTransform, identity_transform)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform"]
