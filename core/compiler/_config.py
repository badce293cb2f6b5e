"""The knobs of ``ember.compile`` (``ember.compiler.config``, also ``ember._dynamo.config``) and
the ``ember._inductor.config`` namespace.

Scripts written for PyTorch's compiler set knobs of TorchDynamo and Inductor
(``torch._dynamo.config.suppress_errors = True``,
``torch._inductor.config.coordinate_descent_tuning = True``, ...). ember reads a few of them and
has no Inductor, so a :class:`Knobs` namespace accepts any name a script assigns (PyTorch's own
config modules raise for names they do not know: ember cannot list the several hundred that
PyTorch has, and refusing one would stop a script that runs on PyTorch). Reading a name nobody
set and that has no default raises ``AttributeError``, as in PyTorch.
"""
from __future__ import annotations

import contextlib
import functools

__all__ = ["Knobs", "config", "inductor_config"]


class Knobs:
    """A namespace of settings with defaults; ``patch(**changes)`` sets some for a ``with`` block
    or a decorated function (PyTorch's ``config.patch``)."""

    def __init__(self, name: str, defaults: dict, doc: str = ""):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", {})
        for key, value in defaults.items():
            self._set(key, value)
        if doc:
            object.__setattr__(self, "__doc__", doc)

    def _set(self, key: str, value) -> None:
        head, _, rest = key.partition(".")
        if rest:  # "triton.cudagraphs": a knob of a nested namespace
            sub = self._values.get(head)
            if not isinstance(sub, Knobs):
                sub = self._values[head] = Knobs(f"{self._name}.{head}", {})
            sub._set(rest, value)
        else:
            self._values[key] = value

    def __getattr__(self, name):
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(f"{object.__getattribute__(self, '_name')}.{name} does not exist") from None

    def __setattr__(self, name, value):
        self._set(name, value)

    def __delattr__(self, name):
        self._values.pop(name, None)

    def __dir__(self):
        return sorted(self._values)

    def get_config_copy(self) -> dict:
        """The settings as a flat dict (nested namespaces as ``"triton.cudagraphs"`` keys)."""
        out = {}
        for key, value in self._values.items():
            if isinstance(value, Knobs):
                out.update({f"{key}.{k}": v for k, v in value.get_config_copy().items()})
            else:
                out[key] = value
        return out

    def patch(self, arg: dict | None = None, **changes):
        """Set ``changes`` (or the dict ``arg``) for a ``with`` block, or around each call of the
        function it decorates; the previous settings come back afterwards."""
        changes = {**(arg or {}), **changes}
        knobs = self

        @contextlib.contextmanager
        def scope():
            before = knobs.get_config_copy()
            for key, value in changes.items():
                knobs._set(key, value)
            try:
                yield
            finally:
                for key in changes:
                    if key in before:
                        knobs._set(key, before[key])
                    else:
                        head, _, rest = key.partition(".")
                        (getattr(knobs, head) if rest else knobs).__delattr__(rest or key)

        class Patch:
            def __enter__(self):
                self._cm = scope()
                return self._cm.__enter__()

            def __exit__(self, *exc):
                return self._cm.__exit__(*exc)

            def __call__(self, fn):
                @functools.wraps(fn)
                def run(*a, **k):
                    with scope():
                        return fn(*a, **k)
                return run
        return Patch()

    def __repr__(self):
        return f"<{self._name}: {self.get_config_copy()!r}>"


config = Knobs("ember.compiler.config", {
    # read by ember.compile
    "cache_size_limit": 8,           # programs kept per compiled function (PyTorch's default)
    "recompile_limit": 8,            # PyTorch's newer name of the same limit; the smaller one counts
    "fuse": True,                    # default of the ``fuse`` option: elementwise chains as one kernel
    "reuse_buffers": True,           # default of the ``reuse_buffers`` option
    "max_capture_retries": 2,        # captures in a row that may ask to be made again (first optimizer steps)
    # TorchDynamo knobs scripts set; accepted with PyTorch's defaults, no effect in ember (a break
    # already runs the call eagerly, shapes are always specialised)
    "suppress_errors": False,
    "verbose": False,
    "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256,
    "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False,
    "optimize_ddp": True,
    "automatic_dynamic_shapes": True,
    "assume_static_by_default": True,
    "specialize_int": False,
    "specialize_float": False,
    "inline_inbuilt_nn_modules": True,
    "compiled_autograd": False,
    "guard_nn_modules": True,
    "force_parameter_static_shapes": True,
    "error_on_recompile": False,
    "log_compilation_metrics": True,
}, doc="ember.compile's settings (``ember._dynamo.config``): cache_size_limit, recompile_limit, fuse, "
       "reuse_buffers and max_capture_retries are read; PyTorch's other TorchDynamo knobs are accepted and "
       "have no effect.")

inductor_config = Knobs("ember._inductor.config", {
    "coordinate_descent_tuning": False,
    "fx_graph_cache": True,
    "freezing": False,
    "max_autotune": False,
    "max_autotune_gemm": False,
    "max_autotune_pointwise": False,
    "epilogue_fusion": True,
    "aggressive_fusion": False,
    "conv_1x1_as_mm": False,
    "force_fuse_int_mm_with_mul": False,
    "use_mixed_mm": True,
    "benchmark_kernel": False,
    "fallback_random": False,
    "debug": False,
    "shape_padding": True,
    "size_asserts": True,
    "cpp_wrapper": False,
    "compile_threads": 1,
    "triton.unique_kernel_names": True,
    "triton.cudagraphs": False,
    "triton.cudagraph_trees": True,
    "cpp.threads": -1,
}, doc="PyTorch's Inductor settings, accepted so that scripts tuned for it run; ember has no Inductor "
       "(``ember.compile`` replays recorded kernels, docs/compile.md), so none of them has an effect.")
