"""The ``ember`` command: ``ember info`` and ``ember plugins`` (also ``python -m ember ...``)."""
from __future__ import annotations

import argparse
import platform
import sys

import numpy

import ember

from . import _plugins, _registry_hooks, _version
from .distributed import _mpi_env, _world


def _backend_rows():
    _plugins.load()
    rows = []
    for spec in sorted(_plugins.backends.values(), key=lambda s: (s.device_type, -s.priority)):
        chosen = _plugins._by_type.get(spec.device_type, [None])[0] is spec
        try:
            be = _plugins.backend_for(spec.device_type) if chosen else None
            if be is None:
                avail, reason, count = False, f"shadowed by a higher-priority backend for '{spec.device_type}'", 0
            else:
                avail, reason = be.availability()
                count = be.device_count() if avail else 0
            dtypes = sorted(be.dtypes) if be is not None else list(spec.dtypes or ())
        except Exception as e:  # a backend that fails to load is reported, not raised
            first = str(e).splitlines()[0]
            reason = first if spec.refused else f"failed to load: {first}"
            avail, count, dtypes = False, 0, []
        rows.append((spec, avail, reason, count, dtypes))
    return rows


def cmd_info(args) -> int:
    print(f"ember {ember.__version__} (python {platform.python_version()}, numpy {numpy.__version__}, "
          f"{platform.platform()})")
    print(f"default dtype: {ember.get_default_dtype()}")
    rows = _backend_rows()
    if not rows:
        print(f"backends: none installed ({_plugins.install_command('cpu')})")
        return 0
    print("backends:")
    for spec, avail, reason, count, dtypes in rows:
        state = f"available, {count} device{'s' if count != 1 else ''}" if avail else f"unavailable: {reason}"
        print(f"  {spec.device_type:<8} {spec.name:<12} priority {spec.priority:<3} {state}")
        if dtypes:
            print(f"  {'':<8} dtypes: {', '.join(dtypes)}")
    return 0


def cmd_plugins(args) -> int:
    _plugins.load()
    _registry_hooks.collect_modules()
    _registry_hooks.collect_optimizers()
    rows = {r[0].plugin: [] for r in _backend_rows()}
    for spec, avail, reason, count, _ in _backend_rows():
        rows.setdefault(spec.plugin, []).append((spec, avail, reason, count))
    if not _plugins.plugins:
        print("no ember plugins installed")
        return 0
    for name, info in sorted(_plugins.plugins.items()):
        dist = f"{info.distribution} {info.version}".strip() or "(registered in-process)"
        status = "blocked by EMBER_DISABLE_PLUGINS" if info.blocked else ("error" if info.error else "loaded")
        print(f"{name}: {dist} [{status}]")
        print(f"  module: {info.value}")
        if info.hooks:
            print(f"  hooks: {', '.join(info.hooks)}")
        for spec, avail, reason, count in rows.get(name, []):
            state = f"available ({count} device{'s' if count != 1 else ''})" if avail else f"unavailable: {reason}"
            print(f"  device {spec.device_type}: backend {spec.name}, priority {spec.priority}, {state}")
        ops = _registry_hooks.plugin_ops.get(name)
        if ops:
            print(f"  ops: {', '.join(ops)}")
        mods = [k for k, (_, p) in _registry_hooks.modules.items() if p == name]
        if mods:
            print(f"  modules: {', '.join('ember.nn.' + m for m in mods)}")
        opts = [k for k, (_, p) in _registry_hooks.optimizers.items() if p == name]
        if opts:
            print(f"  optimizers: {', '.join('ember.optim.' + o for o in opts)}")
        colls = [k for k, d in _plugins.collectives.items() if d["plugin"] == name]
        for c in colls:
            ok, why = _world._availability(c)
            hint = f"; {_mpi_env.INSTALL_HINT}" if c == "mpi" and not ok else ""
            print(f"  collective {c}: {'available' if ok else 'unavailable: ' + why + hint}")
        if info.error:
            print("  error:")
            for line in info.error.rstrip().splitlines():
                print("    " + line)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ember",
                                     description="ember: PyTorch-style deep learning with plugin backends")
    parser.add_argument("--version", action="version",
                        version=f"ember {ember.__version__} (PyTorch API {_version.TORCH_API}, "
                                f"plugin API {_version.PLUGIN_API_VERSION})")
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("info", help="versions and backends with their availability")
    sub.add_parser("plugins", help="every plugin with version, hooks, devices and availability")
    args = parser.parse_args(argv)
    if args.cmd == "info":
        return cmd_info(args)
    if args.cmd == "plugins":
        return cmd_plugins(args)
    parser.print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
