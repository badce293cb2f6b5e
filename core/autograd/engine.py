"""The backward engine: dependency-counted execution of the graph, latest node first."""
from __future__ import annotations

import heapq
import threading
import warnings

from .. import _hoststep, _state, ops
from .._tensor import Tensor
from .._graph import AccumulateGrad, edge_of
from ..ops.reduction import sum_to_shape

_grad = _state.grad


class _Callbacks(threading.local):
    def __init__(self) -> None:
        self.stack: list = []  # one list per backward pass running in this thread (innermost last)
        self.whole: list = []  # per pass: whether it runs the whole graph (no ``inputs=``, not ``grad()``)


_callbacks = _Callbacks()


def queue_callback(callback) -> None:
    """Run ``callback()`` once the backward pass now running has finished (call it from a hook or
    a backward function); PyTorch's ``Variable._execution_engine.queue_callback``. DDP waits for
    its gradient all-reduces this way."""
    if not _callbacks.stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    rec = _hoststep.recorder[0]
    if rec is not None and not rec.depth:
        rec.brk("a callback queued in a backward pass inside the compiled call")
    _callbacks.stack[-1].append(callback)


def _is_checkpoint_valid() -> bool:
    """False inside a backward pass run for chosen inputs (``grad()``, ``backward(inputs=...)``),
    where a reentrant checkpoint cannot accumulate its gradients (PyTorch's private name)."""
    return not _callbacks.whole or _callbacks.whole[-1]


def _tensors(x, what: str) -> tuple:
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    x = tuple(x)
    for t in x:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected Tensors, got {type(t).__name__}")
    return x


def _make_grads(outputs, grads, create_graph):
    out = []
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} gradients for "
                           f"{len(outputs)} outputs")
    for t, g in zip(outputs, grads):
        if t._storage is None:
            raise RuntimeError("vmap: ember.autograd.grad and backward() can't see through a batched tensor inside "
                               "vmap; use ember.func.grad, ember.func.vjp or ember.func.jacrev inside the vmapped "
                               "function")
        if g is None:
            if not t._requires_grad:
                raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.is_floating_point():
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t._dtype}")
            g = ops.ones_like(t)
        else:
            if not isinstance(g, Tensor):
                g = ops.full_like(t, g)
            if g._shape != t._shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {list(g._shape)} and output[0] has a shape of "
                    f"{list(t._shape)}.")
            if not t._requires_grad:
                raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the leaves (``ember.autograd.backward``)."""
    tensors = _tensors(tensors, "backward")
    grads = _tensors(grad_tensors, "backward") if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) == 1 and len(tensors) > 1 and grads[0] is None:
        grads = (None,) * len(tensors)
    grads = _make_grads(tensors, list(grads), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _tensors(inputs, "backward(inputs=...)") if inputs is not None else None
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    roots = [(edge_of(t), g) for t, g in zip(tensors, grads)]
    capture = None
    if inputs is not None:
        capture = {}
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture[edge_of(t)] = t
    run(roots, retain_graph, create_graph, capture, accumulate=True, user_grads=grad_tensors)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned instead of accumulated."""
    outputs = _tensors(outputs, "grad")
    inputs = _tensors(inputs, "grad")
    if allow_unused is None:
        allow_unused = materialize_grads
    gouts = _tensors(grad_outputs, "grad") if grad_outputs is not None else (None,) * len(outputs)
    gouts = _make_grads(outputs, list(gouts), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault(edge_of(t), t)
    roots = [(edge_of(t), g) for t, g in zip(outputs, gouts)]
    captured = run(roots, retain_graph, create_graph, capture, accumulate=False, user_grads=grad_outputs)
    result = []
    for i, t in enumerate(inputs):
        g = captured.get(edge_of(t))
        if g is None:
            if materialize_grads:
                g = ops.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}) appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior.")
        result.append(g)
    return tuple(result)


def _sum_grads(a, b):
    return a + b


def run(roots, retain_graph, create_graph, capture, accumulate, user_grads=None):
    """Execute the graph from ``roots`` ([((node, nr), grad)]) and return captured gradients."""
    roots = [(e, g) for e, g in roots if e[0] is not None]
    if not roots:
        if capture is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    # dependencies: number of edges into each node from reachable nodes
    deps: dict = {}
    seen = set()
    stack = [e[0] for e, _ in roots]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for nxt, _ in n.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    stack.append(nxt)
    rec = _hoststep.recorder[0]
    if rec is not None:  # ember.compile records this call: the pass becomes part of the recording
        rec.backward_pass(seen, bool(retain_graph), bool(create_graph), _any_hooks(seen))
    # with capture, only nodes that lead to a captured edge run
    needed = None
    if capture is not None:
        cap_nodes = {e[0] for e in capture}
        memo: dict = {}
        # iterative post-order: a node is needed when a captured node is reachable from it
        def reaches(start):
            st = [(start, iter(start.next_functions))]
            path = {start}
            while st:
                node, it = st[-1]
                advanced = False
                for nxt, _ in it:
                    if nxt is None:
                        continue
                    if nxt in memo:
                        if memo[nxt]:
                            memo[node] = True
                        continue
                    if nxt in path:
                        continue
                    st.append((nxt, iter(nxt.next_functions)))
                    path.add(nxt)
                    advanced = True
                    break
                if not advanced:
                    st.pop()
                    path.discard(node)
                    r = memo.get(node, False) or node in cap_nodes
                    memo[node] = r
                    if r and st:
                        memo[st[-1][0]] = True
            return memo[start]
        for e, _ in roots:
            reaches(e[0])
        needed = {n for n, r in memo.items() if r}
    captured: dict = {}
    buffers: dict = {}
    user_storages = set()
    if user_grads is not None:
        for g in _tensors(user_grads, "grad"):
            if g is not None:
                user_storages.add(id(g._storage))
    for e, g in roots:
        buf = buffers.setdefault(e[0], [None] * e[0]._n_outputs())
        buf[e[1]] = g if buf[e[1]] is None else buf[e[1]] + g
    heap = []
    for e, _ in roots:
        n = e[0]
        if deps.get(n, 0) == 0 and (needed is None or n in needed):
            heapq.heappush(heap, (-n._seq, id(n), n))
    queued = {n for _, _, n in heap}
    prev = _grad.enabled
    _grad.enabled = create_graph
    anomaly = _state.anomaly.enabled
    stored_storages = set()
    callbacks: list = []
    _callbacks.stack.append(callbacks)
    _callbacks.whole.append(capture is None)
    try:
        while heap:
            _, _, node = heapq.heappop(heap)
            grads = buffers.pop(node, None)
            if grads is None:
                grads = [None] * node._n_outputs()
            # tensor hooks, retain_grad and captures on this node's outputs
            if node._tensor_hooks:
                for nr, hooks in node._tensor_hooks.items():
                    if grads[nr] is None:
                        continue
                    for h in list(hooks.values()):
                        r = h(grads[nr])
                        if r is not None:
                            grads[nr] = r
            if node._retain:
                for nr, ref in node._retain.items():
                    t = ref()
                    if t is not None and grads[nr] is not None:
                        g = grads[nr]
                        if t._grad is None:
                            t._grad = g.clone() if create_graph else g.detach().clone()
                        elif create_graph:
                            t._grad = t._grad + g
                        else:
                            t._grad.add_(g.detach())
            if capture is not None:
                for nr in range(len(grads)):
                    key = (node, nr)
                    if key in capture and not isinstance(node, AccumulateGrad):
                        t = capture[key]
                        g = grads[nr]
                        if accumulate:
                            _accumulate_into(t, g, create_graph, stored_storages, user_storages)
                        else:
                            captured[key] = g
            if isinstance(node, AccumulateGrad):
                g = grads[0]
                t = node.variable
                if t._hooks:
                    for h in list(t._hooks.values()):
                        r = h(g)
                        if r is not None:
                            g = r
                if capture is not None:
                    if (node, 0) in capture:
                        if accumulate:
                            _accumulate_into(t, g, create_graph, stored_storages, user_storages)
                        else:
                            captured[(node, 0)] = g
                elif accumulate:
                    _accumulate_into(t, g, create_graph, stored_storages, user_storages)
                continue
            if needed is not None and not any(nxt in needed for nxt, _ in node.next_functions):
                continue  # captured here, nothing further is needed
            if node._pre_hooks:
                for h in list(node._pre_hooks.values()):
                    r = h(tuple(grads))
                    if r is not None:
                        grads = list(r)
            if all(g is None for g in grads):
                in_grads = (None,) * len(node.next_functions)
            else:
                if any(g is None for g in grads):
                    grads = _materialize(node, grads)
                try:
                    in_grads = node._apply(grads, create_graph)
                except Exception as exc:
                    if anomaly and node._trace:
                        _report_anomaly(node, exc)
                    raise
                if len(in_grads) != len(node.next_functions):
                    raise RuntimeError(
                        f"function {node.name()} returned an incorrect number of gradients (expected "
                        f"{len(node.next_functions)}, got {len(in_grads)})")
            if node._hooks:
                for h in list(node._hooks.values()):
                    r = h(tuple(in_grads), tuple(grads))
                    if r is not None:
                        in_grads = tuple(r)
            if not retain_graph:
                node._release()
            metas = node.in_meta
            for i, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = in_grads[i]
                if needed is not None and nxt not in needed:
                    continue
                if g is not None:
                    shape, dt = metas[i]
                    if g._shape != shape:
                        g = sum_to_shape(g, shape, node.name())
                    if g._dtype is not dt:
                        # a complex gradient reaching a real input: its real part (as PyTorch)
                        g = (g.real if g._dtype.is_complex and not dt.is_complex else g).to(dt)
                    if anomaly and _state.anomaly.check_nan and g.is_floating_point():
                        if bool(g.isnan().any()):
                            raise RuntimeError(
                                f"Function '{node.name()}' returned nan values in its {i}th output."
                                + _forward_trace(node))
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * nxt._n_outputs()
                    buf[nr] = g if buf[nr] is None else _sum_grads(buf[nr], g)
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0 and nxt not in queued:
                    queued.add(nxt)
                    heapq.heappush(heap, (-nxt._seq, id(nxt), nxt))
        while callbacks:  # queued during this pass, in order (a callback may queue another)
            callbacks.pop(0)()
    finally:
        _callbacks.stack.pop()
        _callbacks.whole.pop()
        _grad.enabled = prev
    return captured


def _any_hooks(nodes) -> bool:
    """Whether a python hook will run when the pass executes ``nodes``."""
    for n in nodes:
        if n._pre_hooks or n._hooks or n._tensor_hooks:
            return True
        if isinstance(n, AccumulateGrad):
            t = n.variable
            if t._hooks or (hasattr(t, "__dict__") and t.__dict__.get("_post_accumulate_hooks")):
                return True
    return False


def _materialize(node, grads):
    """Zero gradients for outputs that received none (multi-output nodes)."""
    metas = getattr(node, "out_meta", None)
    if metas is None or not getattr(getattr(node, "op", None), "materialize", True):
        return grads
    out = list(grads)
    for i, g in enumerate(out):
        if g is None and metas[i] is not None:
            shape, dt, dev = metas[i]
            out[i] = ops.zeros(shape, dtype=dt, device=dev)
    return out


def _accumulate_into(t, g, create_graph, stored, user_storages):
    """``t.grad += g`` with PyTorch's rules: the first gradient is stored (copied when it may be
    shared with another tensor), later ones are added in place (out of place with create_graph)."""
    if g is None:
        return
    if t._grad is None:
        if create_graph:
            t._grad = g
        else:
            sid = id(g._storage)
            if (g._base is not None or sid in stored or sid in user_storages or not g.is_contiguous()
                    or g._requires_grad):
                g = g.detach().clone()
            stored.add(id(g._storage))
            t._grad = g
    elif create_graph or t._grad._requires_grad:
        t._grad = t._grad + g
    elif g.is_sparse or t._grad.is_sparse:  # sparse gradients (embedding(sparse=True)) add out of place
        t._grad = t._grad + g if g.is_sparse and t._grad.is_sparse else \
            (t._grad.to_dense() if t._grad.is_sparse else t._grad) + (g.to_dense() if g.is_sparse else g)
    else:
        t._grad.add_(g)
    hooks = t.__dict__.get("_post_accumulate_hooks") if hasattr(t, "__dict__") else None
    if hooks:
        for h in list(hooks.values()):
            h(t)


def _forward_trace(node) -> str:
    if node._trace:
        return "\nTraceback of forward call that caused the error:\n" + "".join(node._trace)
    return ""


def _report_anomaly(node, exc):
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                  + "".join(node._trace), RuntimeWarning, stacklevel=3)
