"""The profiler's results: :class:`FunctionEvent` (one timed call), :class:`EventList` (what
``prof.events()`` returns), their averages (:class:`FunctionEventAvg`, ``key_averages()``), the
table and the Chrome trace. Times are in microseconds, as PyTorch's; memory in bytes."""
from __future__ import annotations

import json
import os

__all__ = ["DeviceType", "FunctionEvent", "FunctionEventAvg", "EventList"]


class DeviceType:
    """Where an event's time was spent (PyTorch's ``torch.profiler.DeviceType`` names)."""
    CPU = "CPU"
    CUDA = "CUDA"
    OPENCL = "OPENCL"


class FunctionEvent:
    """One timed call: an ember op (``ember::add``), a backend kernel (``cpu_numpy::add``), a
    backward node (``AddBackward0``) or a :class:`~ember.profiler.record_function` range."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, device_type=DeviceType.CPU,
                 device_index=0, kind="op", cpu_memory_usage=0, device_memory_usage=0, device_time=0.0):
        self.id = id
        self.name = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.device_type = device_type
        self.device_index = device_index
        self.kind = kind
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = device_memory_usage
        self.own_device_time = device_time
        self.cpu_children: list = []
        self.cpu_parent = None
        self.count = 1
        self.stack: list = []
        self.flops = 0
        self.is_async = False
        self.is_legacy = False
        self.is_remote = False
        self.overload_name = ""
        self.node_id = -1

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        return self.own_device_time + sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        return self.own_device_time

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    cpu_time = property(lambda self: self.cpu_time_total)
    device_time = property(lambda self: self.device_time_total)
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    time_range = property(lambda self: (self.start_us, self.end_us))

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"cpu_time={_fmt_us(self.cpu_time_total)} start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


_SUMMED = ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
           "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage", "flops")


class FunctionEventAvg:
    """The events of one key (a name, with ``group_by_input_shape`` a name and input shapes),
    summed: totals, and averages per call."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.input_shapes = None
        self.device_type = DeviceType.CPU
        self.stack: list = []
        self.is_async = self.is_legacy = self.is_remote = False
        self.node_id = -1
        self.overload_name = ""
        for f in _SUMMED:
            setattr(self, f, 0)

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.device_type = other.device_type
        for f in _SUMMED:
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.count += other.count
        return self

    __iadd__ = add

    cpu_time = property(lambda self: self.cpu_time_total / max(self.count, 1))
    device_time = property(lambda self: self.device_time_total / max(self.count, 1))
    cuda_time = device_time
    name = property(lambda self: self.key)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_fmt_us(self.self_cpu_time_total)} "
                f"cpu_time={_fmt_us(self.cpu_time)} device_time={_fmt_us(self.device_time)} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of :class:`FunctionEvent` (or :class:`FunctionEventAvg`) with PyTorch's helpers."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False, **kwargs):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """One :class:`FunctionEventAvg` per name (and input shapes, with ``group_by_input_shape``;
        and the innermost ``group_by_stack_n`` frames of the caller's stack, recorded with
        ``with_stack=True``)."""
        stats: dict = {}
        for e in self:
            k = (e.key, str(e.input_shapes)) if group_by_input_shape else e.key
            if group_by_stack_n > 0:
                k = (k, tuple(e.stack[:group_by_stack_n]))
            avg = stats.get(k)
            if avg is None:
                avg = stats[k] = FunctionEventAvg()
                if group_by_stack_n > 0:
                    avg.stack = list(e.stack[:group_by_stack_n])
            avg.add(e)
            if not group_by_input_shape:
                avg.input_shapes = None
        return EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                         with_flops=self._with_flops)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header=None,
              top_level_events_only: bool = False, time_unit=None) -> str:
        """PyTorch's table: one row per entry, sorted by the named attribute, descending
        (``cpu_time_total``, ``self_cpu_time_total``, ``device_time_total`` (``cuda_time_total``),
        ``self_device_time_total``, ``cpu_memory_usage``, ``self_cpu_memory_usage``, ``count``...)."""
        from_table = _table_rows(self, sort_by, row_limit, top_level_events_only)
        return _build_table(self, from_table, max_name_column_width, max_shapes_column_width, header, time_unit,
                            max_src_column_width)

    def __str__(self):
        return self.table()

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write one line per event that has a stack (``with_stack=True``) and a positive
        ``metric``: its frames outermost first, joined by ``;``, then the metric as an integer (the
        collapsed format of flame graph tools, as PyTorch writes it)."""
        attr = _SORT_ALIASES.get(metric, metric)
        clean = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for e in self:
                value = int(getattr(e, attr))
                if e.stack and value > 0:
                    f.write(";".join(frame.translate(clean) for frame in reversed(e.stack)) + f" {value}\n")

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON (``chrome://tracing``, Perfetto): one complete
        ("X") event per call, its thread as ``tid``, device time in its arguments."""
        events = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace: needs the events (prof.events()), not their averages")
            ev = {"ph": "X", "cat": e.kind, "name": e.name, "pid": os.getpid(), "tid": e.thread,
                  "ts": e.start_us, "dur": e.cpu_time_total, "args": {}}
            if e.input_shapes:
                ev["args"]["Input Dims"] = e.input_shapes
            if e.own_device_time:
                ev["args"]["device"] = e.device_type.lower()
                ev["args"]["device time (us)"] = e.own_device_time
            if e.cpu_memory_usage or e.device_memory_usage:
                ev["args"]["bytes"] = e.cpu_memory_usage + e.device_memory_usage
            events.append(ev)
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms", "schemaVersion": 1,
                       "deviceProperties": []}, f)


_SORT_ALIASES = {"cuda_time_total": "device_time_total", "self_cuda_time_total": "self_device_time_total",
                 "cuda_time": "device_time", "cuda_memory_usage": "device_memory_usage",
                 "self_cuda_memory_usage": "self_device_memory_usage", "xpu_time_total": "device_time_total",
                 "self_xpu_time_total": "self_device_time_total"}


def _table_rows(events, sort_by, row_limit, top_level_only):
    rows = list(events)
    if top_level_only:
        rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
    if sort_by is not None:
        attr = _SORT_ALIASES.get(sort_by, sort_by)
        if not rows or not hasattr(rows[0], attr):
            if rows:
                raise AttributeError(f"table(): can't sort by {sort_by!r} (no such event attribute)")
        rows.sort(key=lambda e: getattr(e, attr), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    return rows


def _fmt_us(us: float, unit=None) -> str:
    if unit == "s" or (unit is None and us >= 1e6):
        return f"{us / 1e6:.3f}s"
    if unit == "ms" or (unit is None and us >= 1e3):
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_bytes(n: int) -> str:
    a = abs(n)
    if a >= 1 << 30:
        return f"{n / (1 << 30):.2f} GB"
    if a >= 1 << 20:
        return f"{n / (1 << 20):.2f} MB"
    if a >= 1 << 10:
        return f"{n / (1 << 10):.2f} KB"
    return f"{n} B"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else "..." + text[len(text) - width + 3:]


def _build_table(events, rows, name_w, shapes_w, header, time_unit, src_w=75) -> str:
    has_device = any(e.device_time_total for e in events)
    shapes_w_used = shapes_w if shapes_w < 32 else 32
    has_mem = events._profile_memory or any(e.cpu_memory_usage or e.device_memory_usage for e in events)
    has_shapes = any(e.input_shapes for e in rows)
    has_stack = any(isinstance(e, FunctionEventAvg) and e.stack for e in rows)
    total_self = sum(e.self_cpu_time_total for e in events) or 0.0
    total_dev = sum(e.self_device_time_total for e in events) or 0.0
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device:
        cols += ["Self Device", "Self Device %", "Device total", "Device time avg"]
    if has_mem:
        cols += ["CPU Mem", "Self CPU Mem"] + (["Device Mem", "Self Device Mem"] if has_device else [])
    cols.append("# of Calls")
    name_w = max(min(name_w, max([len(e.key) for e in rows] + [4])), 4)
    widths = [name_w] + [12] * len(cols) + ([shapes_w_used] if has_shapes else [])
    heads = ["Name"] + cols + (["Input Shapes"] if has_shapes else [])
    if has_stack:
        widths.append(src_w)
        heads.append("Source Location")
    sep = "  ".join("-" * w for w in widths)
    out = [header] if header else []
    out += [sep, "  ".join(h.rjust(w) for h, w in zip(heads, widths)), sep]
    for e in rows:
        name = e.key if len(e.key) <= name_w else e.key[:name_w - 3] + "..."
        calls = max(e.count, 1)
        cells = [_pct(e.self_cpu_time_total, total_self), _fmt_us(e.self_cpu_time_total, time_unit),
                 _pct(e.cpu_time_total, total_self), _fmt_us(e.cpu_time_total, time_unit),
                 _fmt_us(e.cpu_time_total / calls, time_unit)]
        if has_device:
            cells += [_fmt_us(e.self_device_time_total, time_unit), _pct(e.self_device_time_total, total_dev),
                      _fmt_us(e.device_time_total, time_unit), _fmt_us(e.device_time_total / calls, time_unit)]
        if has_mem:
            cells += [_fmt_bytes(e.cpu_memory_usage), _fmt_bytes(e.self_cpu_memory_usage)]
            if has_device:
                cells += [_fmt_bytes(e.device_memory_usage), _fmt_bytes(e.self_device_memory_usage)]
        cells.append(str(e.count))
        if has_shapes:
            s = str(e.input_shapes)
            cells.append(s if len(s) <= shapes_w_used else s[:shapes_w_used - 3] + "...")
        frames = list(e.stack) if has_stack else []
        if has_stack:
            cells.append(_clip(frames.pop(0) if frames else "", src_w))
        out.append("  ".join(c.rjust(w) for c, w in zip([name] + cells, widths)))
        for frame in frames:  # the further frames of the row's stack, one line each
            out.append("  ".join([" " * w for w in widths[:-1]] + [_clip(frame, src_w).rjust(src_w)]))
    out.append(sep)
    out.append(f"Self CPU time total: {_fmt_us(total_self, time_unit)}")
    if has_device:
        out.append(f"Self Device time total: {_fmt_us(total_dev, time_unit)}")
    return "\n".join(out) + "\n"
