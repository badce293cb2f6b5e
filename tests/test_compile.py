"""ember.compile: capture, guards, replay, breaks, explain, fusion (docs/compile.md)."""
import importlib.util
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import Unsupported, explain


def _programs(c):
    return (c._compiled if hasattr(c, "__dict__") and "_compiled" in c.__dict__ else c).programs()


def _same(a, b):
    if isinstance(a, ember.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and ember.equal(a, b)
    return all(_same(x, y) for x, y in zip(a, b))


def test_function_replays_and_matches_eager():
    def f(x, y):
        z = x * y + 1
        return ember.tanh(z).sum(1), z.t()

    cf = ember.compile(f)
    x, y = ember.randn(4, 5, dtype=ember.float64), ember.randn(4, 5, dtype=ember.float64)
    ref = f(x, y)
    assert _same(cf(x, y), ref)            # capture (eager)
    assert len(cf.programs()) == 1
    r1, r2 = cf(x, y), cf(x, y)            # replays
    assert _same(r1, ref) and _same(r2, ref)
    assert r1[0] is not r2[0] and r1[1]._storage is not r2[1]._storage   # fresh outputs every call
    x2 = ember.randn(4, 5, dtype=ember.float64)
    assert _same(cf(x2, y), f(x2, y))      # new values, same guards: replay reads the new input


def test_signature_and_errors():
    f = lambda x: x + 1  # noqa: E731
    assert ember.compile(f, disable=True) is f
    deco = ember.compile(mode="max-autotune")
    assert callable(deco) and callable(deco(f))
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        ember.compile(f, mode="bogus")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match="Invalid backend"):
        ember.compile(f, backend="bogus")
    assert ember._dynamo.config.cache_size_limit == 8


def test_guards_recapture_on_shape_dtype_grad_mode():
    cf = ember.compile(lambda x: x * 2)
    for shape, dt in [((3,), ember.float32), ((4,), ember.float32), ((3,), ember.float64)]:
        x = ember.ones(shape, dtype=dt)
        cf(x)
        r = cf(x)
        assert r.shape == shape and r.dtype == dt and ember.equal(r, x * 2)
    assert len(cf.programs()) == 3
    xt = ember.ones(3, 3).t()  # strides differ: a new capture
    assert ember.equal(cf(xt), xt * 2) and ember.equal(cf(xt), xt * 2)
    assert len(cf.programs()) == 4


def test_cache_size_limit_then_eager_with_warning():
    cf = ember.compile(lambda x: x + 1)
    old = ember._dynamo.config.cache_size_limit
    ember._dynamo.config.cache_size_limit = 2
    try:
        cf(ember.ones(1))
        cf(ember.ones(2))
        with pytest.warns(RuntimeWarning, match="cache_size_limit"):
            r = cf(ember.ones(3))
        assert ember.equal(r, ember.full((3,), 2.0))
    finally:
        ember._dynamo.config.cache_size_limit = old


def test_python_scalars_are_guarded_by_value():
    cf = ember.compile(lambda x, k: x * k)
    x = ember.ones(2)
    assert ember.equal(cf(x, 2.0), x * 2) and ember.equal(cf(x, 2.0), x * 2)
    assert ember.equal(cf(x, 3.0), x * 3) and ember.equal(cf(x, 3.0), x * 3)


def test_breaks_run_eagerly_and_explain_says_why():
    def f(x):
        if x.sum().item() > 0:
            return x + 1
        return x - 1

    cf = ember.compile(f)
    for v in (1.0, -1.0, 1.0):
        x = ember.full((3,), v)
        assert ember.equal(cf(x), f(x))    # a branch on a value: never a stale replay
    assert cf.programs() == []
    out = explain(f)(ember.ones(3))
    assert out.graph_count == 0 and out.graph_break_count == 1
    assert "host read" in out.break_reasons[0].reason and "test_compile.py" in out.break_reasons[0].where
    assert "Graph Break Count: 1" in str(out)
    assert explain(lambda x: x * 2, ember.ones(2)).graph_count == 1   # the explain(fn, *args) form


@pytest.mark.parametrize("fn", [lambda x: x.tolist(), lambda x: bool(x.sum() > 0), lambda x: ember.nonzero(x),
                                lambda x: x[x > 0], lambda x: ember.unique(x)])
def test_fullgraph_raises_at_the_first_break(fn):
    cf = ember.compile(fn, fullgraph=True)
    with pytest.raises(Unsupported):
        cf(ember.tensor([1.0, -2.0, 3.0]))


def test_rng_draws_match_eager():
    def f(x):
        return ember.nn.functional.dropout(x, 0.5, training=True) + ember.rand(4)

    cf = ember.compile(f)
    x = ember.ones(4)
    ember.manual_seed(0)
    ref = [f(x) for _ in range(3)]
    ember.manual_seed(0)
    got = [cf(x) for _ in range(3)]
    assert len(cf.programs()) == 1
    assert all(ember.equal(a, b) for a, b in zip(ref, got))


def test_seeding_inside_the_call_is_a_break_and_keeps_eager_draws():
    def reseeds(x):
        ember.manual_seed(0)
        return x + ember.rand(3)

    gen = ember.Generator()

    def reseeds_own(x):
        gen.manual_seed(3)
        return x + ember.randn(3, generator=gen)

    def sets_state(x, state):
        ember.set_rng_state(state)
        return x + ember.rand(3)

    x = ember.zeros(3)
    state = ember.get_rng_state()
    for fn, args in ((reseeds, (x,)), (reseeds_own, (x,)), (sets_state, (x, state))):
        cf = ember.compile(fn)
        ref = fn(*args)
        got = [cf(*args) for _ in range(3)]  # a replay without the reseed would draw new numbers
        assert all(ember.equal(g, ref) for g in got), fn.__name__
        assert cf.programs() == []
        seeded = [b for b in cf.breaks if "random generator" in b.reason]  # (set_state also reads its tensor)
        assert len(seeded) == 1 and "test_compile.py" in seeded[0].where
    with pytest.raises(Unsupported, match="seeding a random generator"):
        ember.compile(reseeds, fullgraph=True)(x)


def test_inplace_writes_into_inputs_and_version_counters():
    def f(x, y):
        x.add_(1)
        y[0] = 5.0
        return x * 2

    cf = ember.compile(f)
    a, b = ember.zeros(3), ember.zeros(3)
    cf(a, b)
    va, vb = a._version[0], b._version[0]
    r = cf(a, b)                               # replay
    assert ember.equal(a, ember.full((3,), 2.0)) and ember.equal(r, ember.full((3,), 4.0))
    assert b.tolist() == [5.0, 0.0, 0.0]
    assert a._version[0] == 2 * va and b._version[0] == 2 * vb   # the same bumps as the eager call


def test_external_tensor_changed_recaptures():
    w = ember.ones(3)
    cf = ember.compile(lambda x: x * w)
    x = ember.full((3,), 2.0)
    cf(x)
    cf(x)
    w.data = ember.ones(4)  # the captured storage is gone: the program misses and captures again
    assert ember.equal(cf(ember.ones(4)), ember.ones(4))


def test_autograd_calls_replay_and_differentiate():
    lin = nn.Linear(3, 2)
    cf = ember.compile(lin)
    x = ember.randn(5, 3)
    for _ in range(2):
        lin.zero_grad()
        cf(x).sum().backward()
        assert lin.weight.grad is not None and ember.allclose(lin.weight.grad, x.sum(0).expand(2, 3))
    with ember.no_grad():
        a = cf(x)
        b = cf(x)
    assert ember.equal(a, b) and len(_programs(cf)) == 2  # one under autograd, one without


def _models():
    ember.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Dropout(0.3), nn.Linear(36, 5))
    lstm = nn.LSTM(8, 6, num_layers=2, batch_first=True)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True), 2)
    return [(mlp, (5, 8)), (cnn, (2, 1, 8, 8)), (lstm, (2, 7, 8)), (enc, (2, 7, 8))]


@pytest.mark.parametrize("i", range(4), ids=["mlp", "cnn", "lstm", "transformer"])
@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_models_replay_equal_eager(i, train):
    import copy
    model, shape = _models()[i]
    model = model.double().train(train)
    twin = copy.deepcopy(model)
    cm = ember.compile(model)
    ember.manual_seed(1)
    x = ember.randn(*shape, dtype=ember.float64)
    with ember.no_grad():
        ember.manual_seed(2)
        ref = [twin(x) for _ in range(3)]
        ember.manual_seed(2)
        got = [cm(x) for _ in range(3)]
    assert len(_programs(cm)) == 1, "the model forward should capture without a break"
    for a, b in zip(ref, got):
        assert _same(a, b)
    for b1, b2 in zip(twin.buffers(), model.buffers()):   # running statistics updated alike
        assert ember.equal(b1, b2)


def test_float32_models_within_tolerance_and_module_guards():
    model, shape = _models()[3]
    model.eval()
    cm = ember.compile(model)
    x = ember.randn(*shape)
    with ember.no_grad():
        ref = model(x)
        cm(x)
        assert ember.allclose(cm(x), ref, rtol=1e-5, atol=1e-6)
        model.train()                     # a changed training flag captures again
        cm(x)
        assert len(_programs(cm)) == 2


def test_module_compile_in_place():
    m = nn.Linear(3, 2)
    m.compile()
    x = ember.randn(4, 3)
    with ember.no_grad():
        a, b = m(x), m(x)
    assert ember.equal(a, b) and len(m.forward.programs()) == 1
    om = ember.compile(m)
    assert isinstance(om, nn.Module) and om._orig_mod is m and om.weight is m.weight
    assert list(om.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]


def test_buffer_reuse_keeps_outputs_fresh():
    cf = ember.compile(lambda x: ember.relu(x * 2) + 1)
    x = ember.randn(64)
    cf(x)
    r1 = cf(x)
    r2 = cf(x * -1)
    assert cf.programs()[0].n_buffers >= 1
    assert ember.equal(r1, ember.relu(x * 2) + 1)   # not overwritten by the second replay
    assert ember.equal(r2, ember.relu(x * -2) + 1)


def _chain(x, y):
    return ember.relu((x * y + 1.5) - y) * 0.5


@pytest.mark.skipif(importlib.util.find_spec("numexpr") is None, reason="numexpr is not installed")
def test_fusion_with_numexpr():
    cf = ember.compile(_chain)
    x, y = ember.randn(200, 100), ember.randn(200, 100)
    cf(x, y)
    r = cf(x, y)
    p = cf.programs()[0]
    assert p.n_fused == 1 and "fused_mul_add_sub_relu_mul" in p.source
    assert ember.allclose(r, _chain(x, y), rtol=1e-6, atol=1e-6)
    xd, yd = x.double(), y.double()        # float64 chains are never fused: identical results
    cd = ember.compile(_chain)
    cd(xd, yd)
    assert cd.programs()[0].n_fused == 0 and ember.equal(cd(xd, yd), _chain(xd, yd))
    cb = ember.compile(_chain)  # a broadcast input: numexpr's broadcasting is slower than numpy's calls
    cb(x, y[:1])
    assert cb.programs()[0].n_fused == 0 and ember.equal(cb(x, y[:1]), _chain(x, y[:1]))


def test_fusion_declined_replays_call_by_call(monkeypatch):
    from ember_cpu_numpy import fusion
    monkeypatch.setattr(fusion, "MIN_NUMEL", 10 ** 9)   # as without numexpr: every chain declined
    cf = ember.compile(_chain)
    x, y = ember.randn(200, 100), ember.randn(200, 100)
    cf(x, y)
    assert cf.programs()[0].n_fused == 0 and ember.equal(cf(x, y), _chain(x, y))
    cn = ember.compile(_chain, options={"fuse": False})
    cn(x, y)
    assert cn.programs()[0].n_fused == 0


def test_fused_expression_text():
    from ember.backend.fusion import ElementwiseChain
    from ember_cpu_numpy.fusion import expression
    ch = ElementwiseChain([("mul", (("in", 0), ("in", 1))), ("add", (("op", 0), 2.0)), ("relu", (("op", 1),))],
                          [((3,), ember.float32)] * 2, (3,), ember.float32, None)
    expr, consts = expression(ch, np.float32)
    assert expr == "where(((i0 * i1) + k0) <= 0, 0, ((i0 * i1) + k0))" and consts["k0"].dtype == np.float32


def test_nested_and_disabled():
    inner = ember.compile(lambda x: x + 1)
    outer = ember.compile(lambda x: inner(x) * 2)
    x = ember.ones(2)
    outer(x)
    assert ember.equal(outer(x), ember.full((2,), 4.0))
    with ember.compiler.disable():
        assert ember.equal(outer(x), ember.full((2,), 4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember._dynamo.reset()
    assert outer.programs() == []


def test_view_of_a_parameter_made_inside_reads_the_parameter_live():
    w = ember.randn(3, 3)

    def f(x):
        with ember.no_grad():  # a view made without grad, as fused ops' decompositions do
            wt = w.t()
        return x @ wt
    cf = ember.compile(f)
    x = ember.randn(2, 3)
    cf(x)
    w.data = ember.randn(3, 3)  # a new storage: the program must not read the old one through a stale view
    assert ember.equal(cf(x), x @ w.t())


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = 1.0
        self.use_bias = True
        self.act = ember.tanh

    def forward(self, x):
        y = self.act(self.lin(x)) * self.scale
        return y + 1 if self.use_bias else y


def test_module_attributes_read_by_forward_are_guarded():
    m = _Scaled()
    cm = ember.compile(m)
    x = ember.randn(2, 3, dtype=ember.float64)
    m.double()
    with ember.no_grad():
        for _ in range(2):
            assert ember.equal(cm(x), m(x))
        for name, value in (("scale", 2.5), ("use_bias", False), ("act", ember.sigmoid)):
            setattr(m, name, value)  # a replay of the old program would use the old value
            assert ember.equal(cm(x), m(x)), name
            assert ember.equal(cm(x), m(x)), name
        n = len(_programs(cm))
        m.scale, m.use_bias, m.act = 1.0, True, ember.tanh  # back to the first state: its program
        assert ember.equal(cm(x), m(x)) and len(_programs(cm)) == n


def test_a_global_model_switched_to_eval_does_not_replay_its_training_program():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4)).double()

    @ember.compile
    def forward(x):
        return model(x)
    x = ember.randn(8, 4, dtype=ember.float64)
    with ember.no_grad():
        forward(x)
        forward(x)
        model.eval()
        assert ember.equal(forward(x), model(x))
        assert ember.equal(forward(x), model(x))
        model.train()
        ember.manual_seed(1)
        a = forward(x)
        ember.manual_seed(1)
        assert ember.equal(a, model(x))
    assert len(forward.programs()) == 2 and forward.breaks == []


def test_globals_and_closure_variables_the_function_reads_are_guarded():
    global _GLOBAL_FACTOR
    _GLOBAL_FACTOR = 3.0
    cf = ember.compile(lambda t: t * _GLOBAL_FACTOR)
    x = ember.ones(2)
    cf(x)
    cf(x)
    _GLOBAL_FACTOR = 5.0
    assert cf(x).tolist() == [5.0, 5.0]

    def make():
        k = 2.0

        def inner(t):
            return t * k

        def set_k(v):
            nonlocal k
            k = v
        return inner, set_k
    inner, set_k = make()
    ci = ember.compile(inner)
    ci(x)
    ci(x)
    set_k(7.0)
    assert ci(x).tolist() == [7.0, 7.0]


def test_assigning_a_variable_or_module_attribute_inside_the_call_is_a_break():
    global _CALLS
    _CALLS = 0

    def counts(t):
        global _CALLS
        _CALLS += 1
        return t * _CALLS
    cf = ember.compile(counts)
    assert [cf(ember.ones(1)).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert "assigned inside the call: _CALLS" in cf.breaks[0].reason

    class Counter(nn.Module):
        def forward(self, t):
            self.calls = getattr(self, "calls", 0) + 1
            return t * self.calls
    counter = Counter()
    cg = ember.compile(lambda t: counter(t))  # a module the compiled function calls, not owns
    assert [cg(ember.ones(1)).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert "Counter.calls" in cg.breaks[0].reason


_GLOBAL_FACTOR = 3.0
_CALLS = 0


def test_a_tensor_passed_twice_is_keyed_apart_from_two_tensors():
    def f(x, y):
        return x * 2 + y * 10

    cf = ember.compile(f)
    a, b = ember.ones(2), ember.full((2,), 5.0)
    for args in ((a, a), (a, b), (b, a), (b, b), (a, a)):
        assert ember.equal(cf(*args), f(*args))  # a capture of f(a, a) read one input for both
    assert len(cf.programs()) == 2

    w = ember.ones(3, requires_grad=True)
    cw = ember.compile(lambda p, q: (p * q).sum())
    for _ in range(3):
        w.grad = None
        cw(w, w).backward()
        assert w.grad.tolist() == [2.0, 2.0, 2.0]


_SHARED = ember.full((2,), 2.0)


def test_an_argument_that_is_also_a_global_tensor_replays_only_for_that_tensor():
    cf = ember.compile(lambda x: x * _SHARED)
    other = ember.ones(2)
    for x in (_SHARED, other, _SHARED, other):  # the capture on _SHARED read one input for both
        assert ember.equal(cf(x), x * _SHARED)
    assert len(cf.programs()) == 2


def test_size_and_numpy_scalar_arguments_are_keyed_by_value():
    reshape = ember.compile(lambda x, s: x.reshape(s))
    scale = ember.compile(lambda x, k: x * k)
    x = ember.arange(6.0)
    for _ in range(3):  # new Size / numpy scalar objects with the same value: one program each
        assert reshape(x, ember.Size([2, 3])).shape == (2, 3)
        assert scale(x, np.float32(2.0)).tolist() == (x * 2.0).tolist()
    assert len(reshape.programs()) == 1 and len(scale.programs()) == 1
    assert reshape(x, ember.Size([3, 2])).shape == (3, 2)
    assert scale(x, np.float32(3.0)).tolist() == (x * 3.0).tolist()


class _Trainer:
    def __init__(self):
        self.lr = 0.1

    @ember.compile
    def update(self, x):
        return x * self.lr

    @ember.compile
    def bump(self, x):
        self.calls = getattr(self, "calls", 0) + 1
        return x * self.calls


def test_attributes_of_objects_passed_by_identity_are_guarded():
    trainer, x = _Trainer(), ember.ones(2)
    trainer.update(x)
    trainer.update(x)
    trainer.lr = 0.5  # a compiled method reading self.lr: the replay must not keep 0.1
    assert trainer.update(x).tolist() == [0.5, 0.5]
    assert [trainer.bump(x)[0].item() for _ in range(3)] == [1.0, 2.0, 3.0]  # added inside: a break

    cf = ember.compile(lambda t, o: t + 1)
    for _ in range(3):
        cf(x, _EMPTY)  # an object without attributes: its (empty) state guard passes
    assert len(cf.programs()) == 1


class _EmptyObject:
    pass


_EMPTY = _EmptyObject()


def test_a_compiled_module_with_forward_hooks_runs_eagerly_while_it_has_them():
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    cm = ember.compile(m)
    x = ember.ones(1, 2)
    cm(x)
    cm(x)
    seen = []
    handle = m[0].register_forward_hook(lambda mod, args, out: seen.append(out.detach()))
    for _ in range(4):
        assert ember.equal(cm(x), m(x))  # (each line runs the hook twice: compiled and eager)
    assert len(seen) == 8 and len(_programs(cm)) == 1  # every call ran the hook; nothing captured
    handle.remove()
    cm(x)
    assert len(seen) == 8 and len(_programs(cm)) == 1  # the first program replays again
