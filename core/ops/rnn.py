"""The fused recurrent layers moved to :mod:`ember.ops.nn.recurrent`; this alias remains only
while ``ember.ops`` imports it by this name (its ``__init__`` should drop ``rnn``, and this file
then goes)."""
from .nn.recurrent import gru_layer, lstm_layer, rnn_layer  # noqa: F401

__all__: list = []
