"""``ember.utils``: data loading (``ember.utils.data``) and other utilities."""
import importlib as _importlib


def __getattr__(name: str):
    # ``import ember as torch; torch.utils.data.DataLoader`` works in PyTorch without importing
    # torch.utils.data first: load submodules on first access
    try:
        return _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
