"""The errors of ``ember.onnx.export``, named as ``torch.onnx.errors``' (both are RuntimeErrors)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """An error of the ONNX exporter."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op the model ran has no ONNX mapping (the message names the op and the module that ran
    it), or runs in a way ONNX can't express."""
