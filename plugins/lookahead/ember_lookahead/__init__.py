"""ember-lookahead: the Lookahead optimizer wrapper, registered as ``ember.optim.Lookahead``.

Hook implementations only; the class lives in :mod:`ember_lookahead.lookahead`, imported when
ember first looks an optimizer name up among the plugins.
"""
import ember

__version__ = "0.1.0"


@ember.hookimpl
def ember_register_optimizers(register):
    from ember_lookahead.lookahead import Lookahead
    register(Lookahead)
