"""``ember.onnx``: export a model as ONNX (``export``, PyTorch's signature) by tracing the ops it
runs on example inputs into an ONNX graph (the ``onnx`` package, the ``ember[onnx]`` extra, is
imported when ``export`` runs). docs/onnx.md lists the covered ops and the tracer's limits.

``is_in_onnx_export()`` is True while ``export`` traces a model. ``dynamo_export`` (removed from
PyTorch 2.13) raises ``NotImplementedError``."""
from __future__ import annotations

from . import errors
from ._trace import exporting
from .errors import OnnxExporterError
from .export import ONNXProgram, TrainingMode, export

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "errors", "OnnxExporterError", "ONNXProgram",
           "TrainingMode"]


def is_in_onnx_export() -> bool:
    """True while ``ember.onnx.export`` traces a model."""
    return exporting()


def dynamo_export(model, *model_args, **model_kwargs):
    """Raises ``NotImplementedError``: PyTorch 2.13 has no ``dynamo_export`` either; use ``export``."""
    raise NotImplementedError("ember.onnx.dynamo_export is not supported: use ember.onnx.export(model, args, f), "
                              "which traces the model")
