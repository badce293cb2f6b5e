"""Lookahead (Zhang, Lucas, Hinton & Ba, 2019: "Lookahead Optimizer: k steps forward, 1 step back").

The wrapped ("inner", "fast") optimizer steps as usual. Lookahead keeps a second copy of the
weights, the slow weights ``phi``; every ``k`` steps they move ``alpha`` of the way towards the
fast weights and the fast weights restart from them::

    phi <- phi + alpha * (theta - phi);    theta <- phi

Where this differs from other implementations, on purpose:

* the slow weights start at the weights as they are before the first step (the paper's
  ``phi_0 = theta_0``), not at the fast weights of the first synchronisation, so the first
  cycle is interpolated like every other;
* slow weights are kept only for parameters that require grad (a frozen backbone costs no memory);
* the state dict uses timm's layout (``lookahead_k``/``lookahead_alpha``/``lookahead_step`` in each
  parameter group, ``lookahead_slow_buff`` in each parameter's state), so checkpoints move between
  ember and PyTorch code that uses ``timm.optim.Lookahead``.
"""
from __future__ import annotations

import numbers
from itertools import chain
from typing import Any, Callable

import ember
from ember.optim import Optimizer

__all__ = ["Lookahead"]

SLOW_KEY = "lookahead_slow_buff"  # per-parameter state-dict entry holding the slow weights


def _check_k(k, where: str = "Lookahead") -> None:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{where}: k (fast steps per slow step) must be an int, got {type(k).__name__} {k!r}")
    if k < 1:
        raise ValueError(f"Invalid lookahead steps: {k} (k must be at least 1)")


def _check_alpha(alpha, where: str = "Lookahead") -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{where}: alpha (the slow update rate) must be a real number, got "
                        f"{type(alpha).__name__} {alpha!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"Invalid slow update rate: {alpha} (alpha must be in [0, 1])")


class Lookahead(Optimizer):
    """``Lookahead(optimizer, k=5, alpha=0.5)``: wrap any ember optimizer.

    ``param_groups`` and ``state`` are the inner optimizer's own (schedulers, gradient clipping
    and per-group options work through the wrapper); each group also carries ``lookahead_k``,
    ``lookahead_alpha`` and its step counter ``lookahead_step``, so groups may use their own
    ``k``/``alpha`` (``add_param_group({"params": ..., "lookahead_alpha": 0.8})``). The slow weights
    are in :attr:`slow_params`. ``state_dict()`` holds the inner state, the slow weights and the
    counters, and ``load_state_dict`` resumes a run exactly.

    Example::

        opt = ember.optim.Lookahead(ember.optim.Adam(model.parameters(), lr=1e-3), k=5, alpha=0.5)
        for x, y in data:
            opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, optimizer: Optimizer, k: int = 5, alpha: float = 0.5) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"Lookahead: optimizer must be an ember.optim.Optimizer, got {ember.typename(optimizer)}")
        if isinstance(optimizer, Lookahead):
            raise ValueError("Lookahead: the optimizer is already a Lookahead (its groups would share one counter)")
        _check_k(k)
        _check_alpha(alpha)
        self.optimizer = optimizer
        self.defaults = dict(optimizer.defaults, lookahead_k=k, lookahead_alpha=alpha, lookahead_step=0)
        #: parameter -> its slow weights (made before the parameter's first step)
        self.slow_params: dict = {}
        self._init_hooks()
        for group in optimizer.param_groups:
            self._fill(group)

    # -- what is shared with the inner optimizer ------------------------------------------------
    @property
    def param_groups(self) -> list:
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, groups: list) -> None:
        self.optimizer.param_groups = groups

    @property
    def state(self):
        return self.optimizer.state

    @state.setter
    def state(self, state) -> None:
        self.optimizer.state = state

    @property
    def k(self) -> int:
        """The default ``k`` of groups that do not set ``lookahead_k``."""
        return self.defaults["lookahead_k"]

    @property
    def alpha(self) -> float:
        """The default ``alpha`` of groups that do not set ``lookahead_alpha``."""
        return self.defaults["lookahead_alpha"]

    def _fill(self, group: dict) -> None:
        for key in ("lookahead_k", "lookahead_alpha", "lookahead_step"):
            group.setdefault(key, self.defaults[key])
        _check_k(group["lookahead_k"], "Lookahead parameter group")
        _check_alpha(group["lookahead_alpha"], "Lookahead parameter group")

    def __getstate__(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer, "defaults": self.defaults, "slow_params": self.slow_params}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()

    def __repr__(self) -> str:
        inner = repr(self.optimizer).replace("\n", "\n    ")
        return f"Lookahead (k={self.k}, alpha={self.alpha}) wrapping\n    {inner}"

    # -- the training loop ---------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None):
        """One step of the inner optimizer (``closure`` is passed on); at every ``k``-th step of a
        group its slow weights move ``alpha`` towards the fast ones, which restart from them."""
        with ember.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.requires_grad and p not in self.slow_params:
                        self.slow_params[p] = p.detach().clone()
        loss = self.optimizer.step(closure)
        with ember.no_grad():
            for group in self.param_groups:
                self._fill(group)  # a group the inner optimizer got directly, or from an old checkpoint
                group["lookahead_step"] += 1
                if group["lookahead_step"] % group["lookahead_k"] == 0:
                    self._sync(group)
        return loss

    def _sync(self, group: dict) -> None:
        alpha = group["lookahead_alpha"]
        for p in group["params"]:
            slow = self.slow_params.get(p)
            if slow is not None:
                slow.add_(p.detach() - slow, alpha=alpha)
                p.detach().copy_(slow)

    def sync_lookahead(self) -> None:
        """Synchronise every group now (slow towards fast, fast from slow), e.g. to evaluate or
        save the slow weights at the end of training; the step counters are left as they are."""
        with ember.no_grad():
            for group in self.param_groups:
                self._sync(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The inner optimizer's ``zero_grad``."""
        self.optimizer.zero_grad(set_to_none)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group to the inner optimizer, with Lookahead's ``k``/``alpha`` unless it gives its
        own ``lookahead_k``/``lookahead_alpha``. Its slow weights start at its first step."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        self._fill(param_group)
        self.optimizer.add_param_group(param_group)

    # -- checkpoints --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The inner optimizer's state dict (PyTorch layout) with the slow weights added to each
        parameter's state as ``lookahead_slow_buff`` and the counters in the groups. Tensors are
        the live ones, not copies (as every optimizer's ``state_dict``)."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        inner = self.optimizer.state_dict()
        index = {}
        for group, packed in zip(self.param_groups, inner["param_groups"]):
            for p, i in zip(group["params"], packed["params"]):
                index[id(p)] = i
        state = {i: dict(s) for i, s in inner["state"].items()}  # new dicts: the live state is not touched
        for p, slow in self.slow_params.items():
            i = index.get(id(p))
            if i is not None:
                state.setdefault(i, {})[SLOW_KEY] = slow
        sd = dict(inner, state=state)
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, sd)
            if result is not None:
                sd = result
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state dict of :meth:`state_dict` (or of the bare inner optimizer, which starts the
        lookahead cycle afresh). Everything is copied; the slow weights take each parameter's
        dtype and device."""
        state_dict = dict(state_dict)
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        for key in ("state", "param_groups"):
            if key not in state_dict:
                raise ValueError(f"Lookahead.load_state_dict: the state dict has no '{key}' entry "
                                 f"(keys: {sorted(map(str, state_dict))})")
        for group in state_dict["param_groups"]:  # refused before anything is loaded
            if "lookahead_k" in group:
                _check_k(group["lookahead_k"], "Lookahead.load_state_dict")
            if "lookahead_alpha" in group:
                _check_alpha(group["lookahead_alpha"], "Lookahead.load_state_dict")
        slow, inner_state = {}, {}
        for i, st in state_dict["state"].items():
            if isinstance(st, dict) and SLOW_KEY in st:
                st = dict(st)
                slow[i] = st.pop(SLOW_KEY)
            if st:  # an empty entry would make optimizers that test `len(state) == 0` skip their set-up
                inner_state[i] = st
        self.optimizer.load_state_dict(dict(state_dict, state=inner_state))
        for group in self.param_groups:
            self._fill(group)
        saved = chain.from_iterable(g["params"] for g in state_dict["param_groups"])
        id_map = dict(zip(saved, chain.from_iterable(g["params"] for g in self.param_groups)))
        slow_params = {}
        for i, value in slow.items():
            p = id_map.get(i)
            if p is None:
                raise ValueError(f"Lookahead.load_state_dict: slow weights for parameter {i!r}, which no parameter "
                                 f"group lists")
            if not isinstance(value, ember.Tensor) or tuple(value.shape) != tuple(p.shape):
                got = list(value.shape) if isinstance(value, ember.Tensor) else type(value).__name__
                raise ValueError(f"Lookahead.load_state_dict: slow weights of parameter {i} have shape {got} but the "
                                 f"parameter has shape {list(p.shape)}")
            slow_params[p] = value.detach().to(dtype=p.dtype, device=p.device).clone()
        self.slow_params = slow_params
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)
