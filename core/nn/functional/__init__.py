"""``ember.nn.functional`` (``F``): the stateless forms of every layer, written in ember ops.

One explicit import list per concept file; a new file adds one line here.
"""
from ._activation import (celu, celu_, elu, elu_, gelu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish,
                          hardtanh, hardtanh_, leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu,
                          relu6, relu_, rrelu, selu, selu_, sigmoid, silu, softmax, softmin, softplus, softshrink,
                          softsign, tanh, tanhshrink, threshold, threshold_)
from ._attention import multi_head_attention_forward, scaled_dot_product_attention
from ._conv import (bilinear, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold,
                    linear, unfold)
from ._distance import cosine_similarity, pairwise_distance, pdist
from ._dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from ._loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss, cross_entropy,
                    ctc_loss, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
                    margin_ranking_loss, mse_loss, multi_margin_loss, multilabel_margin_loss,
                    multilabel_soft_margin_loss, nll_loss, poisson_nll_loss, smooth_l1_loss, soft_margin_loss,
                    triplet_margin_loss, triplet_margin_with_distance_loss)
from ._norm import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize, rms_norm
from ._pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
                       adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
                       adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d,
                       max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, max_pool3d,
                       max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d)
from ._sparse import embedding, embedding_bag, one_hot
from ._vision import (affine_grid, channel_shuffle, grid_sample, interpolate, native_channel_shuffle, pad,
                      pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest)
