"""``ember.optim.lr_scheduler``: learning-rate schedules with PyTorch's formulas, calling-order
warnings and state-dict layout.

Call ``scheduler.step()`` after ``optimizer.step()``, once per epoch (per batch for CyclicLR and
OneCycleLR); ``get_last_lr()`` gives the rates just set.
"""
from __future__ import annotations

from ._base import EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler
from ._combine import ChainedScheduler, SequentialLR
from ._cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from ._cyclic import CyclicLR, OneCycleLR
from ._plateau import ReduceLROnPlateau
from ._simple import (ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR, PolynomialLR,
                      StepLR)

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler", "_LRScheduler",
           "EPOCH_DEPRECATION_WARNING"]
