"""The plugin seam: entry points loaded lazily, plugins registered through fixtures, broken and
blocked plugins reported, misspelled hooks refused, and the CLI."""
import os
import subprocess
import sys
import textwrap

import pytest

import ember
from ember_cpu_numpy.backend import NumpyBackend
from ember import _plugins


def run_py(code, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                          timeout=120)


def test_import_ember_loads_no_plugin():
    r = run_py("""
        import sys, ember
        from ember import _plugins
        print(_plugins._loaded, 'ember_cpu_numpy' in sys.modules, 'ember_cpu_numpy.backend' in sys.modules)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "False"]


def test_backend_module_imported_on_first_use_of_its_device():
    r = run_py("""
        import sys, ember
        from ember import _plugins
        _plugins.load()
        print('ember_cpu_numpy.backend' in sys.modules)
        ember.zeros(2)
        print('ember_cpu_numpy.backend' in sys.modules)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]


class _FakeBackendPlugin:
    @ember.hookimpl
    def ember_register_backends(self, register):
        register("fake", "fakedev", "primitives_backend:PrimitivesBackend", priority=5)


def test_plugin_registered_through_fixture_provides_a_device():
    name = _plugins.register_plugin(_FakeBackendPlugin(), name="fake-plugin")
    try:
        t = ember.ones(3, device="fakedev")
        assert t.device.type == "fakedev" and t.sum().item() == 3
        assert "fakedev" in _plugins.device_types()
    finally:
        _plugins.unregister_plugin(name)
    with pytest.raises(RuntimeError, match="no installed ember backend provides device type 'fakedev'"):
        ember.ones(3, device="fakedev")


def test_unknown_device_lists_backends_and_distribution():
    with pytest.raises(RuntimeError) as e:
        ember.zeros(2, device="opencl") if "opencl" not in _plugins.device_types() else ember.zeros(2, device="nosuch")
    msg = str(e.value)
    assert "installed backends: " in msg and "cpu (cpu_numpy)" in msg
    if "opencl" not in _plugins.device_types():
        assert "Install it with: pip install -e 'backends/opencl[pocl]'" in msg  # ember runs from this checkout


def test_misspelled_hook_fails_loudly():
    class Bad:
        @ember.hookimpl
        def ember_register_backend(self, register):  # missing "s"
            pass
    with pytest.raises(Exception, match="ember_register_backend"):
        name = _plugins.pm.register(Bad(), name="bad-hook")
        try:
            _plugins.pm.check_pending()
        finally:
            _plugins.pm.unregister(name=name)


def _write_dist(tmp_path, name, module_src, ep_value):
    """A fake installed distribution (a .dist-info with an `ember` entry point) on a path."""
    pkg = tmp_path / f"{name}.py"
    pkg.write_text(module_src)
    di = tmp_path / f"{name}-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (di / "entry_points.txt").write_text(f"[ember]\n{name} = {ep_value}\n")
    return tmp_path


def test_broken_plugin_never_breaks_import_and_is_reported(tmp_path):
    _write_dist(tmp_path, "ember_broken", "raise ImportError('this plugin is broken on purpose')\n", "ember_broken")
    env = {"PYTHONPATH": str(tmp_path)}
    r = run_py("""
        import ember
        print(float(ember.ones(2).sum()))
        from ember import _plugins
        print(_plugins.plugins['ember_broken'].error.strip().splitlines()[-1])
    """, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "2.0"
    assert "this plugin is broken on purpose" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ember", "plugins"], capture_output=True, text=True,
                       env={**os.environ, **env}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ember_broken" in r.stdout and "[error]" in r.stdout and "broken on purpose" in r.stdout


def test_plugin_backend_that_fails_to_load_explains_on_use(tmp_path):
    src = textwrap.dedent("""
        import ember
        @ember.hookimpl
        def ember_register_backends(register):
            register("ghost", "ghostdev", "ember_ghostmod_missing:Backend")
    """)
    _write_dist(tmp_path, "ember_ghost", src, "ember_ghost")
    r = run_py("""
        import ember
        try:
            ember.zeros(1, device='ghostdev')
        except RuntimeError as e:
            print('ERR', str(e).splitlines()[0])
    """, {"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "ERR backend 'ghost' for device type 'ghostdev' failed to load" in r.stdout


def test_disable_plugins_blocks_by_name():
    r = run_py("""
        import ember
        from ember import _plugins
        try:
            ember.zeros(1)
        except RuntimeError as e:
            print('blocked' if 'EMBER_DISABLE_PLUGINS: cpu_numpy' in str(e) else e)
        print(_plugins.plugins['cpu_numpy'].blocked)
    """, {"EMBER_DISABLE_PLUGINS": "cpu_numpy"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["blocked", "True"]


def test_core_only_creation_says_what_to_install():
    r = run_py("""
        import ember
        try:
            ember.tensor([1.0])
        except RuntimeError as e:
            print(e)
    """, {"EMBER_DISABLE_PLUGINS": "cpu_numpy"})
    # ember runs from this checkout: the command names its folder (tests/test_packaging.py checks the index form)
    assert "Install it with: pip install -e 'backends/cpu_numpy'" in r.stdout


def test_cli_info_and_plugins():
    script = os.path.join(os.path.dirname(sys.executable), "ember")  # the console script
    r = subprocess.run([script, "info"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cpu" in r.stdout and "cpu_numpy" in r.stdout and "available, 1 device" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ember", "plugins"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cpu_numpy: ember-cpu-numpy 0.1.0 [loaded]" in r.stdout
    assert "hooks: ember_register_backends" in r.stdout
    assert "device cpu: backend cpu_numpy, priority 0, available (1 device)" in r.stdout


def test_kernel_plugin_overrides_a_backend_kernel():
    calls = []

    class FastExp:
        @ember.hookimpl
        def ember_register_kernels(self, backend, register):
            if backend == "cpu_numpy":
                base = NumpyBackend.KERNELS["exp"]

                def exp(x, out=None):
                    calls.append(x.shape)
                    return base(x, out=out)
                register("exp", exp)

    ember.zeros(1)  # cpu loaded before the plugin: the plugin's kernels apply at registration
    be = ember._devices.cpu()._backend
    old = be.kernels["exp"]
    name = _plugins.register_plugin(FastExp(), name="fast-exp")
    try:
        ember.exp(ember.zeros(2, 3))
        assert calls == [(2, 3)]
    finally:
        _plugins.unregister_plugin(name)
        be.kernels["exp"] = old


def test_plugin_registers_an_op_with_meta_decomposition_and_backward():
    def meta(x, scale):
        if not isinstance(scale, float):
            raise TypeError("scaled_square: scale must be a float")
        return x.device, (x, scale), (x,)

    class OpPlugin:
        @ember.hookimpl
        def ember_register_ops(self, register):
            register("scaled_square", meta, decomposition=lambda x, scale: x * x * scale,
                     backward=lambda ctx, g: (g * 2 * ctx.args[0] * ctx.args[1],), method=True)

    name = _plugins.register_plugin(OpPlugin(), name="op-plugin")
    try:
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        y = ember.scaled_square(x, 3.0)
        assert y.tolist() == [3.0, 12.0]
        assert y.grad_fn.name() == "ScaledSquareBackward0"
        y.sum().backward()
        assert x.grad.tolist() == [6.0, 12.0]
        with pytest.raises(TypeError, match="scale must be a float"):
            ember.ops.scaled_square(x, 3)
        # the same declaration as a core op: out=, OPS[name](...), and the Tensor method asked for
        out = ember.empty(2)
        assert ember.scaled_square(x.detach(), 2.0, out=out) is out and out.tolist() == [2.0, 8.0]
        assert ember.ops.OPS["scaled_square"](x.detach(), 1.0).tolist() == [1.0, 4.0]
        assert x.detach().scaled_square(1.0).tolist() == [1.0, 4.0]
    finally:
        _plugins.unregister_plugin(name)
    assert not hasattr(ember, "scaled_square") and not hasattr(ember.Tensor, "scaled_square")
    assert "scaled_square" not in ember.ops.OPS


def test_registered_plugin_context_manager_is_the_public_way_to_register_in_process():
    from ember.testing import registered_plugin

    class Half(ember.optim.SGD):
        pass

    class OptPlugin:
        @ember.hookimpl
        def ember_register_optimizers(self, register):
            register(Half, name="HalfSGD")

    with registered_plugin(OptPlugin(), name="half-sgd") as name:
        assert name == "half-sgd" and ember.optim.HalfSGD is Half
    with pytest.raises(AttributeError, match="HalfSGD"):
        ember.optim.HalfSGD


def test_plugin_op_is_reachable_right_after_import(tmp_path):
    src = textwrap.dedent("""
        import ember
        @ember.hookimpl
        def ember_register_ops(register):
            register("twice_plus_one", impl=lambda x: x * 2 + 1)
    """)
    _write_dist(tmp_path, "ember_twice", src, "ember_twice")
    r = run_py("""
        import ember
        from ember.ops import twice_plus_one
        print(twice_plus_one is ember.twice_plus_one, ember.twice_plus_one(ember.ones(2)).tolist())
        import ember as e2
        print(hasattr(e2, 'no_such_op'), hasattr(e2.ops, 'no_such_op'))
    """, {"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "[3.0,", "3.0]", "False", "False"]
