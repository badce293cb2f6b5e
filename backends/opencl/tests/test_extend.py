"""ember_opencl.extend, the public API for kernel plugins: the example of its docstring, run as a
plugin kernel for a new op (through ember_register_ops / ember_register_kernels), on strided
and 16-bit inputs."""
import functools
import textwrap

import numpy as np
import pytest

import ember
from ember.testing import registered_plugin

ember_backends = ["opencl"]


@functools.lru_cache(maxsize=None)
def _docstring_example():
    """The kernel of ember_opencl.extend's docstring, run as written there."""
    from ember_opencl import extend
    doc = extend.__doc__
    start = doc.index("::\n\n", doc.index("A kernel in a few lines")) + 4
    end = doc.index("        return out\n", start) + len("        return out\n")
    namespace: dict = {}
    exec(textwrap.dedent(doc[start:end]), namespace)
    return namespace["k_scale"]


def k_scale(x, alpha):
    return _docstring_example()(x, alpha)


def k_scale_positional(x, alpha):  # the docstring's kernel in the positional form (long v[n], m.v[j])
    from ember_opencl import extend as cl
    dev, t = cl.device_of(x), cl.ctype(x.dtype)
    src = (cl.preamble(t) + cl.meta_struct(3) +
           f"__kernel void scale({t.ptr()} o, const {t.ptr()} x, const M m) {{\n"
           f"  long i = get_global_id(0); if (i >= m.v[0]) return;\n"
           f"  {t.store('o', 'i', cl.read_slot(2, t) + ' * ' + t.load('x', 'm.v[1] + i'))};\n}}\n")
    k = dev.kernel(("my_plugin.scale_positional", t.name), lambda: (src, "scale"))
    out = cl.empty(x.shape, x.dtype, x.device)
    n = x.numel()
    cl.launch(dev, k, (cl.round_up(n, 64),), (64,), [out, x],
              [n, x.storage_offset(), cl.scalar_slot(alpha, t)])
    return out


class ScalePlugin:
    calls = 0
    kernel = staticmethod(k_scale)

    @ember.hookimpl
    def ember_register_ops(self, register):
        def meta(x, alpha):  # the dispatch plan: device, the kernel's arguments, autograd's inputs
            return x.device, (x.contiguous(), float(alpha)), (x,)
        register("extend_test_scale", meta, decomposition=lambda x, a: x * a)

    @ember.hookimpl
    def ember_register_kernels(self, backend, register):
        if backend == "opencl":
            def kernel(x, alpha):
                ScalePlugin.calls += 1
                return self.kernel(x, alpha)
            register("extend_test_scale", kernel)


@pytest.mark.parametrize("form", [k_scale, k_scale_positional], ids=["named", "positional"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16, ember.float64])
def test_a_plugin_kernel_through_the_public_helpers(device, dtype, form):
    from ember_opencl import extend as cl
    if dtype is ember.float64 and not cl.device_of(ember.zeros(1, device=device)).fp64:
        pytest.skip("the OpenCL device has no float64 (cl_khr_fp64)")
    plugin = ScalePlugin()
    plugin.kernel = form
    with registered_plugin(plugin, name="extend-test"):
        base = ember.arange(24, dtype=dtype, device=device).reshape(4, 6)
        x = base[1:, ::2]  # a strided view with an offset: the front end makes it contiguous
        before = ScalePlugin.calls
        y = ember.ops.extend_test_scale(x, 0.5)
        assert ScalePlugin.calls == before + 1
        assert y.device == x.device and y.dtype is dtype and y.is_contiguous()
        np.testing.assert_allclose(y.numpy(force=True).astype(np.float64),
                                   0.5 * np.arange(24.0).reshape(4, 6)[1:, ::2])
        assert isinstance(cl.buffer(y), type(cl.buffer(x)))
    assert not hasattr(ember.ops, "extend_test_scale")
