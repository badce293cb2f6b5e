"""The runtime: driver errors, the pooled allocator, host copies, programs and their caches,
device discovery and availability (also without pyopencl or without any device)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import pyopencl as cl

import ember
from ember_opencl import runtime


def test_check_turns_driver_errors_into_runtime_errors_named_by_status(cd):
    with pytest.raises(RuntimeError, match="CL_INVALID_BUFFER_SIZE") as e:
        runtime.check(cl.Buffer, cd.ctx, cl.mem_flags.READ_WRITE, 0, what="clCreateBuffer")
    assert isinstance(e.value, runtime.OpenCLError)
    assert e.value.code == -61 and e.value.name == "CL_INVALID_BUFFER_SIZE" and "clCreateBuffer" in str(e.value)
    assert runtime.error_name(-5) == "CL_OUT_OF_RESOURCES"


def test_a_bad_launch_names_the_kernel_and_the_status(cd):
    k = cd.build("__kernel void probe2(__global int* p) { p[get_global_id(0)] = 2; }", "probe2")
    buf = cd.alloc(64)
    with pytest.raises(RuntimeError, match=r"CL_INVALID_WORK_GROUP_SIZE.*probe2|probe2.*CL_INVALID_WORK_GROUP_SIZE"):
        cd.launch(k, (16,), (cd.max_wg * 2,), (buf.cl,))


def test_a_build_error_shows_the_driver_log_and_the_source(cd):
    with pytest.raises(RuntimeError, match="CL_BUILD_PROGRAM_FAILURE") as e:
        cd.build("__kernel void broken(__global int* p) { p[0] = undefined_name; }", "broken")
    assert "undefined_name" in str(e.value)


def test_pool_gives_freed_buffers_back(cd):
    b = cd.alloc(1000)
    handle, before = b.cl.int_ptr, cd.pool.in_use
    del b
    assert cd.pool.in_use == before - runtime._bucket(1000)
    b2 = cd.alloc(990)  # same size class
    assert b2.cl.int_ptr == handle
    stats = cd.memory_stats()
    assert stats["allocated_bytes.all.current"] >= runtime._bucket(990)
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]


def test_pool_keeps_at_most_its_limit(cd):
    old = cd.pool.limit
    cd.pool.limit = 0
    try:
        b = cd.alloc(4096)
        cached = cd.pool.cached
        del b
        assert cd.pool.cached == cached  # released to the driver, not kept
    finally:
        cd.pool.limit = old


def test_empty_cache_releases_pooled_buffers(backend, dev, cd):
    b = cd.alloc(1 << 16)
    del b
    assert cd.pool.cached > 0
    backend.empty_cache(dev)
    assert cd.pool.cached == 0
    b = cd.alloc(1 << 16)
    del b
    backend.empty_cache()  # every device opened so far
    assert cd.pool.cached == 0


def test_too_large_an_allocation_is_refused_with_the_limit(cd):
    with pytest.raises(RuntimeError, match="CL_DEVICE_MAX_MEM_ALLOC_SIZE"):
        cd.alloc(cd.max_alloc * 2)


def test_copyin_copyout_at_offsets(cd):
    b = cd.alloc(64)
    cd.copyin(b, np.arange(16, dtype=np.int32))
    cd.copyin(b, np.array([100, 101], dtype=np.int32), offset=8)
    out = np.empty(4, np.int32)
    cd.copyout(out, b, offset=4)
    assert out.tolist() == [1, 100, 101, 4]
    c = cd.alloc(64)
    cd.copy(c, b, 16, 0, 4)
    cd.copyout(out, c)
    assert out.tolist() == [1, 100, 101, 4]


def test_kernels_are_compiled_once_per_key(cd):
    calls = []

    def make():
        calls.append(1)
        return "__kernel void once(__global int* p) { p[0] = 7; }", "once"
    k1 = cd.kernel(("test", "once"), make)
    k2 = cd.kernel(("test", "once"), make)
    assert k1 is k2 and len(calls) == 1


def test_synchronize_waits_for_queued_work(backend, dev):
    x = ember.ones(1 << 16, device=dev)
    y = (x * 3).sum()
    backend.synchronize(dev)
    backend.synchronize()
    assert y.item() == 3 * (1 << 16)


def test_devices_are_enumerated_over_platforms(backend):
    be = backend
    found = runtime.devices()
    assert be.device_count() == len(found) >= 1
    assert found[0][1].name.strip() in be.device_name(0)
    assert be.availability() == (True, "")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


def test_programs_are_cached_on_disk_and_reused_by_the_next_process(tmp_path):
    code = ("import ember; from ember_opencl import runtime\n"
            "x = ember.arange(10, dtype=ember.float32, device='opencl:0')\n"
            "print((x * 2.5 + 1).tolist()[-1], runtime.stats['source_builds'], runtime.stats['binary_loads'])\n")
    first = _run(code, EMBER_OPENCL_CACHE=str(tmp_path))
    assert first.returncode == 0, first.stderr
    v, src1, bin1 = first.stdout.split()
    assert float(v) == 23.5 and int(src1) >= 1
    assert any(p.suffix == ".bin" for p in tmp_path.iterdir())
    second = _run(code, EMBER_OPENCL_CACHE=str(tmp_path))
    v, src2, bin2 = second.stdout.split()
    assert float(v) == 23.5 and int(src2) == 0 and int(bin2) >= int(src1)


def test_cache_can_be_turned_off(tmp_path):
    code = ("import ember; from ember_opencl import runtime\n"
            "ember.ones(3, device='opencl:0').tolist(); print(runtime.cache_dir())\n")
    r = _run(code, EMBER_OPENCL_CACHE="0")
    assert r.returncode == 0 and r.stdout.strip() == "None"


def test_no_device_is_reported_with_a_reason():
    code = ("import ember\nfrom ember.backend import backend_for\nbe = backend_for('opencl')\n"
            "print(be.availability()); print(be.device_count())\n"
            "try:\n    ember.zeros(2, device='opencl')\nexcept RuntimeError as e:\n    print('refused:', e)\n")
    r = _run(code, POCL_DEVICES="no_such_device_type")
    assert r.returncode == 0, r.stderr
    assert "(False, " in r.stdout and "report no devices" in r.stdout
    assert "refused:" in r.stdout and "0 opencl device" in r.stdout


def test_no_platform_is_reported_with_a_reason():
    code = ("import pyopencl as cl\n"
            "def none(): raise cl.LogicError('clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR')\n"
            "cl.get_platforms = none\n"
            "from ember import cli\ncli.main(['plugins'])\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "device opencl" in r.stdout and "unavailable: no OpenCL platform found" in r.stdout


def test_ember_and_its_plugin_list_work_without_pyopencl():
    code = ("import sys\nclass Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'pyopencl' or name.startswith('pyopencl.'):\n"
            "            raise ImportError('blocked for the test')\n"
            "sys.meta_path.insert(0, Block())\n"
            "import ember\nfrom ember import cli\ncli.main(['plugins'])\n"
            "try:\n    print(ember.ones(2, device='cpu').tolist())\nexcept RuntimeError:\n    print('no cpu')\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "unavailable: pyopencl is not importable" in r.stdout
