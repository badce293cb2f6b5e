"""ember's version (one place; ``ember.__version__``)."""
__version__ = "0.1.0"
