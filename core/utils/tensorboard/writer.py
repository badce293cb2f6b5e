"""``SummaryWriter``: scalars, histograms, images and text as TensorBoard event files, through
the ``tensorboard`` package's ``EventFileWriter`` and protocol buffers (imported on first use:
an optional package)."""
from __future__ import annotations

import os
import socket
import struct
import time
import zlib
from datetime import datetime

import numpy as np

from ..._tensor import Tensor

__all__ = ["SummaryWriter"]


def _proto():
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
    return event_pb2, summary_pb2, TensorProto, TensorShapeProto, TextPluginData


def _event_file_writer(logdir, max_queue, flush_secs, suffix):
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    return EventFileWriter(logdir, max_queue, flush_secs, suffix)


def _np(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _default_bins() -> list:
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


def _histogram_proto(values: np.ndarray, bins, max_bins, HistogramProto):
    """PyTorch's ``make_histogram``: numpy's histogram trimmed to the occupied buckets."""
    values = values.reshape(-1).astype(float)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins
        if len(counts) % sub:
            counts = np.pad(counts, [[0, sub - len(counts) % sub]])
        counts = counts.reshape(-1, sub).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1], new_limits[-1] = limits[:-1:sub], limits[-1]
        limits = new_limits
    cum = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum, [0, cum[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def _png(hwc: np.ndarray) -> bytes:
    """A PNG of an HxWxC uint8 image (C 1, 3 or 4), written with zlib (no imaging library needed)."""
    h, w, c = hwc.shape
    color = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + hwc[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _image_hwc(img: np.ndarray, dataformats: str) -> np.ndarray:
    """PyTorch's conversion: to HWC, floats scaled by 255, clipped, as uint8."""
    fmt = dataformats.upper()
    if img.ndim != len(fmt) or sorted(fmt) not in (sorted("CHW"), sorted("HW")):
        raise ValueError(f"add_image: an image of shape {img.shape} does not match dataformats={dataformats!r}")
    if fmt == "HW" or fmt == "WH":
        img = img[None] if fmt == "HW" else img.T[None]
        fmt = "CHW"
    img = np.transpose(img, [fmt.index(a) for a in "HWC"])
    if img.shape[2] == 2 or img.shape[2] > 4:
        raise ValueError(f"add_image: {img.shape[2]} channels; expected 1, 3 or 4")
    if img.dtype != np.uint8:
        img = np.clip(img.astype(np.float64) * 255.0, 0, 255).round()
    return np.ascontiguousarray(img.astype(np.uint8))


class SummaryWriter:
    """Write TensorBoard event files into ``log_dir`` (default ``runs/<date>_<host><comment>``), as
    ``torch.utils.tensorboard.SummaryWriter``: ``add_scalar``, ``add_scalars``,
    ``add_histogram``, ``add_image``, ``add_text``, ``flush``, ``close`` (also a context manager)."""

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname()
                                   + comment)
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.default_bins = _default_bins()
        self._pb = _proto()
        self._writers: dict = {}
        self._writer(self.log_dir)

    def _writer(self, logdir: str):
        w = self._writers.get(logdir)
        if w is None:
            w = _event_file_writer(logdir, self.max_queue, self.flush_secs, self.filename_suffix)
            event_pb2 = self._pb[0]
            if self.purge_step is not None:  # TensorBoard hides the events from purge_step on
                w.add_event(event_pb2.Event(step=self.purge_step, file_version="brain.Event:2"))
                w.add_event(event_pb2.Event(step=self.purge_step, session_log=event_pb2.SessionLog(
                    status=event_pb2.SessionLog.START)))
            self._writers[logdir] = w
        return w

    def get_logdir(self) -> str:
        return self.log_dir

    def _add(self, summary, global_step, walltime, logdir=None) -> None:
        event = self._pb[0].Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        self._writer(logdir or self.log_dir).add_event(event)

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """One value of the series ``tag`` at ``global_step``."""
        _, summary_pb2, TensorProto, _, _ = self._pb
        value = _np(scalar_value).squeeze()
        if value.ndim != 0:
            raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {value.size} "
                                 f"and {value.ndim} dimensions.")
        v = float(value)
        if new_style:
            tp = TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision else \
                TensorProto(float_val=[v], dtype="DT_FLOAT")
            meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
                plugin_name="scalars"))
            val = summary_pb2.Summary.Value(tag=tag, tensor=tp, metadata=meta)
        else:
            val = summary_pb2.Summary.Value(tag=tag, simple_value=v)
        self._add(summary_pb2.Summary(value=[val]), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime=None) -> None:
        """Several series on one chart: each goes to the sub-directory ``<main_tag>_<tag>``."""
        summary_pb2 = self._pb[1]
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            logdir = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            val = summary_pb2.Summary.Value(tag=main_tag, simple_value=float(_np(value).squeeze()))
            self._add(summary_pb2.Summary(value=[val]), global_step, walltime, logdir)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """The distribution of ``values`` (``bins``: ``"tensorflow"``, a numpy bins spec or count)."""
        summary_pb2 = self._pb[1]
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        histo = _histogram_proto(_np(values), bins, max_bins, summary_pb2.HistogramProto)
        self._add(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, histo=histo)]), global_step,
                  walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "CHW") -> None:
        """An image: floats in [0, 1] or uint8 in [0, 255], laid out as ``dataformats``."""
        summary_pb2 = self._pb[1]
        hwc = _image_hwc(_np(img_tensor), dataformats)
        image = summary_pb2.Summary.Image(height=hwc.shape[0], width=hwc.shape[1], colorspace=hwc.shape[2],
                                          encoded_image_string=_png(hwc))
        self._add(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image)]), global_step,
                  walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Text (markdown) under ``<tag>/text_summary``, for TensorBoard's text plugin."""
        _, summary_pb2, TensorProto, TensorShapeProto, TextPluginData = self._pb
        meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        val = summary_pb2.Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)
        self._add(summary_pb2.Summary(value=[val]), global_step, walltime)

    def flush(self) -> None:
        """Write the pending events to disk."""
        for w in self._writers.values():
            w.flush()

    def close(self) -> None:
        """Flush and close every event file."""
        for w in self._writers.values():
            w.flush()
            w.close()
        self._writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
