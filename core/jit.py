"""``ember.jit``: TorchScript's decorators and queries, so that code written for it runs.

ember has no TorchScript compiler: this is a compatibility shim that runs the code **eagerly**.
``script`` returns its argument itself (a module, a function or a class), the decorators
(``ignore``, ``unused``, ``export``, ``interface``, ``script_method``...) return the function
unchanged, ``annotate`` returns the value, ``is_scripting()`` and ``is_tracing()`` are False and
``fork``/``wait`` run the call at once. What needs a compiled program (``trace``, ``save``,
``load``, ``freeze``, ``optimize_for_inference``) raises ``NotImplementedError`` naming it.
"""
from __future__ import annotations

import builtins
import typing
from typing import Final  # noqa: F401  (torch.jit.Final: a plain typing.Final)

__all__ = ["Attribute", "Final", "ScriptFunction", "ScriptModule", "RecursiveScriptModule", "annotate", "export",
           "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing", "isinstance", "load",
           "optimize_for_inference", "save", "script", "script_if_tracing", "script_method", "trace", "trace_module",
           "unused", "wait"]


def is_scripting() -> bool:
    """False: ember code always runs eagerly (``if not torch.jit.is_scripting():`` branches run)."""
    return False


def is_tracing() -> bool:
    """False: nothing is traced."""
    return False


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Return ``obj`` itself (module, function or class), run eagerly: ember compiles nothing."""
    return obj


def ignore(drop=False, **kwargs):
    """``@ignore`` or ``@ignore(drop=True)``: the function unchanged (eager code is never compiled)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """The function unchanged (TorchScript would replace it with a raise; eager code keeps it)."""
    return fn


def export(fn):
    """The method unchanged (TorchScript would compile it as an entry point)."""
    return fn


def interface(obj):
    """The class unchanged (a TorchScript interface is a plain class when run eagerly)."""
    return obj


def script_method(fn):
    """The method unchanged."""
    return fn


def script_if_tracing(fn):
    """The function unchanged (nothing is ever traced)."""
    return fn


def annotate(the_type, the_value):
    """``the_value``: a type annotation for the TorchScript compiler, a no-op eagerly."""
    return the_value


def Attribute(value, type):  # noqa: A002,N802  (PyTorch's name and signature)
    """``value``: the TorchScript attribute-type hint, a no-op eagerly."""
    return value


def _matches(obj, target) -> bool:
    origin = typing.get_origin(target)
    if origin is None:
        return target is typing.Any or builtins.isinstance(obj, target)
    args = typing.get_args(target)
    if origin is typing.Union:
        return any(_matches(obj, a) for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(_matches(x, args[0]) for x in obj)
    if origin is tuple and args:
        return len(obj) == len(args) and all(_matches(x, a) for x, a in zip(obj, args))
    if origin is dict and args:
        return all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in obj.items())
    return True


def isinstance(obj, target_type) -> bool:  # noqa: A001  (torch.jit.isinstance)
    """``builtins.isinstance`` that also checks the elements of ``List[int]``, ``Dict[str, Tensor]``,
    ``Tuple[...]``, ``Optional[...]`` targets, as ``torch.jit.isinstance`` does eagerly."""
    return _matches(obj, target_type)


class _Future:
    """The result of ``fork``: the call already ran."""

    def __init__(self, value) -> None:
        self._value = value

    def wait(self):
        return self._value

    def done(self) -> bool:
        return True


def fork(func, *args, **kwargs) -> _Future:
    """Run ``func(*args, **kwargs)`` now (TorchScript would run it asynchronously)."""
    return _Future(func(*args, **kwargs))


def wait(future):
    """The value of a ``fork``."""
    return future.wait()


class ScriptModule:
    """TorchScript's compiled module type. ``script`` returns the module itself, so no ember object
    is a ScriptModule (``isinstance(m, torch.jit.ScriptModule)`` is False)."""

    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError("ember.jit.ScriptModule: ember has no TorchScript; subclass ember.nn.Module "
                                  "(ember.jit.script returns a module unchanged)")


class RecursiveScriptModule(ScriptModule):
    """See ``ScriptModule``."""


class ScriptFunction:
    """TorchScript's compiled function type; ``script`` returns functions unchanged."""

    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError("ember.jit.ScriptFunction: ember has no TorchScript")


def _unsupported(name: str, what: str):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"ember.jit.{name} is not supported: ember has no TorchScript, so it cannot "
                                  f"{what}. ember runs models eagerly; save weights with ember.save("
                                  "model.state_dict(), f)")
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"Raises NotImplementedError: ember has no TorchScript to {what}."
    return fn


trace = _unsupported("trace", "trace a function into a graph")
trace_module = _unsupported("trace_module", "trace a module into a graph")
save = _unsupported("save", "write a TorchScript archive")
load = _unsupported("load", "read a TorchScript archive")
freeze = _unsupported("freeze", "freeze a compiled module")
optimize_for_inference = _unsupported("optimize_for_inference", "optimize a compiled module")
