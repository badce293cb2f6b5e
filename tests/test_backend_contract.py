"""The backend contract as docs/backends.md and ember.ops.primitives state it, where a rule can be
tested outside the conformance suite: the primitives' signatures are the arguments the core
really passes (traced on the primitives-only backend, where every other op decomposes into
them), including which primitives never see bool; a backend that declares no optional
capability gets the documented defaults; the generator protocol of BackendGenerator; the
storage's backend-owned slot; the coverage table in a fresh process."""
import ast
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.backend import Backend, BackendGenerator, UntypedStorage, contiguous_strides, make_tensor
from ember.ops.primitives import GROUPS, IN_PLACE, PRIMITIVES, SIGNATURES, arity
from ember.testing import registered_plugin
from ember.testing.helpers import check_once

# -- ember.ops.primitives: the data ----------------------------------------------------------------


def test_every_primitive_has_one_exact_signature():
    assert list(SIGNATURES) == list(PRIMITIVES)
    assert sum(len(g) for g in GROUPS.values()) == len(PRIMITIVES) == len(set(PRIMITIVES))
    for name, sig in SIGNATURES.items():
        assert sig.startswith(name + "("), sig
    assert set(IN_PLACE) == {"copy_", "fill_", "uniform_", "normal_"}
    assert {n: arity(n) for n in ("copy_", "neg", "add", "where", "sum", "argmax", "argmin", "cumsum", "gather",
                                  "scatter_add", "nonzero", "sort", "uniform_")} == {
        "copy_": 2, "neg": 1, "add": 2, "where": 3, "sum": 3, "argmax": 3, "argmin": 3, "cumsum": 2, "gather": 3,
        "scatter_add": 4, "nonzero": 1, "sort": 4, "uniform_": 4}


# -- the signatures are what the core passes ---------------------------------------------------------

# the primitives the front ends never pass a bool tensor (ember.ops.primitives says so)
NEVER_BOOL = {"neg", "abs", "sign", "exp", "log", "sin", "cos", "tanh", "sqrt", "erf", "floor", "ceil", "round",
              "trunc", "sub", "div", "pow", "fmod", "atan2", "sum", "prod", "cumsum", "argmax", "argmin", "sort",
              "matmul", "uniform_", "normal_"}


def _bool_workload(dev):
    """Ops on bool tensors: whatever reaches a primitive must be allowed there."""
    a = ember.tensor([[True, False, True], [False, False, True]], device=dev)
    b = ember.tensor([True, True, False], device=dev)
    for f in (lambda: a + b, lambda: a * b, lambda: a + True, lambda: a.sum(), lambda: a.sum(1, keepdim=True),
              lambda: a.prod(), lambda: a.cumsum(1), lambda: a.max(1), lambda: a.min(0), lambda: a.sort(1),
              lambda: a.amax(1), lambda: a.amin(), lambda: a.max(), lambda: ember.maximum(a, b),
              lambda: ember.minimum(a, b), lambda: a == b, lambda: a < b, lambda: a & b, lambda: a | b, lambda: a ^ b,
              lambda: ~a, lambda: ember.logical_xor(a, b), lambda: ember.where(a, a, b), lambda: a.nonzero(),
              lambda: a.float(), lambda: a.to(ember.int64),
              lambda: ember.gather(a, 1, ember.tensor([[0], [2]], device=dev)),
              lambda: ember.scatter_add(a, 1, ember.tensor([[0], [2]], device=dev), a[:, :1]), lambda: a.sign(),
              lambda: a.exp(), lambda: a.sqrt(), lambda: a.mean(dtype=ember.float32), lambda: a.any(), lambda: a.all(),
              lambda: a.count_nonzero(), lambda: ember.zeros(3, dtype=ember.bool, device=dev).fill_(True),
              lambda: a.clone(), lambda: a.t().contiguous(), lambda: a.pow(True), lambda: a / b,
              lambda: ember.topk(a.to(ember.uint8), 1)):
        f()
    for refused in (lambda: a - b, lambda: -a, lambda: a.abs(), lambda: a @ b, lambda: ember.fmod(a, b),
                    lambda: a.floor()):
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            refused()


def test_the_core_passes_the_primitives_their_documented_arguments(prim_backend):
    """Every call the core makes to a primitive kernel (on a backend with nothing else, so every
    decomposition runs) has the arity of SIGNATURES, no keyword but out=, dims as documented,
    and no bool tensor where the contract says the front ends never pass one."""
    from ember.testing.suite.optable import COMPOSITE_CASES, PRIMITIVE_CASES
    from ember.testing.suite.optable_math import MATH_CASES
    from ember.testing.suite.optable_reduce import REDUCE_CASES
    from ember.testing.suite.optable_shape import SHAPE_CASES

    dev = prim_backend
    be = ember.backend.backend_for("prim")
    calls = {name: [] for name in PRIMITIVES}
    originals = {name: be.kernels[name] for name in PRIMITIVES}

    def recorder(name, kernel):
        def k(*args, **kwargs):
            calls[name].append((args, kwargs))
            return kernel(*args, **kwargs)
        return k

    for name, kernel in originals.items():
        be.kernels[name] = recorder(name, kernel)
    try:
        for case in PRIMITIVE_CASES + COMPOSITE_CASES + MATH_CASES + REDUCE_CASES + SHAPE_CASES:
            for dt in case.dtypes:
                if be.supports_dtype(dt):
                    check_once(case.fn, case.ref, case.specs, device=dev, dtype=dt, name=case.name, kwargs=case.kwargs)
        _bool_workload(dev)
        x = ember.randn(4, 5, device=dev)
        ember.rand(3, device=dev), ember.randint(0, 9, (4,), device=dev), ember.randperm(6, device=dev)
        ember.nn.functional.dropout(x, 0.5, training=True)
        x.uniform_(-1, 1), x.t().normal_(), x[:, 1:].uniform_()
    finally:
        for name, kernel in originals.items():
            be.kernels[name] = kernel

    problems = []
    for name, seen in calls.items():
        n = arity(name)
        for args, kwargs in seen:
            where = f"{name}{tuple(type(a).__name__ for a in args)} {kwargs or ''}"
            if len(args) != n or set(kwargs) - {"out"}:
                problems.append(f"{where}: expected {SIGNATURES[name]}")
            tensors = [a for a in args if isinstance(a, ember.Tensor)]
            if name in NEVER_BOOL and any(t.dtype is ember.bool for t in tensors):
                problems.append(f"{where}: a bool tensor reached a primitive that never gets one")
            if name in ("sum", "prod", "amax", "amin"):
                dims, keepdim = args[1], args[2]
                if not (isinstance(dims, tuple) and list(dims) == sorted(set(dims)) and isinstance(keepdim, bool)
                        and all(0 <= d < max(args[0].dim(), 1) for d in dims)):
                    problems.append(f"{where}: dims {dims!r}, keepdim {keepdim!r}")
            if name in ("argmax", "argmin"):
                dim, keepdim = args[1], args[2]
                if not (isinstance(keepdim, bool) and (dim is None and keepdim is False or
                                                       isinstance(dim, int) and 0 <= dim < args[0].dim())):
                    problems.append(f"{where}: dim {dim!r}, keepdim {keepdim!r}")
            if name in ("uniform_", "normal_") and not (args[0].is_contiguous() and args[0].is_floating_point()):
                problems.append(f"{where}: the target must be a contiguous floating tensor")
            if name in ("gather", "scatter_add") and args[2].dtype is not ember.int64:
                problems.append(f"{where}: index of dtype {args[2].dtype}")
    assert not problems, "\n".join(sorted(set(problems))[:40])
    unused = [name for name, seen in calls.items() if not seen]
    assert not unused, f"the workload never reached {unused}"


# -- a backend that declares no optional capability -------------------------------------------------

NUMPY = {ember.bool: np.bool_, ember.int64: np.int64, ember.float32: np.float32, ember.float64: np.float64}


def _nd(t):
    isz = t.element_size()
    return np.ndarray(t.shape, NUMPY[t.dtype], t.untyped_storage()._data, t.storage_offset() * isz,
                      [s * isz for s in t.stride()])


def _result(a, dtype, device):
    a = np.array(a, dtype=NUMPY[dtype], order="C")
    return make_tensor(UntypedStorage(a.reshape(-1).view(np.uint8), a.nbytes, device), a.shape,
                       contiguous_strides(a.shape), 0, dtype, device)


class StreamGenerator(BackendGenerator):
    """The seeding protocol is the base class's: reset, get_state and set_state are the stream's."""

    def reset(self, seed):
        self.rng = np.random.default_rng(seed)

    def get_state(self):
        return np.frombuffer(repr((self._seed, self.rng.bit_generator.state)).encode(), np.uint8).copy()

    def set_state(self, state):
        self._seed, st = ast.literal_eval(bytes(np.asarray(state, np.uint8)).decode())
        self.rng.bit_generator.state = st


def _uniform_(t, low, high, gen):
    _nd(t)[...] = gen.rng.uniform(low, high, t.shape)
    return t


class BareBackend(Backend):
    """Runtime verbs and a few kernels; no optional capability."""

    KERNELS = {"copy_": lambda d, s: (np.copyto(_nd(d), _nd(s), casting="unsafe"), d)[1],
               "fill_": lambda d, v: (_nd(d).fill(v), d)[1],
               "add": lambda a, b: _result(_nd(a) + (_nd(b) if isinstance(b, ember.Tensor) else b), a.dtype, a.device),
               "uniform_": _uniform_}
    dtypes = frozenset(d.name for d in NUMPY)

    def empty(self, shape, dtype, device):
        return _result(np.empty(shape, NUMPY[dtype]), dtype, device)

    def from_numpy(self, array, device, non_blocking=False):
        return _result(array, ember.backend.dtype_from_numpy(array.dtype), device)

    def to_numpy(self, tensor):
        return _nd(tensor).copy()

    def create_generator(self, device):
        return StreamGenerator()


sys.modules.setdefault("ember_test_bare_backend", sys.modules[__name__])


class BareHooks:
    @ember.hookimpl
    def ember_register_backends(self, register):
        register("bare", "bare", "ember_test_bare_backend:BareBackend", dtypes=sorted(d.name for d in NUMPY))


@pytest.fixture
def bare():
    with registered_plugin(BareHooks(), name="bare-backend"):
        yield ember.device("bare")


def test_a_backend_without_optional_capabilities_gets_the_defaults(bare):
    be = ember.backend.backend_for("bare")
    t = ember.tensor([1.0, 2.0], device=bare)
    assert be.supports_pinning is False and be.cuda_api is None
    with pytest.raises(NotImplementedError, match="backend 'bare' does not pin host memory"):
        be.pin_memory(t)
    assert be.is_pinned(t) is False and t.is_pinned() is False
    assert t.pin_memory() is t  # not cpu, not pinnable: the tensor itself, as documented
    assert be.get_num_threads() is None and be.set_num_threads(2) is None
    assert be.to_dlpack(t) is None and be.dlpack_device(t) is None and be.from_dlpack(object(), 1, 0) is None
    with pytest.raises(BufferError, match="backend 'bare'"):
        t.__dlpack__()
    with pytest.raises(BufferError, match="backend 'bare'"):
        t.__dlpack_device__()
    assert be.memory_stats(bare) == {} and be.empty_cache() is None and be.empty_cache(bare) is None
    assert be.availability() == (True, "") and be.device_count() == 1 and be.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device index 1"):
        be.set_device(1)
    assert be.data_ptr(t.untyped_storage()) == 0 and t.data_ptr() == 0


def test_a_missing_primitive_names_the_backend_and_the_contract(bare):
    be = ember.backend.backend_for("bare")
    with pytest.raises(NotImplementedError, match=r"erf: backend 'bare' \(device type 'bare'\) .*ember.ops.primitives"):
        be.kernels["erf"]
    assert be.kernels.get("erf") is None
    with pytest.raises(NotImplementedError, match="exp: backend 'bare'"):
        ember.tensor([1.0], device=bare).exp()
    x = ember.zeros(3, device=bare) + 2  # fill_ (zeros), add
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_a_backend_generator_subclass_serves_ember_generator(bare):
    g = ember.Generator(bare)
    assert g.initial_seed() == ember.backend.DEFAULT_SEED
    a = ember.rand(4, device=bare, generator=g.manual_seed(7)).tolist()
    state = g.get_state()
    b = ember.rand(4, device=bare, generator=g).tolist()
    assert ember.rand(4, device=bare, generator=g.manual_seed(7)).tolist() == a and g.initial_seed() == 7
    g.set_state(state)
    assert ember.rand(4, device=bare, generator=g).tolist() == b and g.initial_seed() == 7
    s = g.seed()
    assert 0 <= s < 2 ** 63 and g.initial_seed() == s
    ember.manual_seed(3)  # seeds every loaded device's default generator
    first = ember.rand(2, device=bare).tolist()
    ember.manual_seed(3)
    assert ember.rand(2, device=bare).tolist() == first


# -- storages -------------------------------------------------------------------------------------

def test_storages_have_a_backend_owned_slot_and_no_other_attributes():
    assert "backend_state" in UntypedStorage.__slots__ and "__dict__" not in UntypedStorage.__slots__
    x = ember.arange(6.0)
    s = x.untyped_storage()
    assert s.backend_state is None and (x + 1).untyped_storage().backend_state is None
    assert ember.empty(3).untyped_storage().backend_state is None
    s.backend_state = {"donatable": False}  # the backend's to use; the core never reads it
    assert x[2:].untyped_storage().backend_state == {"donatable": False}  # views share the storage object
    with pytest.raises(AttributeError):
        s.anything_else = 1  # __slots__: backend_state is the place for a backend's own data
    s.backend_state = None


def test_a_backend_may_rebind_a_storages_data():
    """Copy-on-write backends replace ``storage._data`` on a write; every view follows because
    views share the storage object (cached ``_native`` views are the backend's to invalidate)."""
    x = ember.arange(4.0)
    v = x[1:3]
    s = x.untyped_storage()
    fresh = np.array([10, 11, 12, 13], dtype=np.float32).view(np.uint8)
    s._data = fresh  # what cpu_numpy's nd() reads; its cached views (t._native) now describe the old buffer
    for t in (x, v):
        t._native = None  # a rebinding backend checks its cache against _data; here it is simply dropped
    assert x.tolist() == [10, 11, 12, 13] and v.tolist() == [11, 12]


# -- the coverage table ----------------------------------------------------------------------------

def test_coverage_table_works_in_a_fresh_process_before_any_tensor():
    code = textwrap.dedent("""
        from ember.testing.pytest_plugin import coverage_table
        print(coverage_table("cpu_numpy").splitlines()[0])
        try:
            coverage_table("no-such-backend")
        except KeyError as e:
            print("KeyError", e)
    """)
    env = {k: v for k, v in os.environ.items() if k != "EMBER_DISABLE_PLUGINS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    first, err = r.stdout.splitlines()[:2]
    assert first.startswith("ember op coverage on backend 'cpu_numpy' (device type 'cpu'): "), r.stdout
    assert "no backend named 'no-such-backend'" in err and "cpu_numpy" in err


def test_the_signatures_are_documented_in_the_guide():
    text = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "backends.md")).read()
    for word in ("deferred_errors", "backend_state", "_native", "ember.bfloat16.np", "BackendGenerator", "[test]",
                 "supports_pinning", "data_ptr", "view(dtype)", "set_", "int64", "float64"):
        assert word in text, f"docs/backends.md does not mention {word}"


def test_deferred_errors_skip_the_host_side_index_checks(monkeypatch):
    """A backend declaring deferred_errors gets no host read of the indices from the core (the
    front ends wrap negative ones on the device); its kernels report indices out of range."""
    be = ember.backend.backend_for("cpu")
    x = ember.arange(12.0).reshape(3, 4)
    idx = ember.tensor([[0, 3], [1, -1]])
    monkeypatch.setattr(type(be), "deferred_errors", True)

    def no_host_read(self):
        raise AssertionError("the core read a tensor on the host")

    with monkeypatch.context() as m:
        m.setattr(ember.Tensor, "item", no_host_read)
        assert x.gather(1, idx.clamp(min=0)).tolist() == [[0.0, 3.0], [5.0, 4.0]]
        assert x[ember.tensor([-1, 0])].tolist() == [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
        assert x.index_select(1, ember.tensor([3, 0])).tolist() == [[3.0, 0.0], [7.0, 4.0], [11.0, 8.0]]
    with pytest.raises(IndexError, match="out of bounds"):  # the cpu kernels check for themselves
        x.gather(1, ember.tensor([[0, 7], [0, 0], [0, 0]]))
