"""Per-op test helpers shared by the conformance suite and plugin authors.

Everything compares an ember result, computed on the device under test, with a numpy float64
reference computed from the same input values, on contiguous and non-contiguous inputs, and
prints a runnable repro when they differ.
"""
from __future__ import annotations

import ast
import functools
import linecache
import re
import sys

import numpy as np

import ember
from ember import _dtype as D
from .. import _devices
from . import compile_check as CC


def _as_device(device):
    return device if isinstance(device, ember.device) else ember.device(device)


def backend_for(device):
    return _devices.canonical(device)._backend


def backend_tolerance(device, dtype) -> tuple:
    """``(rtol, atol)`` the backend declares for ``dtype`` (``Backend.tolerances``)."""
    be = backend_for(device)
    return be.tolerances.get(D.to_dtype(dtype).name, (1e-5, 1e-6))


def supports(device, dtype) -> bool:
    return backend_for(device).supports_dtype(D.to_dtype(dtype))


def make_tensor(shape, dtype=ember.float32, device="cpu", *, low=None, high=None, seed=0, requires_grad=False,
                layout="contiguous", exclude_zero=False):
    """A tensor of random values for tests, built on the host with numpy (reproducible per seed)
    and placed on ``device`` with the given ``layout`` (see :func:`layouts`)."""
    dtype = D.to_dtype(dtype)
    arr = random_array(shape, dtype, low=low, high=high, seed=seed, exclude_zero=exclude_zero)
    return to_device_with_layout(arr, dtype, device, layout, requires_grad)


SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def random_array(shape, dtype, *, low=None, high=None, seed=0, exclude_zero=False, special=False) -> np.ndarray:
    """Reproducible random values of ``dtype``: ints in [-9, 10) (or [low, high)), floats in
    [-3, 3); ``special`` puts NaN, +-inf and +-0.0 at every third position of a float array."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    if dtype is D.bool:
        return rng.random(shape) > 0.5
    if dtype.category == D._INT:
        info = np.iinfo(dtype.np)
        lo = max(info.min, -9 if low is None else int(low))
        hi = min(info.max, 10 if high is None else int(high))
        a = rng.integers(lo, hi, size=shape, endpoint=False).astype(dtype.np)
        if exclude_zero:
            a[a == 0] = 1
        return a
    lo = -3.0 if low is None else float(low)
    hi = 3.0 if high is None else float(high)
    if dtype.category == D._COMPLEX:  # real and imaginary parts each in [low, high)
        part = D.to_real(dtype)
        kw = dict(low=low, high=high, exclude_zero=exclude_zero, special=special)
        return random_array(shape, part, seed=seed, **kw) + 1j * random_array(shape, part, seed=seed + 7919, **kw)
    a = rng.uniform(lo, hi, size=shape)
    if exclude_zero:
        a[np.abs(a) < 1e-2] = 0.5
    if special and a.size:
        flat = a.reshape(-1)
        pos = np.arange(0, flat.size, 3)
        flat[pos] = np.resize(np.array(SPECIALS), pos.size)
    return a.astype(np.float64)


LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def layouts(ndim: int) -> tuple:
    """The layouts that make sense for a tensor of ``ndim`` dims."""
    if ndim == 0:
        return ("contiguous",)
    if ndim == 1:
        return ("contiguous", "sliced", "expanded")
    return LAYOUTS


def to_device_with_layout(arr: np.ndarray, dtype, device, layout="contiguous", requires_grad=False):
    """Put host values ``arr`` on ``device`` as a tensor with the requested memory layout and the
    same logical values: 'transposed' (a .mT / flipped-strides view), 'sliced' (every other
    element of a larger buffer), 'expanded' (a stride-0 broadcast of the first row when all rows
    are equal, as :func:`reference_inputs` makes them; otherwise a select of an expanded tensor)."""
    dev = _as_device(device)
    host = np.asarray(arr)
    if layout == "contiguous" or host.ndim == 0:
        t = ember.tensor(host, dtype=dtype, device=dev)
    elif layout == "transposed":
        if host.ndim < 2:
            t = ember.tensor(host, dtype=dtype, device=dev)
        else:
            t = ember.tensor(np.ascontiguousarray(np.swapaxes(host, -1, -2)), dtype=dtype, device=dev).transpose(-1, -2)
    elif layout == "sliced":
        big_shape = host.shape[:-1] + (host.shape[-1] * 2,)
        big = np.zeros(big_shape, dtype=host.dtype)
        big[..., ::2] = host
        t = ember.tensor(big, dtype=dtype, device=dev)[..., ::2]
    elif layout == "expanded":
        if host.shape and host.shape[0] > 1 and (host == host[:1]).all():
            t = ember.tensor(host[:1], dtype=dtype, device=dev).expand(host.shape)  # stride 0 along dim 0
        else:
            row = ember.tensor(host, dtype=dtype, device=dev).unsqueeze(0).expand((2,) + host.shape)
            t = row[1]
    else:
        raise ValueError(f"unknown layout {layout!r}")
    if requires_grad:
        t = t.detach().requires_grad_(True) if layout == "contiguous" else _grad_view(t)
    return t


def _grad_view(t):
    # a non-contiguous leaf that requires grad: make the view's base the leaf
    base = t._base if t._base is not None else t
    base = base.detach().requires_grad_(True)
    v = ember.as_strided(base, t.shape, t.stride(), t.storage_offset())
    return v


def to_numpy64(t) -> np.ndarray:
    # through the tensor's own backend: the suite must run where no cpu backend is installed
    a = t.detach().numpy(force=True)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a


def _values_src(a: np.ndarray) -> str:
    """A python literal for ``a``'s values (NaN and infinities spelled so that they parse)."""
    src = repr(a.tolist())
    return re.sub(r"\b(nan|inf)\b", lambda m: f"float('{m.group(1)}')", src)


def tensor_source(name: str, x, device) -> str:
    """A line rebuilding tensor ``x`` exactly: its values, dtype, device, and for a view its
    strides and storage offset over the same underlying buffer."""
    dev = str(device)
    base = x._base if x._base is not None else x
    if x.is_contiguous() and x.storage_offset() == 0 and x._base is None:
        return f"{name} = ember.tensor({_values_src(to_numpy64(x))}, dtype=ember.{x.dtype.name}, device='{dev}')"
    if base.is_contiguous() and base.storage_offset() == 0:
        flat = _values_src(to_numpy64(base).reshape(-1))
        return (f"{name} = ember.as_strided(ember.tensor({flat}, dtype=ember.{x.dtype.name}, device='{dev}'), "
                f"{tuple(x.shape)}, {tuple(x.stride())}, {x.storage_offset()})")
    vals = _values_src(to_numpy64(x))
    return f"{name} = ember.tensor({vals}, dtype=ember.{x.dtype.name}, device='{dev}')  # was strided {x.stride()}"


@functools.lru_cache(maxsize=32)
def _module_ast(filename: str):
    src = "".join(linecache.getlines(filename))
    return src, ast.parse(src)


def _lambda_source(f) -> str | None:
    """The source text of lambda ``f`` (found in its file's syntax tree by position)."""
    code = f.__code__
    try:
        src, tree = _module_ast(code.co_filename)
    except (OSError, SyntaxError, ValueError):
        return None
    candidates = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda)
                  and node.lineno <= code.co_firstlineno <= node.end_lineno]
    if not hasattr(code, "co_positions"):  # Python 3.10: no column positions; compare the bytecode
        same = [n for n in candidates if _compiles_to(ast.get_source_segment(src, n), code)]
        return ast.get_source_segment(src, same[-1]) if same else None
    # the positions of the lambda's instructions (the first, RESUME, points at the lambda itself)
    pos = [(ln, col) for ln, _, col, _ in code.co_positions() if ln is not None and col is not None][1:]
    best = None
    for node in candidates:
        b = node.body
        if any((b.lineno, b.col_offset) <= p <= (b.end_lineno, b.end_col_offset) for p in pos):
            if best is None or (node.lineno, node.col_offset) > (best.lineno, best.col_offset):
                best = node  # the innermost lambda holding the code
    return ast.get_source_segment(src, best) if best is not None else None


def _compiles_to(text: str, code) -> bool:
    """Whether lambda source ``text`` compiles to the bytecode of ``code`` (names and constants
    included)."""
    try:
        outer = compile(text, code.co_filename, "eval")
    except SyntaxError:
        return False
    inner = [c for c in outer.co_consts if hasattr(c, "co_code")]
    return any(c.co_code == code.co_code and c.co_names == code.co_names and c.co_varnames == code.co_varnames
               and [k for k in c.co_consts if not hasattr(k, "co_code")]
               == [k for k in code.co_consts if not hasattr(k, "co_code")] for c in inner)


def callable_source(f) -> tuple:
    """``(expression, module)``: python text naming or defining callable ``f``, and the module
    whose names the text may use (None when it needs only ember and numpy)."""
    if isinstance(f, np.ufunc):
        return f"np.{f.__name__}", None
    name = getattr(f, "__name__", None)
    mod = getattr(f, "__module__", None)
    if name == "<lambda>":
        src = _lambda_source(f)
        if src is not None:
            return src, mod
    if name and getattr(ember, name, None) is f:
        return f"ember.{name}", None
    if name and getattr(np, name, None) is f:
        return f"np.{name}", None
    mod_obj = sys.modules.get(mod or "")
    for k, v in vars(mod_obj).items() if mod_obj is not None else ():
        if v is f:
            return k, mod
    return repr(f), None


def repro(fn_name: str, inputs, device, extra: str = "", *, fn=None, ref=None, kwargs=None, rtol=None,
          atol=None, gradcheck: bool = False) -> str:
    """Runnable python source that rebuilds ``inputs`` exactly (values, dtype, device, strides)
    and calls the op: ``fn`` (a callable, printed as its source) or ``fn_name``. With ``ref`` (the
    numpy reference) it also checks the result with :func:`assert_close`; with ``gradcheck`` it
    runs ``ember.autograd.gradcheck`` instead."""
    lines = ["import ember, numpy as np", "from ember.testing.helpers import assert_close, to_numpy64"]
    mods = set()
    call = fn_name
    if fn is not None:
        call, m = callable_source(fn)
        mods.add(m)
    ref_src = None
    if ref is not None:
        ref_src, m = callable_source(ref)
        mods.add(m)
    for m in sorted(x for x in mods if x and x not in ("ember", "numpy", "__main__") and not x.startswith("ember.ops")):
        lines.append(f"import {m} as _case_module; globals().update(vars(_case_module))  # the case's helpers")
    names = []
    for i, x in enumerate(inputs):
        nm = f"x{i}"
        if isinstance(x, ember.Tensor):
            lines.append(tensor_source(nm, x, device))
            if gradcheck and x.requires_grad:
                lines.append(f"{nm} = {nm}.detach().requires_grad_(True)")
        else:
            lines.append(f"{nm} = {x!r}")
        names.append(nm)
    kw = extra or ", ".join(f"{k}={v!r}" for k, v in (kwargs or {}).items())
    lines.append(f"fn = {call}")
    args = ", ".join(names)
    if gradcheck:
        lines.append(f"print(ember.autograd.gradcheck(lambda *xs: fn(*xs{', ' + kw if kw else ''}), "
                     f"({args}{',' if len(names) == 1 else ''})))")
        return "\n".join(lines)
    lines.append(f"out = fn({args}{', ' + kw if kw else ''})")
    lines.append("print(out)")
    if ref_src is not None:
        lines.append(f"ref = {ref_src}")
        hosts = ", ".join(f"to_numpy64({n})" if isinstance(x, ember.Tensor) else n for n, x in zip(names, inputs))
        lines.append(f"expected = ref({hosts}{', ' + kw if kw else ''})")
        lines.append("for o, e in (zip(out, expected) if isinstance(out, (tuple, list)) else [(out, expected)]):")
        lines.append(f"    assert_close(o, e, rtol={rtol!r}, atol={atol!r})")
    return "\n".join(lines)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=True, msg="", check_dtype=None) -> None:
    """Compare an ember tensor (or a number) with a numpy/python reference, with NaN equal."""
    if isinstance(actual, ember.Tensor):
        if check_dtype is not None and actual.dtype is not D.to_dtype(check_dtype):
            raise AssertionError(f"dtype mismatch: got {actual.dtype}, expected {check_dtype}\n{msg}")
        a = to_numpy64(actual)
    else:
        a = np.asarray(actual)
    # an expected tensor may live on a device numpy can't read directly
    e = to_numpy64(expected) if isinstance(expected, ember.Tensor) else np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f"shape mismatch: got {a.shape}, expected {e.shape}\n{msg}")
    if a.dtype == np.bool_ or e.dtype == np.bool_ or a.dtype.kind in "iu" and e.dtype.kind in "iub":
        if not np.array_equal(a, e):
            bad = np.argwhere(a != e)[:5].tolist()
            raise AssertionError(f"values differ at {bad}: got {a.reshape(-1)[:8]}, "
                                 f"expected {e.reshape(-1)[:8]}\n{msg}")
        return
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-8 if atol is None else atol
    wide = np.complex128 if a.dtype.kind == "c" or e.dtype.kind == "c" else np.float64
    ok = np.isclose(a.astype(wide), e.astype(wide), rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not ok.all():
        idx = np.argwhere(~ok)[:5]
        detail = ", ".join(f"{tuple(i)}: {a[tuple(i)]!r} vs {e[tuple(i)]!r}" for i in idx)
        raise AssertionError(f"{(~ok).sum()} of {ok.size} values differ beyond rtol={rtol}, atol={atol} "
                             f"(actual vs expected: {detail})\n{msg}")


def reference_inputs(specs, dtype, device, layout="contiguous", seed=0, requires_grad=False):
    """Tensors for ``specs`` (shapes, or dicts with shape/low/high/dtype) and their float64
    host values."""
    tensors, hosts = [], []
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            spec = {"shape": spec}
        if "value" in spec:  # a non-tensor argument
            tensors.append(spec["value"])
            hosts.append(spec["value"])
            continue
        dt = D.to_dtype(spec.get("dtype", dtype))
        shape = tuple(spec["shape"])
        lay = layout if layout in layouts(len(shape)) else "contiguous"
        if lay == "expanded" and shape and shape[0] > 1:
            # equal rows, so that the tensor can really be a stride-0 broadcast of one row
            arr = random_array((1,) + shape[1:], dt, low=spec.get("low"), high=spec.get("high"), seed=seed + i,
                               exclude_zero=spec.get("exclude_zero", False), special=spec.get("special", False))
            arr = np.broadcast_to(arr, shape).copy()
        else:
            arr = random_array(shape, dt, low=spec.get("low"), high=spec.get("high"), seed=seed + i,
                               exclude_zero=spec.get("exclude_zero", False), special=spec.get("special", False))
        t = to_device_with_layout(arr, dt, device, lay, requires_grad and dt.category >= D._FLOAT)
        tensors.append(t)
        # the reference sees the values as stored in the dtype under test
        hosts.append(to_numpy64(t) if dt.category >= D._FLOAT else np.asarray(arr))
    return tensors, hosts


def check_op(fn, ref, specs, *, device="cpu", dtypes=(ember.float32, ember.float64), layouts_=None, rtol=None,
             atol=None, grad=False, name=None, kwargs=None, seed=0) -> None:
    """Run ``fn(*inputs, **kwargs)`` on ``device`` for each dtype the backend supports and each
    layout, comparing with ``ref(*float64 numpy inputs, **kwargs)``; with ``grad`` also
    gradcheck in float64 (when the backend has it). Raises AssertionError with a repro."""
    kwargs = kwargs or {}
    name = name or getattr(fn, "__name__", "op")
    nd = max((len(s["shape"] if isinstance(s, dict) else s)
              for s in specs if not (isinstance(s, dict) and "value" in s)), default=0)
    for dt in dtypes:
        dt = D.to_dtype(dt)
        if not supports(device, dt):
            continue
        for lay in (layouts_ or layouts(nd)):
            check_once(fn, ref, specs, device=device, dtype=dt, layout=lay, seed=seed, rtol=rtol, atol=atol, name=name,
                       kwargs=kwargs)
    if grad:
        check_grad(fn, specs, device=device, kwargs=kwargs, name=name, seed=seed)


def check_once(fn, ref, specs, *, device, dtype, layout="contiguous", seed=0, rtol=None, atol=None, name="op",
               kwargs=None) -> None:
    """One comparison of ``fn`` with ``ref`` for one dtype and layout (the backend's tolerances
    unless given); raises AssertionError carrying a runnable repro."""
    kwargs = kwargs or {}
    dt = D.to_dtype(dtype)
    r_tol, a_tol = backend_tolerance(device, dt)
    rt, at = rtol if rtol is not None else r_tol, atol if atol is not None else a_tol
    tensors, hosts = reference_inputs(specs, dt, device, layout, seed)
    try:
        if CC.enabled() and not CC.busy():
            rng, before = CC._rng_state(), CC._copy((tensors, kwargs), False, [])
        out = fn(*tensors, **kwargs)
        if CC.enabled() and not CC.busy():
            CC.check_call(fn, before[0], before[1], out, rng=rng, what=f"{name} ({dt.name}, {layout})")
        with np.errstate(all="ignore"):  # references meet NaN and infinities on purpose
            exp = ref(*hosts, **kwargs)
        _compare(out, exp, rt, at, "")
    except Exception as e:
        msg = (f"op {name} on {device}, dtype {dt.name}, layout {layout}: {type(e).__name__}: {e}\nrepro:\n"
               f"{repro('ember.' + name, tensors, device, fn=fn, ref=ref, kwargs=kwargs, rtol=rt, atol=at)}")
        if isinstance(e, AssertionError):
            raise AssertionError(msg) from None
        raise AssertionError(msg) from e  # keep the traceback of an error raised inside ember


def _compare(out, exp, rtol, atol, msg):
    if isinstance(out, (tuple, list)):
        assert isinstance(exp, (tuple, list)) and len(out) == len(exp), f"expected {len(exp)} outputs\n{msg}"
        for o, e in zip(out, exp):
            _compare(o, e, rtol, atol, msg)
        return
    assert_close(out, exp, rtol=rtol, atol=atol, msg=msg)


def check_grad(fn, specs, *, device="cpu", kwargs=None, name=None, seed=0, eps=1e-6, atol=1e-5, rtol=1e-3) -> None:
    """gradcheck of ``fn`` in float64 on ``device`` (skipped when the backend lacks float64)."""
    kwargs = kwargs or {}
    if not supports(device, ember.float64):
        return
    tensors, _ = reference_inputs(specs, ember.float64, device, "contiguous", seed, requires_grad=True)

    def f(*xs):
        return fn(*xs, **kwargs)
    try:
        ember.autograd.gradcheck(f, tuple(tensors), eps=eps, atol=atol, rtol=rtol)
    except Exception as e:
        raise AssertionError(f"gradcheck failed for {name or fn} on {device}: {type(e).__name__}: {e}\nrepro:\n"
                             f"{repro('ember.' + str(name), tensors, device, fn=fn, kwargs=kwargs, gradcheck=True)}") \
            from None


class BackendCase:
    """Declarative description of an op test (the suite's op table holds these)."""

    def __init__(self, name, fn, ref, specs, *, dtypes=(ember.float32, ember.float64), grad=False, kwargs=None,
                 rtol=None, atol=None, layouts_=None, group=""):
        self.name, self.fn, self.ref, self.specs = name, fn, ref, specs
        self.dtypes, self.grad, self.kwargs = dtypes, grad, kwargs or {}
        self.rtol, self.atol, self.layouts_, self.group = rtol, atol, layouts_, group

    def run(self, device):
        check_op(self.fn, self.ref, self.specs, device=device, dtypes=self.dtypes, layouts_=self.layouts_,
                 rtol=self.rtol, atol=self.atol, grad=self.grad, name=self.name, kwargs=self.kwargs)

    def __repr__(self):
        return f"BackendCase({self.name})"
