"""The names of torch.compiler / torch._dynamo / torch._inductor that scripts written for
PyTorch's compiler call: settings, stances, graph_break, mark_dynamic, optimize, OptimizedModule."""
import subprocess
import sys
import warnings

import pytest

import ember
import ember.nn as nn
from ember.compiler import Unsupported


def _double_plus_one(x):
    return x * 2 + 1


@pytest.fixture(autouse=True)
def _default_stance():
    yield
    ember.compiler.set_stance("default")


def test_dynamo_config_accepts_pytorch_knobs_and_patch_restores():
    cfg = ember._dynamo.config
    assert cfg is ember.compiler.config
    assert cfg.suppress_errors is False and cfg.cache_size_limit == 8
    cfg.suppress_errors = True
    try:
        assert ember._dynamo.config.suppress_errors is True
    finally:
        cfg.suppress_errors = False
    with pytest.raises(AttributeError, match="config.no_such_knob does not exist"):
        cfg.no_such_knob
    with cfg.patch(cache_size_limit=3, some_future_knob=1):
        assert cfg.cache_size_limit == 3 and cfg.some_future_knob == 1
    assert cfg.cache_size_limit == 8 and not hasattr(cfg, "some_future_knob")

    @cfg.patch({"cache_size_limit": 1})
    def limited():
        return cfg.cache_size_limit
    assert limited() == 1 and cfg.cache_size_limit == 8
    assert cfg.get_config_copy()["recompile_limit"] == 8


def test_patched_cache_size_limit_is_read_by_compile():
    cf = ember.compile(_double_plus_one)
    with ember._dynamo.config.patch(cache_size_limit=1), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cf(ember.ones(2))
        cf(ember.ones(3))  # a second key: over the limit, runs eagerly with a warning
    assert len(cf.programs()) == 1 and any("cache_size_limit" in str(x.message) for x in w)


def test_inductor_config_module_and_nested_settings():
    import ember._inductor.config as ic
    assert ember._inductor.config is ic
    assert ic.coordinate_descent_tuning is False and ic.triton.cudagraphs is False
    ic.coordinate_descent_tuning = True
    ic.triton.unique_kernel_names = False
    ember._inductor.config.a_knob_from_a_newer_pytorch = 5
    try:
        assert ember._inductor.config.coordinate_descent_tuning is True
        assert ic.get_config_copy()["triton.unique_kernel_names"] is False
        assert ic.a_knob_from_a_newer_pytorch == 5
    finally:
        ic.coordinate_descent_tuning = False
        ic.triton.unique_kernel_names = True
        del ic.a_knob_from_a_newer_pytorch
    with pytest.raises(AttributeError, match="ember._inductor.config.fx_graph_nope does not exist"):
        ic.fx_graph_nope
    with ic.patch({"triton.cudagraphs": True}):
        assert ic.triton.cudagraphs is True
    assert ic.triton.cudagraphs is False


def test_inductor_config_in_a_fresh_interpreter_as_scripts_write_it():
    code = ("import ember as torch\n"
            "torch._inductor.config.coordinate_descent_tuning = True\n"
            "torch._dynamo.config.compile_threads = 1\n"
            "import ember._inductor.config as c; assert c.coordinate_descent_tuning\n"
            "print(torch.compile(lambda x: x + 1)(torch.ones(2)).tolist())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[2.0, 2.0]"


def test_optimized_module_isinstance_and_unwrap():
    lin = nn.Linear(3, 2)
    model = ember.compile(lin)
    assert isinstance(model, ember._dynamo.eval_frame.OptimizedModule)
    assert isinstance(model, ember._dynamo.OptimizedModule) and isinstance(model, nn.Module)
    assert not isinstance(lin, ember._dynamo.eval_frame.OptimizedModule)
    assert model._orig_mod is lin


def test_graph_break_runs_the_call_eagerly_and_fullgraph_raises():
    def f(x):
        y = x * 2
        ember._dynamo.graph_break()
        return y + 1
    cf = ember.compile(f)
    x = ember.arange(4.0)
    assert ember.equal(cf(x), f(x)) and ember.equal(cf(x), f(x))
    assert cf.programs() == [] and "graph_break() called" in cf.breaks[0].reason
    ember._dynamo.graph_break()  # outside a capture: nothing
    with pytest.raises(Unsupported, match="graph_break"):
        ember.compile(f, fullgraph=True)(x)
    out = ember._dynamo.explain(f)(x)
    assert out.graph_break_count == 1 and "test_compile_compat.py" in out.break_reasons[0].where


def test_compiling_a_compiled_function_keeps_caches_apart():
    inner = ember.compile(_double_plus_one)
    inner(ember.ones(2))
    outer = ember.compile(inner)
    assert outer._cache is not inner._cache and outer.breaks is not inner.breaks
    assert ember.equal(outer(ember.ones(2)), ember.full((2,), 3.0))
    assert outer.__wrapped__ is inner and outer.__name__ == "_double_plus_one"


def test_optimize_is_a_compile_decorator():
    f = ember._dynamo.optimize("eager")(_double_plus_one)
    x = ember.randn(3)
    assert ember.equal(f(x), _double_plus_one(x)) and ember.equal(f(x), _double_plus_one(x))
    assert len(f.programs()) == 1

    def brk(x):
        return x * 2 if x.sum().item() > 0 else x
    with pytest.raises(Unsupported):
        ember._dynamo.optimize("inductor", nopython=True)(brk)(x.abs())
    with pytest.raises(RuntimeError, match="Invalid backend"):
        ember._dynamo.optimize("bogus")


def test_shape_marks_and_graph_hints_are_accepted():
    x = ember.randn(4, 3)
    ember._dynamo.mark_dynamic(x, 0)
    ember._dynamo.maybe_mark_dynamic(x, 1)
    ember._dynamo.mark_static(x, 1)
    ember._dynamo.mark_static_address(x)
    helper = ember.compiler.allow_in_graph(_double_plus_one)
    assert helper is _double_plus_one and ember.compiler.assume_constant_result(helper) is helper
    assert ember._dynamo.disallow_in_graph(helper) is helper
    ember.compiler.cudagraph_mark_step_begin()
    cf = ember.compile(lambda t: helper(t).sum(0))
    for n in (4, 5):  # a new size after mark_dynamic: another program, right answer
        t = ember.randn(n, 3)
        assert ember.allclose(cf(t), (t * 2 + 1).sum(0))
    assert len(cf.programs()) == 2
    assert ember._dynamo.is_dynamo_supported() and not ember._dynamo.is_inductor_supported()


def test_is_dynamo_compiling_inside_a_capture():
    seen = []
    cf = ember.compile(lambda x: (seen.append(ember.compiler.is_dynamo_compiling()), x + 1)[1])
    cf(ember.ones(1))
    assert seen == [True] and not ember.compiler.is_dynamo_compiling()


def test_set_stance_as_call_block_and_decorator():
    cf = ember.compile(_double_plus_one)
    x = ember.ones(2)
    ember.compiler.set_stance("force_eager")
    assert ember.equal(cf(x), _double_plus_one(x)) and cf.programs() == []
    ember.compiler.set_stance("default")
    with ember.compiler.set_stance("force_eager"):
        cf(x)
        assert cf.programs() == []
    cf(x)
    assert len(cf.programs()) == 1

    @ember.compiler.set_stance("force_eager")
    def eager_region(t):
        return cf(t)
    assert ember._dynamo.set_stance is ember.compiler.set_stance
    y = ember.ones(7)
    assert ember.equal(eager_region(y), _double_plus_one(y)) and len(cf.programs()) == 1  # no capture for (7,)
    cf(y)
    assert len(cf.programs()) == 2  # the decorator's stance held only inside its function


def test_recompile_stances():
    cf = ember.compile(_double_plus_one)
    with ember.compiler.set_stance("fail_on_recompile"):
        cf(ember.ones(2))  # the first program is not a recompile
        cf(ember.ones(2))
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            cf(ember.ones(3))
    with ember.compiler.set_stance("eager_on_recompile"):
        assert ember.equal(cf(ember.ones(3)), ember.full((3,), 3.0))
        assert len(cf.programs()) == 1
    first = ember.compile(_double_plus_one)
    with ember.compiler.set_stance("eager_then_compile"):
        first(ember.ones(2))
        assert first.programs() == []
        first(ember.ones(2))
        assert len(first.programs()) == 1


def test_set_stance_errors():
    with pytest.raises(RuntimeError, match="unknown stance 'sometimes'"):
        ember.compiler.set_stance("sometimes")
    with pytest.raises(RuntimeError, match="force_backend"):
        ember.compiler.set_stance("force_eager", force_backend="eager")

    def inside(x):
        ember.compiler.set_stance("force_eager")
        return x
    with pytest.raises(RuntimeError, match="set_stance in a torch.compile region"):
        ember.compile(inside)(ember.ones(1))


def test_optimized_module_attributes_training_and_len_go_to_the_module():
    lin = nn.Linear(3, 2)
    model = ember.compile(lin)
    model.temperature = 0.5          # set on the compiled module: lands on the original, as PyTorch's
    assert lin.temperature == 0.5 and "temperature" not in model.__dict__
    del model.temperature
    assert not hasattr(lin, "temperature")
    model.eval()
    assert lin.training is False and model.training is False
    lin.train()                     # the original's mode is the compiled module's
    assert model.training is True
    with pytest.raises(TypeError, match="Linear does not support len"):
        len(model)
    assert len(ember.compile(nn.Sequential(nn.ReLU(), nn.Tanh()))) == 2
    assert "weight" in dir(model) and "_orig_mod" in dir(model)


def test_copies_of_compiled_modules_and_functions_compile_afresh():
    import copy
    import io
    lin = nn.Linear(2, 1)
    model = ember.compile(lin)
    x = ember.randn(3, 2)
    model(x)
    model(x)  # a replay: the program holds lin's parameters
    ema = copy.deepcopy(model)
    assert isinstance(ema, ember._dynamo.OptimizedModule) and ema._orig_mod is not lin
    with ember.no_grad():
        ema._orig_mod.weight.zero_()
        ema._orig_mod.bias.fill_(1.0)
    for _ in range(2):  # capture, then replay: both read the copy's parameters
        assert ember.equal(ema(x), ember.ones(3, 1))
    assert ember.equal(model(x), lin(x))
    buf = io.BytesIO()
    ember.save(model, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False)
    assert loaded.__dict__["_compiled"].programs() == []
    assert ember.equal(loaded(x), lin(x))
    cf = ember.compile(_double_plus_one)
    cf(x)
    assert copy.deepcopy(cf).programs() == [] and len(cf.programs()) == 1


def test_dropped_compiled_functions_are_freed():
    import gc
    import weakref
    cf = ember.compile(lambda t: t + 1)
    cf(ember.ones(2))
    ref = weakref.ref(cf)
    del cf
    gc.collect()
    assert ref() is None
