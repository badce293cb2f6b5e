"""The plugin manager: entry points of group ``ember``, loaded once, on first need.

``import ember`` loads nothing. The first call that needs a plugin (a tensor on some device, an
unknown ``ember.nn``/``ember.optim`` name, ``ember plugins``) calls :func:`load`, which imports
every entry point not blocked by ``EMBER_DISABLE_PLUGINS``, keeps the error of any that fails,
checks hook names (``check_pending``) and asks every plugin to register. A backend's module is
imported only when its device is first used (:func:`backend_for`).
"""
from __future__ import annotations

import importlib
import os
import sys
import threading
import traceback
from dataclasses import dataclass, field
from importlib import metadata

import pluggy

from . import _devices, _state, hookspecs
from ._version import PLUGIN_API_VERSION, __version__

pm = pluggy.PluginManager("ember")
pm.add_hookspecs(hookspecs)

# the distribution that provides each well-known device type, for "how to install" errors, and its
# folder and extra in a checkout of the repository
KNOWN_DISTRIBUTIONS = {"cpu": "ember-cpu-numpy", "cuda": "ember-cuda-cupy", "opencl": "ember-opencl"}
_CHECKOUT_FOLDERS = {"cpu": ("backends/cpu_numpy", ""), "cuda": ("backends/cuda_cupy", "[cuda12]"),
                     "opencl": ("backends/opencl", "[pocl]")}


def checkout_root() -> str | None:
    """The repository checkout this ember runs from (an editable install or PYTHONPATH), or None
    for an installed package: the folder above the package that holds ``backends/``."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.isdir(os.path.join(root, "backends")):
        return root
    return None


def install_command(device_type: str) -> str:
    """The pip command that installs the backend of a well-known device type: the checkout's
    folder when ember runs from a checkout (the packages may not be on any index), else the
    package's name on the index."""
    dist = KNOWN_DISTRIBUTIONS[device_type]
    folder, extra = _CHECKOUT_FOLDERS[device_type]
    root = checkout_root()
    if root is None:
        return f"pip install '{dist}{extra}'" if extra else f"pip install {dist}"
    path = os.path.join(root, folder)
    rel = os.path.relpath(path)
    return f"pip install -e '{rel if not rel.startswith('..') else path}{extra}'"


@dataclass
class PluginInfo:
    name: str
    value: str
    distribution: str = ""
    version: str = ""
    module: object = None
    error: str | None = None  # traceback text when the import failed
    blocked: bool = False
    hooks: list = field(default_factory=list)


@dataclass
class BackendSpec:
    name: str
    device_type: str
    loader: str
    priority: int = 0
    dtypes: tuple | None = None
    description: str = ""
    plugin: str = ""
    instance: object = None
    error: str | None = None  # why loading the class failed
    refused: bool = False  # error is the refusal of an incompatible backend (plugin API version)


_lock = threading.RLock()
_loaded = False
plugins: dict[str, PluginInfo] = {}
backends: dict[str, BackendSpec] = {}          # by backend name
_by_type: dict[str, list[BackendSpec]] = {}    # device type -> specs, best first
collectives: dict[str, dict] = {}
_kernel_plugins_applied: set = set()
_current_plugin = [""]


class _Registrars:
    """What the layers above the plugin manager contribute to registration, set when they are
    imported (:mod:`ember._registry_hooks`): the ``register`` callable of
    ``ember_register_ops``, callbacks run after each round of registration hooks, and callbacks
    run with a plugin's name when it is unregistered."""

    def __init__(self):
        self.ops = None
        self.after_register: list = []
        self.on_unregister: list = []

    def register_ops(self, *args, **kwargs):
        if self.ops is None:  # pragma: no cover - import ember sets it
            raise RuntimeError("ember_register_ops: ember's op registry is not loaded (import ember first)")
        return self.ops(*args, **kwargs)

    def registered(self) -> None:
        for f in self.after_register:
            f()


registrars = _Registrars()


def _register_backend(name: str, device_type: str, loader: str, priority: int = 0, dtypes=None,
                      description: str = "") -> None:
    if not isinstance(loader, str) or ":" not in loader:
        raise ValueError(f"backend {name!r}: loader must be a 'pkg.module:Class' string, got {loader!r}")
    spec = BackendSpec(name, device_type, loader, priority,
                       tuple(dtypes) if dtypes is not None else None, description, _current_plugin[0])
    old = backends.get(name)
    if old is not None and old.instance is not None:
        raise RuntimeError(f"backend {name!r} is already registered and loaded")
    backends[name] = spec
    lst = [s for s in _by_type.get(device_type, []) if s.name != name]
    lst.append(spec)
    lst.sort(key=lambda s: -s.priority)
    _by_type[device_type] = lst


def _register_collective(name: str, loader: str, device_types) -> None:
    collectives[name] = {"loader": loader, "device_types": tuple(device_types), "plugin": _current_plugin[0]}


def _blocked() -> set:
    return {s.strip() for s in os.environ.get("EMBER_DISABLE_PLUGINS", "").split(",") if s.strip()}


# built-in parts of ember, loaded like entry points so that they register through the same hooks
BUILTIN_PLUGINS = (metadata.EntryPoint("mpi", "ember.distributed._plugin", "ember"),)


def _entry_points():
    try:
        eps = metadata.entry_points(group="ember")
    except TypeError:  # pragma: no cover - python < 3.10
        eps = metadata.entry_points().get("ember", [])
    return list(BUILTIN_PLUGINS) + list(eps)


def load() -> None:
    """Import and register every plugin once (safe to call often; cheap after the first)."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        blocked = _blocked()
        seen = set()
        for ep in _entry_points():
            if ep.name in seen:
                continue
            seen.add(ep.name)
            dist = getattr(ep, "dist", None)
            info = PluginInfo(ep.name, ep.value, getattr(dist, "name", "") or "", getattr(dist, "version", "") or "")
            if ep in BUILTIN_PLUGINS:
                info.distribution, info.version = "ember (built in)", __version__
            plugins[ep.name] = info
            if ep.name in blocked:
                info.blocked = True
                continue
            try:
                mod = ep.load()
                pm.register(mod, name=ep.name)
                info.module = mod
            except Exception:  # a broken plugin never breaks `import ember`
                info.error = traceback.format_exc()
        pm.check_pending()
        _loaded = True
        _run_registration_hooks()


def _hook_names(plugin) -> list:
    return sorted(impl.name for impl in pm.get_hookcallers(plugin) or [])


def _call_each(hookname: str, **kwargs) -> None:
    """Call one hook on every registered plugin separately, so one plugin's failure is kept
    against it instead of hiding the others."""
    caller = getattr(pm.hook, hookname)
    for impl in caller.get_hookimpls():
        _current_plugin[0] = impl.plugin_name
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames})
        except Exception:
            info = plugins.get(impl.plugin_name)
            text = f"{hookname} failed:\n" + traceback.format_exc()
            if info is not None:
                info.error = (info.error or "") + text
            else:  # registered programmatically (tests): surface loudly
                raise
        finally:
            _current_plugin[0] = ""


def _run_registration_hooks() -> None:
    for info in plugins.values():
        if info.module is not None:
            info.hooks = _hook_names(info.module)
    _call_each("ember_register_backends", register=_register_backend)
    _call_each("ember_register_ops", register=registrars.register_ops)
    _call_each("ember_register_collectives", register=_register_collective)
    registrars.registered()


def register_plugin(obj, name: str | None = None) -> str:
    """Register a plugin object directly (tests, notebooks): its hooks run at once.

    Returns the name to pass to :func:`unregister_plugin`.
    """
    load()
    with _lock:
        name = pm.register(obj, name=name)
        plugins[name] = PluginInfo(name, repr(obj), module=obj, hooks=_hook_names(obj))
        _current_plugin[0] = name
        try:
            for hook, reg in (("ember_register_backends", _register_backend),
                              ("ember_register_ops", registrars.register_ops),
                              ("ember_register_collectives", _register_collective)):
                for impl in getattr(pm.hook, hook).get_hookimpls():
                    if impl.plugin is obj:
                        impl.function(register=reg)
            registrars.registered()
            # kernels for backends already loaded
            for spec in backends.values():
                if spec.instance is not None:
                    for impl in pm.hook.ember_register_kernels.get_hookimpls():
                        if impl.plugin is obj:
                            impl.function(backend=spec.name, register=spec.instance.register_kernel)
        finally:
            _current_plugin[0] = ""
    return name


def unregister_plugin(name: str) -> None:
    """Undo :func:`register_plugin`: the plugin's backends, ops and names are removed."""
    with _lock:
        obj = pm.unregister(name=name)
        plugins.pop(name, None)
        for bname in [b for b, s in backends.items() if s.plugin == name]:
            spec = backends.pop(bname)
            _by_type[spec.device_type] = [s for s in _by_type.get(spec.device_type, []) if s is not spec]
            if not _by_type[spec.device_type]:
                del _by_type[spec.device_type]
            _forget_devices(spec.device_type)
        for cname in [c for c, d in collectives.items() if d["plugin"] == name]:
            del collectives[cname]
        for f in registrars.on_unregister:
            f(name)
        del obj


def _forget_devices(device_type: str) -> None:
    _devices.forget(device_type)


def _import_object(loader: str):
    mod, _, attr = loader.partition(":")
    obj = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def backend_spec(device_type: str) -> BackendSpec:
    """The chosen (highest-priority) backend spec for a device type, or a RuntimeError saying
    which backends are installed and what would provide the missing one."""
    load()
    lst = _by_type.get(device_type)
    if not lst:
        raise RuntimeError(_missing_device_message(device_type))
    return lst[0]


def backend_for(device_type: str):
    """The loaded backend instance serving ``device_type`` (imports its module on first use)."""
    spec = backend_spec(device_type)
    if spec.instance is not None:
        return spec.instance
    with _lock:
        if spec.instance is not None:
            return spec.instance
        if spec.error is not None:
            if spec.refused:
                raise RuntimeError(spec.error)
            raise RuntimeError(f"backend '{spec.name}' for device type '{device_type}' failed to load:\n{spec.error}")
        try:
            cls = _import_object(spec.loader)
            refusal = _api_mismatch(spec, cls)
            inst = None if refusal else cls()
        except Exception:
            spec.error = traceback.format_exc()
            raise RuntimeError(
                f"backend '{spec.name}' for device type '{device_type}' failed to load "
                f"(plugin '{spec.plugin}', loader {spec.loader}):\n{spec.error}") from None
        if refusal:
            spec.error, spec.refused = refusal, True
            raise RuntimeError(refusal)
        inst.name = spec.name
        inst.device_type = device_type
        spec.instance = inst
        if _state.threads.n is not None:
            inst.set_num_threads(_state.threads.n)
        for impl in pm.hook.ember_register_kernels.get_hookimpls():
            _current_plugin[0] = impl.plugin_name
            try:
                impl.function(backend=spec.name, register=inst.register_kernel)
            except Exception:
                info = plugins.get(impl.plugin_name)
                if info is None:
                    raise
                info.error = (info.error or "") + "ember_register_kernels failed:\n" + traceback.format_exc()
            finally:
                _current_plugin[0] = ""
        return inst


def _api_mismatch(spec: BackendSpec, cls) -> str:
    """Why a backend class can't be loaded by this ember ('' when it can): it declares a plugin
    API version (``plugin_api_version``) other than :data:`PLUGIN_API_VERSION`."""
    declared = getattr(cls, "plugin_api_version", None)
    if declared is None or declared == PLUGIN_API_VERSION:
        return ""
    dist = plugins[spec.plugin].distribution if spec.plugin in plugins else ""
    who = f"{dist} {plugins[spec.plugin].version}".strip() if dist else f"plugin '{spec.plugin}'"
    fix = (f"upgrade ember (pip install -U ember) or install a release of {dist or 'the backend'} "
           f"written for plugin API {PLUGIN_API_VERSION}" if declared > PLUGIN_API_VERSION
           else f"upgrade the backend (pip install -U {dist})" if dist else "upgrade the backend")
    return (f"incompatible backend: '{spec.name}' for device type '{spec.device_type}' ({who}) was written "
            f"for ember plugin API {declared}, and this ember {__version__} speaks plugin API "
            f"{PLUGIN_API_VERSION}; {fix}")


def loaded_backends() -> list:
    return [s.instance for s in backends.values() if s.instance is not None]


def device_types() -> list:
    load()
    return sorted(_by_type)


def _missing_device_message(device_type: str) -> str:
    installed = ", ".join(f"{t} ({lst[0].name})" for t, lst in sorted(_by_type.items())) or "none"
    dist = KNOWN_DISTRIBUTIONS.get(device_type)
    failed = [f"{p.name}: {p.error.strip().splitlines()[-1]}" for p in plugins.values() if p.error]
    msg = f"no installed ember backend provides device type '{device_type}' (installed backends: {installed})."
    if dist:
        msg += f" Install it with: {install_command(device_type)}"
    else:
        msg += " Is the plugin that provides it installed?"
    if failed:
        msg += "\nplugins that failed to load: " + "; ".join(failed)
    blocked = [p.name for p in plugins.values() if p.blocked]
    if blocked:
        msg += f"\nplugins blocked by EMBER_DISABLE_PLUGINS: {', '.join(blocked)}"
    return msg


def plugin_attr(module_name: str, name: str):
    """``ember.<name>`` / ``ember.ops.<name>`` for an op a plugin registers, looked up before
    anything else made ember load its plugins (``from ember.ops import rms_norm`` right after
    ``import ember``): loads them once and looks again. Private names never trigger a load (the
    import system probes them), nor does a lookup made while the plugins are loading."""
    if not name.startswith("_") and not _loaded and not _lock._is_owned():
        load()
        mod = sys.modules[module_name]
        if name in vars(mod):
            return vars(mod)[name]
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
