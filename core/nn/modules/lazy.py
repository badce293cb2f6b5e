"""Lazy modules: ``LazyModuleMixin`` and the ``Lazy*`` layers, whose input size (``in_features``,
``in_channels``, ``num_features``) is inferred from the first input, as PyTorch's.

Until the first forward their parameters and buffers are ``UninitializedParameter`` /
``UninitializedBuffer``; a forward pre-hook materialises them from the input's shape, runs
``reset_parameters`` and turns the module into its ``cls_to_become`` (``LazyLinear`` becomes
``Linear``). ``load_state_dict`` into an uninitialised lazy module materialises its parameters
with the checkpoint's shapes (a load pre-hook); the module keeps its lazy class until a forward.
"""
from __future__ import annotations

from ... import _dtype as D
from ... import _state
from ...ops import creation as _factory
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Mix in before a module class; define ``initialize_parameters(*args, **kwargs)``.

    Two hooks do the work: a forward pre-hook that calls ``initialize_parameters`` with the
    first forward's arguments, then drops both hooks and switches the class to
    ``cls_to_become``; and a load-state-dict pre-hook that gives uninitialized tensors the shapes
    found in the checkpoint.
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy_hooks()

    def _lazy_hooks(self) -> None:
        # bound methods, so that the module stays picklable; the handles are kept to undo them
        self._load_hook = self.register_load_state_dict_pre_hook(self._lazy_load_pre_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _own_tensors(self):
        """``(name, tensor)`` for every parameter and buffer slot, in registration order."""
        yield from self._parameters.items()
        yield from self._buffers.items()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # as Module's, except that an uninitialized tensor is stored itself (it can't be detached)
        skipped = self._non_persistent_buffers_set
        for name, t in self._own_tensors():
            if t is None or (name in self._buffers and name in skipped):
                continue
            destination[prefix + name] = t if keep_vars or is_lazy(t) else t.detach()

    def _lazy_load_pre_hook(self, module, *args):
        self._lazy_load_hook(*args)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for name, own in self._own_tensors():
            incoming = state_dict.get(prefix + name)
            if own is None or incoming is None:
                continue
            if is_lazy(own) and not is_lazy(incoming):
                own.materialize(incoming.shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for _, t in self._own_tensors())

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs if kwargs else {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        for handle_name in ("_initialize_hook", "_load_hook"):
            getattr(module, handle_name).remove()
            delattr(module, handle_name)
        final = module.cls_to_become
        if final is not None:
            module.__class__ = final

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


def _placeholders(module, names, device, dtype) -> None:
    """Give ``module`` an uninitialized parameter under each of ``names``."""
    for name in names:
        setattr(module, name, UninitializedParameter(device=device, dtype=dtype))


class _InferredSize(LazyModuleMixin):
    """Lazy layers whose one unknown size is read off the first input.

    A family names the attribute (``_size_attr``), says how to read it (``_size_of``) and what
    shape each lazy tensor then has (``_lazy_shapes``); materialising and initialising is shared.
    """

    _size_attr = ""

    def _size_of(self, input) -> int:
        raise NotImplementedError

    def _lazy_shapes(self, size) -> dict:
        raise NotImplementedError

    def _check_size(self, size) -> None:
        pass

    def reset_parameters(self) -> None:
        # the full class's __init__ calls this before anything is materialised: wait until then
        if self.has_uninitialized_params() or getattr(self, self._size_attr) == 0:
            return
        super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        size = self._size_of(input)
        setattr(self, self._size_attr, size)
        self._check_size(size)
        with _state.grad_disabled():
            for name, shape in self._lazy_shapes(size).items():
                slot = getattr(self, name, None)
                if slot is not None and is_lazy(slot):
                    slot.materialize(shape)
            self.reset_parameters()


class LazyLinear(_InferredSize, Linear):
    """``Linear`` whose ``in_features`` is the last dim of the first input."""

    cls_to_become = Linear
    _size_attr = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.out_features = out_features
        _placeholders(self, ("weight", "bias") if bias else ("weight",), device, dtype)

    def _size_of(self, input) -> int:
        return input.shape[-1]

    def _lazy_shapes(self, size) -> dict:
        return {"weight": (self.out_features, size), "bias": (self.out_features,)}

    def initialize_parameters(self, input) -> None:
        super().initialize_parameters(input)
        if self.in_features == 0:  # materialised by load_state_dict: take the size from the weight
            seen, expected = input.shape[-1], self.weight.shape[-1]
            if seen != expected:
                raise AssertionError(f"The in_features inferred from input: {seen} is not equal to "
                                     f"in_features from self.weight: {expected}")
            self.in_features = seen


class _LazyConvXdMixin(_InferredSize):
    _size_attr = "in_channels"

    def _size_of(self, input) -> int:
        unbatched = self._nsp + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[input.dim() - unbatched]

    def _check_size(self, size) -> None:
        if size % self.groups:
            raise ValueError("in_channels must be divisible by groups")

    def _lazy_shapes(self, size) -> dict:
        per_group = (self.out_channels if self.transposed else size) // self.groups
        leading = size if self.transposed else self.out_channels
        return {"weight": (leading, per_group, *self.kernel_size), "bias": (self.out_channels,)}

    def _lazy_init(self, out_channels, bias, fk) -> None:
        self.out_channels = out_channels
        _placeholders(self, ("weight", "bias") if bias else ("weight",), fk["device"], fk["dtype"])


def _lazy_conv(name, full):
    """``Lazy<full>``: the same arguments without ``in_channels``."""
    transposed = full in (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)

    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            full.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                          padding_mode, device=device, dtype=dtype)
            self._lazy_hooks()
            self._lazy_init(out_channels, bias, {"device": device, "dtype": dtype})
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            full.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                          device=device, dtype=dtype)
            self._lazy_hooks()
            self._lazy_init(out_channels, bias, {"device": device, "dtype": dtype})
    doc = f"``{full.__name__}`` whose ``in_channels`` is the channel dim of the first input."
    return type(name, (_LazyConvXdMixin, full), {"cls_to_become": full, "__init__": __init__, "__doc__": doc,
                                                  "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d)


class _LazyNormBase(_InferredSize, _NormBase):
    _size_attr = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            _placeholders(self, ("weight", "bias") if bias else ("weight",), device, dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _factory.tensor(0, dtype=D.int64, device=device)

    def _size_of(self, input) -> int:
        return input.shape[1]

    def _lazy_shapes(self, size) -> dict:
        return dict.fromkeys(("weight", "bias", "running_mean", "running_var"), (size,))


def _lazy_norm(name, base, full):
    doc = f"``{full.__name__}`` whose ``num_features`` is dim 1 of the first input."
    attrs = {"cls_to_become": full, "__doc__": doc, "__module__": __name__,
             "_check_input_dim": full._check_input_dim}
    if base is _InstanceNorm:
        attrs["_nsp"] = full._nsp
    return type(name, (_LazyNormBase, base), attrs)


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", _BatchNorm, BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", _BatchNorm, BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", _BatchNorm, BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", _InstanceNorm, InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", _InstanceNorm, InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", _InstanceNorm, InstanceNorm3d)
