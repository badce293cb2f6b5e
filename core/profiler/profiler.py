"""``ember.profiler``: PyTorch's ``torch.profiler`` over ember's ops, kernels and backward nodes
(see docs/profiler.md, and :mod:`ember.profiler._record` for how recording costs nothing when
it is off)."""
from __future__ import annotations

import enum
import functools
import gzip
import os
import shutil
import socket
import time
import warnings

from . import _record
from ._events import EventList
from ._record import Recorder

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "record_function"]


class ProfilerActivity(enum.Enum):
    """What to record: ``CPU`` (ops, kernels, backward nodes, ranges, with host time) and the
    device activities (any other member: the kernels of every accelerator backend, opencl and
    cuda, timed on the device by synchronising around them)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does during one step (``schedule`` returns one per step)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities() -> set:
    """The activities ember can record: every member (the device ones time the kernels of the
    accelerator backends)."""
    return set(ProfilerActivity)


def kineto_available() -> bool:
    """PyTorch's Kineto library: ember records without it (False)."""
    return False


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """The step -> :class:`ProfilerAction` function PyTorch's ``torch.profiler.schedule`` makes:
    skip ``skip_first`` steps, then cycles of ``wait`` idle, ``warmup`` warming and ``active``
    recording steps (the last one ``RECORD_AND_SAVE``), ``repeat`` times (0: for ever);
    ``skip_first_wait`` skips the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active
    shift = wait if skip_first_wait else 0  # the first cycle starts as if its wait were over

    def action_at(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        k = step - skip_first
        if k < 0:
            return ProfilerAction.NONE
        done, pos = divmod(k + shift, cycle)
        if repeat and done >= repeat:
            return ProfilerAction.NONE
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if pos == cycle - 1 else ProfilerAction.RECORD

    return action_at


def _schedule_work(prev, cur) -> list:
    """What the profiler does when the schedule's action goes from ``prev`` to ``cur`` (``cur``
    None: the profile ends), as names of its steps: ``prepare`` (start collecting), ``start``
    and ``stop`` (the recorded range), ``ready`` (hand the trace to ``on_trace_ready``), ``warn``
    (a schedule that leaves a warm-up or a recording early)."""
    A = ProfilerAction
    recording = (A.RECORD, A.RECORD_AND_SAVE)
    if prev is A.RECORD_AND_SAVE:  # the cycle is over: its trace goes out, then on as from idle
        return ["stop", "ready"] + _schedule_work(A.NONE, cur)
    if prev is A.NONE:
        return ["prepare"] if cur is A.WARMUP else ["prepare", "start"] if cur in recording else []
    if prev is A.WARMUP:
        if cur is A.WARMUP:
            return []
        if cur in recording:
            return ["start"]
        return (["warn"] if cur is A.NONE else []) + ["start", "stop"]  # warm-up cut short
    if cur in recording:  # prev is RECORD
        return []
    return ["stop", "ready"] if cur is None else ["warn", "stop"]


def _default_schedule(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False):
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name`` as
    ``{worker_name}.{time_ns}.pt.trace.json[.gz]`` (worker: ``hostname_pid``)."""

    def write_trace(prof) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        who = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        target = os.path.join(dir_name, f"{who}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(target + ".gz" if use_gzip else target)  # export_chrome_trace gzips a .gz path

    return write_trace


class record_function:
    """Label a range of code: a context manager or a decorator whose calls appear as events
    named ``name`` (with the ops inside as children) while a profiler records; otherwise it costs
    one check."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._ev = None
        self._rec = None

    def __enter__(self):
        rec = _record._active[0] if _record._active else None
        if rec is not None and rec.cpu:
            self._rec = rec
            self._ev = rec.begin(self.name, "user_annotation")
        return self

    def __exit__(self, *exc):
        if self._ev is not None:
            self._rec.end(self._ev)
            self._ev = self._rec = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper


class _KinetoProfile:
    """Recording, and the results of the last recording (``events``, ``key_averages``,
    ``export_chrome_trace``)."""

    def __init__(self, *, activities=None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        acts = set()
        for a in (activities if activities is not None else (ProfilerActivity.CPU, ProfilerActivity.CUDA)):
            if isinstance(a, dict):
                acts.update(k for k, v in a.items() if v is None or len(v))
            elif isinstance(a, ProfilerActivity):
                acts.add(a)
            else:
                raise TypeError(f"profile(): activities must be ProfilerActivity members, got {a!r}")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.use_device = "cuda" if acts - {ProfilerActivity.CPU} else None
        self.profiler = None       # the current Recorder
        self._events = None

    def _new_recorder(self) -> Recorder:
        rec = Recorder(self.record_shapes, self.profile_memory, self.use_device is not None, self.with_stack)
        rec.cpu = ProfilerActivity.CPU in self.activities
        return rec

    def prepare_trace(self) -> None:
        self.profiler = self._new_recorder()

    def start_trace(self) -> None:
        if self.profiler is None:
            self.prepare_trace()
        self.profiler.start()

    def stop_trace(self) -> None:
        rec = self.profiler
        if rec is None:
            return
        rec.stop()
        evs = rec.events if rec.cpu else [e for e in rec.events if e.own_device_time]
        evs.sort(key=lambda e: (e.start_us, e.id))
        self._events = EventList(evs, use_device=self.use_device, profile_memory=self.profile_memory,
                                 with_flops=self.with_flops)

    def events(self) -> EventList:
        """Every recorded call of the last recording, in start order."""
        if self._events is None:
            raise AssertionError("Expected profiling results (profile is not started or not finished)")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        if path.endswith(".gz"):
            tmp = path[:-3]
            self.events().export_chrome_trace(tmp)
            with open(tmp, "rb") as src, gzip.open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(tmp)
        else:
            self.events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """The recorded stacks in flame graph tools' collapsed format (``with_stack=True``)."""
        if not self.with_stack:
            raise RuntimeError("export_stacks: the profiler recorded no stacks; profile with with_stack=True")
        self.events().export_stacks(path, metric)


class profile(_KinetoProfile):
    """PyTorch's ``torch.profiler.profile``: records ember ops (``ember::add``: the public call),
    backend kernels (``cpu_numpy::add``, ``opencl::add``: device-timed with a device activity),
    backward nodes (``AddBackward0``) and :class:`record_function` ranges. With ``schedule``,
    ``step()`` moves through its actions as PyTorch's does (``ProfilerStep#N`` ranges, and
    ``on_trace_ready`` at the end of each active cycle). ``with_stack=True`` keeps the calling
    python stack of each op, kernel and range (``event.stack``, ``key_averages(group_by_stack_n=)``,
    ``export_stacks``); ``with_flops`` and ``with_modules`` are accepted: ember records no flops or
    module hierarchy."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        if use_cuda is not None:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            activities = set(activities or [ProfilerActivity.CPU])
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _default_schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        if self.current_action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self._step_range = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self) -> None:
        self._follow_schedule(ProfilerAction.NONE, self.current_action)
        self._open_step_range()

    def stop(self) -> None:
        self._close_step_range()
        self._follow_schedule(self.current_action, None)

    def step(self) -> None:
        """Signal that the next step starts (moves through the schedule's actions)."""
        self._close_step_range()
        following = self.schedule(self.step_num + 1)
        if following == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        previous, self.current_action = self.current_action, following
        self.step_num += 1
        self._follow_schedule(previous, following)
        self._open_step_range()

    def _open_step_range(self) -> None:
        if self.record_steps:  # each step of a schedule is a ProfilerStep#N range
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step_range(self) -> None:
        rng, self._step_range = self._step_range, None
        if rng is not None:
            rng.__exit__(None, None, None)

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _follow_schedule(self, prev, cur) -> None:
        for work in _schedule_work(prev, cur):
            if work == "warn":
                warnings.warn(f"Incorrect schedule: {prev.name} followed by {cur.name}", stacklevel=3)
            else:
                {"prepare": self.prepare_trace, "start": self.start_trace, "stop": self.stop_trace,
                 "ready": self._trace_ready}[work]()
