"""``ember.profiler``: PyTorch's ``torch.profiler``. ``profile`` records ember ops (the public
call, ``ember::add``), backend kernels (``cpu_numpy::add``, device-timed on opencl and cuda with
a device activity), backward nodes (``AddBackward0``) and ``record_function`` ranges; the results
are PyTorch's ``events()``, ``key_averages().table(...)`` and ``export_chrome_trace``. Nothing is
checked on the hot path when no profiler records (docs/profiler.md)."""
from __future__ import annotations

from ._events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from .profiler import (ProfilerAction, ProfilerActivity, kineto_available, profile, record_function, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
