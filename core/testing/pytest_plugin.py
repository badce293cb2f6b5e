"""The pytest plugin of ember's conformance suite (entry point ``pytest11: ember``).

* ``--ember-backend NAME`` (repeatable, or comma-separated) selects the backends the suite and
  any test using the ``device`` fixture run on; by default every installed, available backend.
  A test module may pin its own list with a module attribute ``ember_backends = [...]``.
* ``device`` is parametrized per selected backend (ids are backend names) and yields the
  backend's default device (``cpu``, ``opencl:0``, ``cuda:0``).
* A backend's ``known_failures`` (test-id substring -> reason) mark tests as expected failures.
* ``@pytest.mark.ember_requires(devices=2)`` / ``(cpu=True)`` / ``(accelerator=True)``: a test
  that needs two devices of the backend, a cpu backend besides it, or a device that is not cpu,
  is collected only where that holds (deselected, not skipped, elsewhere).
* At the end, for each backend the suite ran on, a table says which ops run natively, which by
  decomposition, which through the host (numpy, with copies) and which are missing.

The plugin is loaded wherever ember is installed; it does nothing unless a test asks for
``device`` (or ``ember_backend``). So that a pytest run that does not use ember never imports
it, this module imports ember inside its functions (one of the documented exceptions to
module-level imports, see docs/design.md).
"""
from __future__ import annotations

import pytest

_used_backends: dict = {}  # backend name -> its coverage table, taken when first used


def pytest_addoption(parser):
    group = parser.getgroup("ember")
    group.addoption("--ember-backend", action="append", default=[], metavar="NAME",
                    help="backend(s) to run ember's device tests on (default: every available backend)")
    group.addoption("--ember-coverage-table", action="store_true", default=False,
                    help="always print the native/decomposed/missing op table")


def _selected(config) -> list:
    from ember import _plugins
    names = []
    for v in config.getoption("--ember-backend") or []:
        names.extend(n.strip() for n in v.split(",") if n.strip())
    if names:
        return names
    _plugins.load()
    out = []
    for t, specs in sorted(_plugins._by_type.items()):
        spec = specs[0]
        try:
            be = _plugins.backend_for(t)
            if be.availability()[0]:
                out.append(spec.name)
        except RuntimeError:
            continue
    return out


def _device_for_backend(name: str):
    import ember
    from ember import _plugins
    _plugins.load()
    spec = _plugins.backends.get(name)
    if spec is None:
        known = ", ".join(sorted(_plugins.backends)) or "none"
        pytest.fail(f"--ember-backend {name}: no such backend (installed: {known})", pytrace=False)
    be = _plugins.backend_for(spec.device_type)
    if be is not spec.instance:
        pytest.fail(f"backend {name} is shadowed by {be.name} for device type {spec.device_type}", pytrace=False)
    ok, reason = be.availability()
    if not ok:
        pytest.skip(f"backend {name} unavailable: {reason}")
    return ember.device(spec.device_type if spec.device_type == "cpu" else f"{spec.device_type}:0")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames or "ember_backend" in metafunc.fixturenames:
        pinned = getattr(metafunc.module, "ember_backends", None)
        names = list(pinned) if pinned is not None else _selected(metafunc.config)
        if not names:
            names = ["<none>"]
        argname = "ember_backend"
        if argname in metafunc.fixturenames or "device" in metafunc.fixturenames:
            metafunc.parametrize(argname, names, ids=names, scope="function", indirect=True)


@pytest.fixture
def ember_backend(request):
    """The name of the backend under test (parametrized; see ``--ember-backend``)."""
    name = request.param
    if name == "<none>":
        pytest.skip("no ember backend is installed and available")
    return name


@pytest.fixture
def device(ember_backend):
    """The default device of the backend under test. Where no cpu backend is installed (a
    backend's own test environment), it is also ember's default device during the test, so
    ``nn.Linear(2, 3).to(device)`` and friends work there."""
    d = _device_for_backend(ember_backend)
    if ember_backend not in _used_backends:
        _used_backends[ember_backend] = coverage_table(ember_backend)
    from ember.testing import compile_check
    if compile_check.enabled():
        with compile_check.module_calls_checked():
            yield from _device_body(d, ember_backend)
        return
    yield from _device_body(d, ember_backend)


def _device_body(d, ember_backend):
    if d.type == "cpu" or has_cpu_backend():
        yield d
        return
    from ember import _state, set_default_device
    prev = _state.default_device.value
    set_default_device(d)
    try:
        yield d
    finally:
        _state.default_device.value = prev


def has_cpu_backend() -> bool:
    """Whether a backend for device type ``cpu`` is installed and available."""
    from ember import _plugins
    _plugins.load()
    if "cpu" not in _plugins._by_type:
        return False
    try:
        return bool(_plugins.backend_for("cpu").availability()[0])
    except RuntimeError:
        return False


def pytest_configure(config):
    # backends (packages ember_<name>) compute inf/nan silently, as PyTorch does; pytest resets the
    # warning filters a backend installs when it is first imported inside a test, so repeat them here
    config.addinivalue_line("filterwarnings", r"ignore::RuntimeWarning:ember_[a-z0-9_]+\..*")
    config.addinivalue_line(
        "markers", "ember_requires(devices=1, cpu=False, accelerator=False): collect the test only for backends "
        "with at least `devices` devices, (cpu=True) only where a cpu backend is installed, (accelerator=True) only "
        "for a backend whose device type is not cpu; otherwise it is deselected")


def _requirements_met(item, marker) -> bool:
    from ember import _plugins
    need = int(marker.kwargs.get("devices", 1))
    if marker.kwargs.get("cpu") and not has_cpu_backend():
        return False
    spec = _plugins.backends.get(item.callspec.params.get("ember_backend", ""))
    if marker.kwargs.get("accelerator") and (spec is None or spec.device_type == "cpu"):
        return False
    if need <= 1:
        return True
    if spec is None:
        return False
    try:
        be = _plugins.backend_for(spec.device_type)
        return bool(be.availability()[0]) and be.device_count() >= need
    except RuntimeError:
        return False


def pytest_collection_modifyitems(config, items):
    try:
        from ember import _plugins
    except ImportError:  # pragma: no cover
        return
    keep, dropped = [], []
    for item in items:
        m = item.get_closest_marker("ember_requires")
        (keep if m is None or not hasattr(item, "callspec") or _requirements_met(item, m) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    for item in items:
        cs = getattr(item, "callspec", None)
        if cs is None or "ember_backend" not in cs.params:
            continue
        spec = _plugins.backends.get(cs.params["ember_backend"])
        if spec is None:
            continue
        try:
            be = _plugins.backend_for(spec.device_type)
        except RuntimeError:
            continue
        for pattern, reason in getattr(be, "known_failures", {}).items():
            if pattern in item.nodeid:
                item.add_marker(pytest.mark.xfail(reason=f"known failure on {spec.name}: {reason}", strict=False))


def coverage_table(backend_name: str) -> str:
    """Which registered ops run natively on a backend, which by decomposition, which through the
    host (an op's declared numpy path, with copies to and from the device), which not at all
    (composite ops, written in other ops, and views run in the core for every backend)."""
    from ember import _plugins
    from ember.ops import OPS
    from ember.ops.primitives import PRIMITIVES
    _plugins.load()  # plugins load lazily: a fresh process knows no backend before this
    spec = _plugins.backends.get(backend_name)
    if spec is None:
        raise KeyError(f"coverage_table: no backend named {backend_name!r} (installed: "
                       f"{', '.join(sorted(_plugins.backends)) or 'none'})")
    be = _plugins.backend_for(spec.device_type)
    native, decomposed, host, missing, composite, views = [], [], [], [], [], []
    for name, op in sorted(OPS.items()):
        if op.group == "view":
            views.append(name)  # metadata-only, done by the core for every backend
        elif op.composite:
            composite.append(name)
        elif name in be.kernels:
            native.append(name)
        elif op.decomposition is not None:
            decomposed.append(name)
        elif op.host is not None:
            host.append(name)  # computed with numpy through host copies (ember.ops.registry.dispatch)
        else:
            missing.append(name)
    prim_missing = [p for p in PRIMITIVES if p not in be.kernels]
    lines = [f"ember op coverage on backend '{backend_name}' (device type '{spec.device_type}'): "
             f"{len(native)} native, {len(decomposed)} decomposed, {len(host)} host, {len(missing)} missing"]
    lines.append(f"  native:     {', '.join(native)}")
    lines.append(f"  decomposed: {', '.join(decomposed)}")
    lines.append(f"  host (numpy, copied through the host): {', '.join(host) or '-'}")
    lines.append(f"  missing:    {', '.join(missing) or '-'}")
    lines.append(f"  composite (written in other ops, in the core): {', '.join(composite)}")
    lines.append(f"  views (in the core, for every backend): {', '.join(views)}")
    if prim_missing:
        lines.append(f"  PRIMITIVES MISSING (the backend contract requires them): {', '.join(prim_missing)}")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import sys
    cc = sys.modules.get("ember.testing.compile_check")
    if cc is not None and cc.enabled() and cc.stats["compared"]:
        terminalreporter.section("ember.compile check")
        terminalreporter.write_line(cc.summary())
    show = config.getoption("--ember-coverage-table")
    if not _used_backends and not show:
        return
    terminalreporter.section("ember backend coverage")
    for name in sorted(_used_backends) or _selected(config):
        try:
            terminalreporter.write_line(_used_backends.get(name) or coverage_table(name))
        except Exception as e:  # the table must never hide the test results
            terminalreporter.write_line(f"{name}: coverage table unavailable ({e})")
