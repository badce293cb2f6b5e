"""The PyTorch oracle: hypothesis draws inputs, both libraries run them, outcomes are compared."""
__all__ = []
