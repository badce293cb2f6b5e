"""ember.profiler: the events recorded for ops, kernels, backward nodes and ranges, the schedule's
step logic (PyTorch's: tests/torch_oracle/test_profiler_oracle.py compares it with torch), the
table, the Chrome trace, and that nothing is recorded or swapped when no profiler runs."""
import gzip
import json
import os
import warnings

import pytest

import ember
from ember.autograd import profiler as legacy
from ember.profiler import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                            tensorboard_trace_handler)
from opencl_probe import opencl_available as _opencl_available


def _names(prof):
    return [e.name for e in prof.events()]


def _one(prof, name):
    evs = [e for e in prof.events() if e.name == name]
    assert evs, f"no {name} event in {_names(prof)}"
    return evs[0]


def test_ops_kernels_and_backward_nodes_are_recorded():
    x = ember.randn(8, 8, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y = ember.mul(x, 2.0)
        z = (y + x).sum()
        z.backward()
    names = _names(prof)
    for n in ("ember::mul", "cpu_numpy::mul", "ember::add", "cpu_numpy::add", "ember::sum", "SumBackward0",
              "AddBackward0", "MulBackward0"):
        assert n in names
    op = _one(prof, "ember::mul")
    kernel = op.cpu_children[0]
    assert kernel.name == "cpu_numpy::mul" and kernel.cpu_parent is op
    assert op.cpu_time_total >= kernel.cpu_time_total > 0
    assert op.self_cpu_time_total == pytest.approx(op.cpu_time_total - kernel.cpu_time_total)
    # the backward node's own ops are its children
    bw = _one(prof, "MulBackward0")
    assert any(c.name.startswith("ember::") for c in bw.cpu_children)
    # events come in start order
    starts = [e.start_us for e in prof.events()]
    assert starts == sorted(starts)


def test_a_composite_op_holds_its_parts():
    a, b = ember.randn(4), ember.randn(4)
    with profile() as prof:
        ember.lerp(a, b, 0.5)
    lerp = _one(prof, "ember::lerp")
    assert {c.name for c in lerp.cpu_children} >= {"ember::sub", "ember::mul"}
    assert lerp.cpu_time_total >= sum(c.cpu_time_total for c in lerp.cpu_children)


def test_record_function_nests_ops_as_context_manager_and_decorator():
    x = ember.ones(3)

    @record_function("my_fn")
    def f(t):
        return t * 3

    with profile() as prof:
        with record_function("outer"):
            f(x)
        ember.neg(x)
    outer, inner = _one(prof, "outer"), _one(prof, "my_fn")
    assert inner.cpu_parent is outer and outer.cpu_parent is None
    assert _one(prof, "ember::mul").cpu_parent is inner
    assert _one(prof, "ember::neg").cpu_parent is None
    assert outer.kind == "user_annotation" and outer.cpu_time_total >= inner.cpu_time_total
    assert f(x).tolist() == [3.0, 3.0, 3.0]  # the decorator keeps the function working outside


def test_nothing_is_recorded_or_swapped_when_not_profiling():
    x = ember.ones(2)
    code = ember.add.__code__
    table = x._device._kernels
    node_apply = ember._graph.OpNode._apply
    with profile() as prof:
        assert ember.add.__code__ is not code and x._device._kernels is not table
        x + x
    n = len(prof.events())
    assert ember.add.__code__ is code and x._device._kernels is table
    assert ember._graph.OpNode._apply is node_apply
    ember.add(x, x)
    with record_function("not recorded"):
        x * x
    assert len(prof.events()) == n
    # the fronts keep their signature and defaults after a profile
    assert ember.add(x, x, alpha=2).tolist() == [3.0, 3.0]


def test_a_second_profiler_at_once_is_refused():
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profile():
                pass


def test_record_shapes_and_group_by_input_shape():
    with profile(record_shapes=True) as prof:
        ember.add(ember.ones(2, 3), ember.ones(2, 3))
        ember.add(ember.ones(4), ember.ones(4))
    assert _one(prof, "ember::add").input_shapes[:2] == [[2, 3], [2, 3]]
    plain = {e.key: e for e in prof.key_averages()}
    assert plain["ember::add"].count == 2
    grouped = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "ember::add"]
    assert len(grouped) == 2 and {str(e.input_shapes[:2]) for e in grouped} == {"[[2, 3], [2, 3]]", "[[4], [4]]"}
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total")
    assert "Input Shapes" in table and "[[2, 3], [2, 3]" in table


def test_profile_memory_counts_the_bytes_of_new_outputs():
    x = ember.ones(8, 8)
    with profile(profile_memory=True) as prof:
        x + x                    # 256 new bytes
        x.view(64)               # a view allocates nothing
    assert _one(prof, "ember::add").cpu_memory_usage == 256
    assert _one(prof, "cpu_numpy::add").self_cpu_memory_usage == 256
    assert _one(prof, "ember::view").cpu_memory_usage == 0
    table = prof.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table and "256 B" in table


def test_table_sorting_columns_and_row_limit():
    x = ember.randn(64, 64)
    with profile() as prof:
        for _ in range(3):
            ember.matmul(x, x)
        ember.neg(x)
    avgs = prof.key_averages()
    table = avgs.table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert col in lines[1]
    assert "Device" not in lines[1] and "Mem" not in lines[1]   # no device activity, no memory profiling
    assert len([ln for ln in lines if ln.strip() and not ln.startswith("-")]) == 1 + 2 + 1  # head, 2 rows, total
    assert lines[-1].startswith("Self CPU time total:")
    for key in ("cpu_time_total", "self_cpu_time_total", "count"):
        rows = avgs.table(sort_by=key).splitlines()[3:-2]
        order = [r.split()[0] for r in rows]
        expected = [e.key for e in sorted(avgs, key=lambda e: getattr(e, key), reverse=True)]
        assert order == expected
    mm = {e.key: e for e in avgs}["ember::matmul"]
    assert mm.count == 3 and mm.cpu_time == pytest.approx(mm.cpu_time_total / 3)
    with pytest.raises(AttributeError):
        avgs.table(sort_by="no_such_column")


def test_chrome_trace_is_valid_json(tmp_path):
    x = ember.randn(4, requires_grad=True)
    with profile(record_shapes=True) as prof:
        with record_function("step"):
            (x * x).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    evs = data["traceEvents"]
    assert len(evs) == len(prof.events())
    for ev in evs:
        assert ev["ph"] == "X" and isinstance(ev["ts"], float) and ev["dur"] >= 0
        assert {"name", "pid", "tid", "cat", "args"} <= set(ev)
    assert {"step", "ember::mul", "MulBackward0"} <= {e["name"] for e in evs}
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    assert json.loads(gzip.decompress(gz.read_bytes()))["traceEvents"] == evs


SCHED = dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
# PyTorch 2.13's actions for SCHED, steps 0..11 (tests/torch_oracle checks them against torch)
EXPECTED = ["NONE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE",
            "NONE", "NONE", "NONE"]


def test_schedule_actions():
    fn = schedule(**SCHED)
    assert [fn(i).name for i in range(12)] == EXPECTED
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError):
        schedule(wait=0, warmup=1, active=0)
    assert [schedule(wait=2, warmup=1, active=1, skip_first_wait=1)(i).name for i in range(4)] == [
        "WARMUP", "RECORD_AND_SAVE", "NONE", "NONE"]


def test_schedule_drives_recording_and_on_trace_ready():
    seen = []

    def ready(p):
        seen.append((p.step_num, sorted({e.name for e in p.events() if e.name.startswith("ProfilerStep#")})))

    x = ember.ones(2)
    with profile(schedule=schedule(**SCHED), on_trace_ready=ready) as prof:
        for _ in range(10):
            x + x
            prof.step()
    # traces are saved at the end of steps 4 and 8 (recording steps 3-4 and 7-8)
    assert seen == [(5, ["ProfilerStep#3", "ProfilerStep#4"]), (9, ["ProfilerStep#7", "ProfilerStep#8"])]
    assert sum(1 for e in prof.events() if e.name == "ember::add") == 2


def test_tensorboard_trace_handler_writes_a_trace(tmp_path):
    with profile(schedule=schedule(wait=0, warmup=1, active=1),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path), worker_name="w0")) as prof:
        for _ in range(2):
            ember.ones(2) * 2
            prof.step()
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w0.") and files[0].endswith(".pt.trace.json")
    assert json.loads((tmp_path / files[0]).read_text())["traceEvents"]


def test_profiler_actions_and_activities_names():
    assert [a.name for a in ProfilerAction] == ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "DEVICE_STOPPED"]
    assert {"CPU", "CUDA"} <= {a.name for a in ProfilerActivity}
    assert ember.profiler.profile is profile
    with pytest.raises(AssertionError, match="not started"):
        profile().events()


def test_legacy_autograd_profiler():
    x = ember.randn(3, requires_grad=True)
    with legacy.profile(record_shapes=True) as prof:
        with legacy.record_function("blk"):
            (x * 2).sum().backward()
    assert {"blk", "ember::mul", "MulBackward0"} <= {e.name for e in prof.function_events}
    assert "ember::mul" in prof.table(sort_by="cpu_time_total")
    assert prof.self_cpu_time_total > 0 and prof.total_average().count == len(prof.function_events)
    off = legacy.profile(enabled=False)
    with off:
        x * 2
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.table()


def test_device_activity_without_an_accelerator_adds_no_device_time():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            ember.ones(3) + 1
    assert all(e.device_time_total == 0 for e in prof.events())
    assert "Device" not in prof.key_averages().table()


@pytest.mark.skipif(not _opencl_available(), reason="needs the opencl backend with pyopencl and an OpenCL device")
def test_opencl_kernels_are_device_timed():
    x = ember.ones(64, device="opencl")
    x + x   # compile the kernel before profiling
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        y = x + x
    k = _one(prof, "opencl::add")
    assert k.device_type == "OPENCL" and k.self_device_time_total > 0
    assert _one(prof, "ember::add").device_time_total == k.self_device_time_total
    assert "Self Device" in prof.key_averages().table(sort_by="self_cuda_time_total")
    assert y.cpu().tolist() == [2.0] * 64
    with profile(activities=[ProfilerActivity.CPU]) as cpu_only:
        x + x
    assert _one(cpu_only, "opencl::add").self_device_time_total == 0


def _forward_for_stack(model, x):
    return model(x).sum()  # the line the linear events' stacks start at


def test_with_stack_records_the_callers_frames(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU())
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        _forward_for_stack(model, ember.randn(2, 4)).backward()
    linear = [e for e in prof.events() if e.name == "ember::linear"]
    assert linear and linear[0].stack[0].endswith(": _forward_for_stack")
    assert f"{__file__}(" in linear[0].stack[0]
    assert any("test_with_stack_records_the_callers_frames" in f for f in linear[0].stack[1:])
    ember_dir = os.path.dirname(ember.__file__)
    assert all(not f.startswith(ember_dir) and "<ember" not in f for e in prof.events() for f in e.stack)
    assert all(not e.stack for e in prof.events() if e.name.endswith("Backward0"))
    rows = prof.key_averages(group_by_stack_n=1)
    linear_rows = [r for r in rows if r.key == "ember::linear"]
    assert len(linear_rows) == 1 and linear_rows[0].stack == linear[0].stack[:1]
    table = rows.table(sort_by="self_cpu_time_total", row_limit=20)
    assert "Source Location" in table and "_forward_for_stack" in table
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path), "self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() and int(line.rsplit(" ", 1)[1]) > 0 for line in lines)
    assert any(line.split(" ")[0].endswith(":__forward_for_stack") for line in lines)  # innermost frame last


def test_export_stacks_needs_with_stack(tmp_path):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        ember.ones(2) + 1
    assert all(not e.stack for e in prof.events())
    with pytest.raises(RuntimeError, match="with_stack=True"):
        prof.export_stacks(str(tmp_path / "s.txt"))
