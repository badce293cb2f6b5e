"""ember's versions, in one place: ``ember.__version__``, the PyTorch API version ember follows
(``ember.version.torch_api``) and the plugin API version backends declare
(``ember.backend.PLUGIN_API_VERSION``)."""
__version__ = "0.1.0"

#: the PyTorch release whose documented behaviour is ember's specification
TORCH_API = "2.13"

#: the version of the backend contract (docs/backends.md). A backend declares the version it was
#: written for as ``Backend.plugin_api_version``; ember loads only backends that declare this one
#: (or none: a backend from before the versioning). It changes only with an incompatible change
#: to the contract.
PLUGIN_API_VERSION = 1
