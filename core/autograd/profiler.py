"""``ember.autograd.profiler``: PyTorch's older profiler names, over :mod:`ember.profiler`.
``profile`` records from ``__enter__`` to ``__exit__`` (no schedule); its results are
``function_events``, ``key_averages()``, ``table()``, ``total_average()`` and
``export_chrome_trace``."""
from __future__ import annotations

from ..profiler import ProfilerActivity, record_function
from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler.profiler import _KinetoProfile

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile:
    """``torch.autograd.profiler.profile``: a context manager recording ops, kernels, backward
    nodes and ``record_function`` ranges (``use_device``/``use_cuda`` add the device activity)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled = enabled
        acts = [ProfilerActivity.CPU] if use_cpu else []
        if use_cuda or use_device:
            acts.append(ProfilerActivity.CUDA)
        self._prof = _KinetoProfile(activities=acts, record_shapes=record_shapes, profile_memory=profile_memory,
                                    with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.function_events = None
        self.entered = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._prof.start_trace()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        self._prof.stop_trace()
        self.function_events = self._prof.events()
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by=None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header=None,
              top_level_events_only: bool = False) -> str:
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        self._check_finish()
        return self.function_events.total_average()

    def export_chrome_trace(self, path: str) -> None:
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        self._check_finish()
        return str(self.function_events)


_ = FunctionEvent
