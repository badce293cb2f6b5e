"""``ember.onnx.export``: trace a model on example inputs and write the ONNX graph of the ops it
ran, with PyTorch 2.13's signature. The ``onnx`` package (the ``ember[onnx]`` extra) builds
and checks the model; it is imported when ``export`` runs."""
from __future__ import annotations

import enum
import inspect
import warnings

from .. import _devices
from .._tensor import Tensor
from .._version import __version__
from ..autograd import no_grad
from ._graph import Graph
from ._trace import Tracer
from .errors import OnnxExporterError

__all__ = ["export", "TrainingMode", "ONNXProgram", "DEFAULT_OPSET", "MIN_OPSET"]

#: the opset written when ``opset_version`` is None (PyTorch 2.13's default), and the oldest one
#: ember writes (LayerNormalization is opset 17's)
DEFAULT_OPSET = 18
MIN_OPSET = 17


class TrainingMode(enum.IntEnum):
    """The mode the model is traced in: EVAL (the default: dropout off, batch norm on its running
    statistics), PRESERVE (as it is), TRAINING (train mode)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class ONNXProgram:
    """The exported model (what ``export`` returns with ``dynamo=True``, its default):
    ``model_proto`` is the ``onnx.ModelProto``; ``save(destination)`` writes it."""

    def __init__(self, model_proto):
        self.model_proto = model_proto

    def save(self, destination) -> None:
        """Write the model to a path or a binary file object."""
        _onnx().save_model(self.model_proto, destination)

    def __repr__(self):
        g = self.model_proto.graph
        return (f"ONNXProgram({len(g.node)} nodes, inputs {[i.name for i in g.input]}, "
                f"outputs {[o.name for o in g.output]})")


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ember.onnx.export needs the onnx package: pip install 'ember[onnx]' (or pip install onnx)"
                          ) from None
    return onnx


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=True, external_data=True, dynamic_shapes=None, custom_translation_table=None,
           report=False, optimize=True, verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None, training=TrainingMode.EVAL,
           operator_export_type=None, do_constant_folding=True, custom_opsets=None, export_modules_as_functions=False,
           autograd_inlining=True):
    """Export ``model`` (an ``nn.Module`` or a function) as ONNX by tracing the ops it runs on
    ``args`` (a tensor or a tuple; a trailing dict, or ``kwargs``, gives keyword arguments).

    ``f``: the path or binary file written (None writes nothing); ``input_names`` /
    ``output_names`` name the graph's inputs and outputs (by default the forward's parameter
    names, and ``output`` or ``output_0``...); ``dynamic_axes`` ``{name: {axis: dim_name}}`` or
    ``{name: [axes]}`` makes those dims symbolic; ``opset_version`` 17 or later (default 18);
    ``training`` the mode traced in (eval by default); ``export_params=False`` makes the weights
    graph inputs instead of stored initializers; ``keep_initializers_as_inputs`` lists the stored
    ones as inputs too; ``verbose`` prints the graph. The trace is the model's run on these
    inputs: python control flow is baked in, as with PyTorch's tracer (docs/onnx.md). Returns an
    :class:`ONNXProgram` (``dynamo=True``, PyTorch's default) or None. The dynamo-only options
    (``dynamic_shapes``, ``custom_translation_table``, ``report``, ``verify``...) other than their
    defaults raise NotImplementedError; ``do_constant_folding`` is always on (ops on constants
    are folded while tracing)."""
    onnx = _onnx()
    for opt, val, default in (("dynamic_shapes", dynamic_shapes, None),
                              ("custom_translation_table", custom_translation_table, None), ("report", report, False),
                              ("verify", verify, False), ("profile", profile, False),
                              ("dump_exported_program", dump_exported_program, False), ("custom_opsets", custom_opsets,
                                                                                         None),
                              ("export_modules_as_functions", export_modules_as_functions, False)):
        if val is not default and val != default:
            raise NotImplementedError(f"ember.onnx.export: {opt}= is not supported (ember traces the model; use "
                                      "dynamic_axes= for symbolic dims)")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ValueError(f"ember.onnx.export: opset_version {opset} is not supported: ember writes opsets {MIN_OPSET} "
                         f"to {newest} (the installed onnx package's newest)")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    kwargs = dict(kwargs or {})

    names = _input_names(model, args, kwargs, input_names)
    flat_in = _flatten_inputs(names, args, kwargs)
    g = Graph(onnx, opset)
    for n, _ in flat_in:
        g.fresh(n)
    dyn = _dynamic_axes(dynamic_axes)
    params = _state_tensors(model)
    for pname, t in params.items():
        g.params[id(t)] = (pname, t)
    for n, t in flat_in:
        sym = [None] * t.dim()
        for axis, dname in dyn.get(n, {}).items():
            sym[axis] = (dname,)
            g.sizes.setdefault(dname, t._shape[axis])
        g.bind(t, n, sym=sym)

    devices = {_devices.cpu()} | {t._device for _, t in flat_in} | {t._device for t in params.values()}
    modes = _set_mode(model, training)
    hooks = _path_hooks(model, g)
    try:
        with no_grad(), Tracer(g, devices):
            result = model(*args, **kwargs)
    finally:
        for h in hooks:
            h.remove()
        for m, mode in modes:
            m.training = mode
    outs = _flatten_outputs(result)
    if not outs:
        raise OnnxExporterError("ember.onnx.export: the model returned no tensor")
    out_names = list(output_names or [])
    out_names += ["output" if len(outs) == 1 else f"output_{i}" for i in range(len(out_names), len(outs))]
    known = {n for n, _ in flat_in} | set(out_names)
    for n in dyn:
        if n not in known:
            warnings.warn(f"ember.onnx.export: dynamic_axes names {n!r}, which is no input or output name")
    graph_outputs = []
    for name, t in zip(out_names, outs):
        src = g.inp(t)
        g._names.add(name)
        g.nodes.append(onnx.helper.make_node("Identity", [src], [name], name=g.fresh("output")))
        sym = list(g.sym.get(src, ()) or [None] * t.dim())
        for axis, dname in dyn.get(name, {}).items():
            sym[axis] = (dname,)
        graph_outputs.append(_value_info(onnx, name, t, sym))
    graph_inputs = [_value_info(onnx, n, t, g.sym.get(n, ())) for n, t in flat_in]
    nodes, inits = _live(g.nodes, g.initializers, out_names)
    param_names = set(params)
    if not export_params:
        graph_inputs += [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                         for i in inits if i.name in param_names]
        inits = [i for i in inits if i.name not in param_names]
    elif keep_initializers_as_inputs:
        graph_inputs += [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in inits]
    graph = onnx.helper.make_graph(nodes, type(model).__name__ if hasattr(model, "forward") else "ember",
                                   graph_inputs, graph_outputs, inits)
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="ember", producer_version=__version__)
    proto.ir_version = min(proto.ir_version, _ir_version(onnx, opset))
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        onnx.save_model(proto, f)
    return ONNXProgram(proto) if dynamo else None


def _live(nodes, initializers, outputs):
    """The nodes and initializers the outputs depend on (the trace also records ops whose
    results the model never uses, such as the checks of its arguments)."""
    need = set(outputs)
    keep = []
    for n in reversed(nodes):
        if need.intersection(n.output):
            keep.append(n)
            need.update(n.input)
    return keep[::-1], [i for i in initializers if i.name in need]


def _ir_version(onnx, opset):
    for ver, ir in ((18, 8), (20, 9), (22, 10)):
        if opset <= ver:
            return ir
    return onnx.IR_VERSION


def _input_names(model, args, kwargs, given):
    fn = getattr(model, "forward", model)
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:len(args)]]
    names += [f"input_{i}" for i in range(len(names), len(args))]
    given = list(given or [])
    names[:len(given)] = given[:len(names)]
    return names + [k for k in kwargs]


def _flatten_inputs(names, args, kwargs):
    out = []
    for n, a in zip(names, list(args) + list(kwargs.values())):
        if isinstance(a, Tensor):
            out.append((n, a))
        elif isinstance(a, (list, tuple)):
            out.extend((f"{n}_{i}", t) for i, t in enumerate(a) if isinstance(t, Tensor))
    return out


def _flatten_outputs(r):
    if isinstance(r, Tensor):
        return [r]
    if isinstance(r, dict):
        r = list(r.values())
    if isinstance(r, (list, tuple)):
        return [t for x in r for t in _flatten_outputs(x)]
    return []


def _dynamic_axes(dynamic_axes):
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(a): str(d) for a, d in axes.items()}
        else:
            out[name] = {int(a): f"{name}_dynamic_axes_{int(a) + 1}" for a in axes}
    return out


def _state_tensors(model):
    if not hasattr(model, "state_dict"):
        return {}
    sd = {}
    for n, p in model.named_parameters():
        sd[n] = p
    for n, b in model.named_buffers():
        if b is not None:
            sd[n] = b
    return sd


def _set_mode(model, training):
    if not hasattr(model, "modules") or training == TrainingMode.PRESERVE:
        return []
    modes = [(m, m.training) for m in model.modules()]
    model.train(training == TrainingMode.TRAINING)
    return modes


def _path_hooks(model, g):
    if not hasattr(model, "named_modules"):
        return []
    stack = []
    hooks = []
    for name, m in model.named_modules():
        def pre(mod, inputs, _name=name or type(model).__name__):
            stack.append(g.module_path)
            g.module_path = _name
        def post(mod, inputs, output):
            g.module_path = stack.pop() if stack else ""
        hooks.append(m.register_forward_pre_hook(pre))
        hooks.append(m.register_forward_hook(post))
    return hooks


def _value_info(onnx, name, t, sym):
    dims = []
    for i, n in enumerate(t._shape):
        e = sym[i] if i < len(sym) else None
        dims.append(n if not e else (e[0] if len(e) == 1 else None))  # a merged dim is left unnamed
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(t._dtype.np), dims)
