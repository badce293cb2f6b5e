"""``ember.onnx``: importable so that programs that ``import torch.onnx`` run; ember cannot export
ONNX yet, so ``export`` raises ``NotImplementedError`` saying so. Model code that asks
``is_in_onnx_export()`` gets False."""
from __future__ import annotations

__all__ = ["export", "dynamo_export", "is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """False: ember never exports."""
    return False


def export(model, args=(), f=None, **kwargs):
    """Raises ``NotImplementedError``: ONNX export is not supported by ember yet."""
    raise NotImplementedError("ember.onnx.export is not supported yet: ember cannot write ONNX models. Save the "
                              "weights with ember.save(model.state_dict(), f) and export from PyTorch, which loads "
                              "ember's files")


def dynamo_export(model, *model_args, **model_kwargs):
    """Raises ``NotImplementedError``: ONNX export is not supported by ember yet."""
    raise NotImplementedError("ember.onnx.dynamo_export is not supported yet: ember cannot write ONNX models")
