"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, parametrizations, pruning,
fusion, the old weight_norm and spectral_norm hooks, stateless calls.

One explicit import line per file; ``rnn`` (packed sequences) is added by its own file.
"""
from . import parametrizations, parametrize
from . import rnn  # packed sequences: ember.nn.utils.rnn
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from . import fusion, prune, stateless
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm
