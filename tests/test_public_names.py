"""Definitions you can grep: the public names of ``ember`` are the union of the ``__all__`` lists
of the modules its front imports; every op front end is a real function named after its op, in
the module that declares it; the Tensor methods are the list in tests/data/tensor_methods.txt;
internal helpers stay out of the public namespaces."""
from __future__ import annotations

import pathlib
import types

import ember
import ember._dtype
import ember.amp.state
import ember._registry_hooks
import ember._threads
import ember._toplevel
from ember import ops

DATA = pathlib.Path(__file__).resolve().parent / "data"

#: names of the front itself (ember/__init__.py), besides the modules' __all__ lists
FRONT = {"Tensor", "Size", "UntypedStorage", "device", "hookimpl", "from_dlpack", "to_dlpack", "set_printoptions",
         "enable_grad", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
         "set_grad_enabled", "get_float32_matmul_precision", "set_float32_matmul_precision", "range", "strided",
         "contiguous_format", "preserve_format", "channels_last", "sparse_coo", "layout", "sparse_coo_tensor", "spmm",
         "autograd", "ops", "return_types", "__version__", "amp", "autocast",
         "compile"}  # ember.compiler.compile, loaded on first use

#: internal helpers that once leaked into ember.* and Tensor.*
INTERNAL = {"write_back", "write_out", "write_out_tuple", "check_bounds", "infer_size", "add_inplace", "sub_inplace",
            "view_strides", "slice_dim", "prep2", "sum_to_shape", "cast", "scalar_for", "to_copy"}


def test_the_public_list_is_the_union_of_the_modules_lists():
    union = set(ops.__all__) | set(ember._toplevel.__all__) | set(ember._threads.__all__) | set(ember._dtype.__all__)
    union |= set(ember.amp.state.__all__)
    union |= {n for n in dir(ember) if n.endswith("Tensor") and n != "Tensor"}  # the legacy typed classes
    assert set(ember.__all__) == union | FRONT
    for fam in ops.FAMILIES:
        assert set(fam.__all__) <= set(ops.__all__)
    assert set(ops.__all__) == {n for fam in ops.FAMILIES for n in fam.__all__}


def test_every_listed_name_exists_and_nothing_else_is_public():
    for name in ember.__all__:
        assert hasattr(ember, name), name
    for name in ops.__all__:
        assert hasattr(ops, name), name
    public = {n for n, v in vars(ember).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    from_plugins = {n for names in ember._registry_hooks.plugin_ops.values() for n in names}  # ember.rms_norm...
    leaked = public - set(ember.__all__) - from_plugins
    assert not leaked, f"public names of ember outside every __all__: {sorted(leaked)}"


def test_internal_helpers_are_not_public():
    for name in INTERNAL:
        assert name not in ember.__all__ and not hasattr(ember, name), name
        assert name not in ops.__all__, name
        assert not hasattr(ember.Tensor, name), name


def test_op_front_ends_are_named_functions_of_their_module():
    for name, op in ops.OPS.items():
        fn = op.fn
        if fn is None:
            continue
        assert isinstance(fn, types.FunctionType), name
        assert fn.__qualname__ == fn.__name__ and fn.__name__ in (name, name.lstrip("_")) or \
            fn.__name__ == getattr(fn, "__wrapped__", fn).__name__, name
        assert fn.__module__.startswith("ember.") or op.plugin, f"{name}: __module__ {fn.__module__}"
        assert fn.__doc__, f"{name} has no docstring"
        if op.inplace_fn is not None:
            assert op.inplace_fn.__name__ == fn.__name__ + "_" and op.inplace_fn.__module__ == fn.__module__
    assert ember.add.__module__ == "ember.ops.arithmetic" and ember.add.__qualname__ == "add"
    assert ember.sum.__module__ == "ember.ops.reduction.reductions"
    assert ember.add_.__name__ == "add_" and ember.add.inplace is ember.add_


def test_ops_are_callable_by_name():
    x = ember.tensor([1.0, 2.0])
    assert ops.OPS["add"](x, 1).tolist() == [2.0, 3.0]
    assert ops.OPS["sum"](x).item() == 3.0
    assert ops.OPS["transpose"](x.reshape(1, 2), 0, 1).shape == (2, 1)
    assert ops.OPS["max_dim"](x.reshape(1, 2), 1, False)[0].tolist() == [2.0]  # an internal op: kernel arguments


def test_tensor_methods_are_the_explicit_list():
    expected = [ln for ln in (DATA / "tensor_methods.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    from_plugins = {n for names in ember._registry_hooks.plugin_ops.values() for n in names}
    actual = sorted(n for n in dir(ember.Tensor) if not n.startswith("_") and n.rstrip("_") not in from_plugins)
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    assert not missing and not extra, (f"Tensor methods differ from tests/data/tensor_methods.txt: missing {missing}, "
                                       f"not listed {extra} (a new method is declared with its op, method=True, or "
                                       "bound in ember/_methods.py; list it in the file)")
