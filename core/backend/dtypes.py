"""The dtype helpers a backend uses: ember's dtype objects (``dtype.np`` is the numpy dtype that
carries its values on the host: bfloat16's comes from ``ml_dtypes``; ``dtype.itemsize``,
``dtype.is_floating_point``, ``dtype.is_complex``, ``dtype.is_signed``), the lists of them, and conversions."""
from __future__ import annotations

from .._dtype import (ALL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, REAL_DTYPES, bfloat16, bool, complex64,
                      complex128, dtype, finfo, float16, float32, float64, from_numpy_dtype, get_default_dtype, iinfo,
                      int8, int16, int32, int64, promote_types, result_type, to_complex, to_real, uint8)

__all__ = ["dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "complex64", "complex128", "ALL_DTYPES", "REAL_DTYPES", "COMPLEX_DTYPES", "to_real", "to_complex",
           "FLOAT_DTYPES", "INT_DTYPES", "from_numpy_dtype", "get_default_dtype", "promote_types",
           "result_type", "finfo", "iinfo"]
