"""Full backward hooks of a Module, built from two identity autograd Functions.

Before ``forward`` the tensor inputs that require grad go through one identity node, so a single
node receives every ``grad_input``; after ``forward`` the outputs go through another, whose
backward sees ``grad_output`` first (backward pre-hooks run there). The module's backward hooks
run in the input node with both, as PyTorch's ``BackwardHook`` does.
"""
from __future__ import annotations

import itertools

from ..._tensor import Tensor
from ...autograd.function import Function
from . import module as M


class _State:
    __slots__ = ("module", "n_args", "positions", "grad_output", "fired")

    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.positions = ()
        self.n_args = 0
        self.fired = False


def _pre_hooks(module):
    return itertools.chain(M._global_backward_pre_hooks.values(), module._backward_pre_hooks.values())


def _hooks(module):
    return itertools.chain(M._global_backward_hooks.values(), module._backward_hooks.values())


def _run_hooks(state, grad_input):
    for hook in _hooks(state.module):
        r = hook(state.module, grad_input, state.grad_output)
        if r is not None:
            r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
            if len(r) != len(grad_input):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(r)}, but "
                                   f"expected {len(grad_input)}")
            grad_input = r
    return grad_input


class _InputHook(Function):
    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tensors if len(tensors) != 1 else tensors[0]

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        full = [None] * st.n_args
        for pos, g in zip(st.positions, grads):
            full[pos] = g
        full = _run_hooks(st, tuple(full))
        return (None,) + tuple(full[pos] for pos in st.positions)


class _OutputHook(Function):
    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        return tensors if len(tensors) != 1 else tensors[0]

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        go = tuple(grads)
        for hook in _pre_hooks(st.module):
            r = hook(st.module, go)
            if r is not None:
                go = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        st.grad_output = go
        if not st.positions:  # no input needs grad: hooks see grad_input of Nones
            _run_hooks(st, (None,) * st.n_args)
        return (None,) + go


def _needs(t) -> bool:
    return isinstance(t, Tensor) and t.requires_grad


def wrap_inputs(module, args):
    st = _State(module)
    st.n_args = len(args)
    st.positions = tuple(i for i, a in enumerate(args) if _needs(a))
    if not st.positions:
        return st, args
    out = _InputHook.apply(st, *(args[i] for i in st.positions))
    out = out if isinstance(out, tuple) else (out,)
    args = list(args)
    for i, t in zip(st.positions, out):
        args[i] = t
    return st, tuple(args)


def wrap_outputs(st, result):
    single = isinstance(result, Tensor)
    outs = (result,) if single else result
    if not isinstance(outs, tuple):
        return result  # dicts and other containers are passed through unhooked
    idx = [i for i, o in enumerate(outs) if _needs(o)]
    if not idx:
        return result
    wrapped = _OutputHook.apply(st, *(outs[i] for i in idx))
    wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
    outs = list(outs)
    for i, t in zip(idx, wrapped):
        outs[i] = t
    return outs[0] if single else tuple(outs)
