"""ember's built-in collective backend, registered through the same hook as third-party ones
(``ember._plugins.load`` registers this module on the plugin manager)."""
from __future__ import annotations

from ..hookspecs import hookimpl


@hookimpl
def ember_register_collectives(register) -> None:
    register("mpi", "ember.distributed.mpi:MPIProcessGroup", ("cpu", "opencl"))
