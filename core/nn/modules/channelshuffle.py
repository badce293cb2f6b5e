"""``ember.nn.modules.channelshuffle``: PyTorch's module path of ``ChannelShuffle`` (defined with
the pixel shuffles), which checkpoints and allow-lists name."""
from __future__ import annotations

from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
