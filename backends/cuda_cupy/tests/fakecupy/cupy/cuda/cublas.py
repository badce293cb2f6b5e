"""fake ``cupy.cuda.cublas``: ``gemmEx``/``gemmStridedBatchedEx`` (column-major, as cuBLAS) over
host pointers, computing in float32; enough to check the backend's layout and type arguments."""
from __future__ import annotations

import ctypes

import numpy as np

CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_COMPUTE_32F = 68
CUBLAS_COMPUTE_32F_FAST_TF32 = 77
CUBLAS_GEMM_DEFAULT = -1
CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99
CUBLAS_DEFAULT_MATH, CUBLAS_TF32_TENSOR_OP_MATH = 0, 3
_TYPES = {0: np.float32, 14: "bfloat16"}
calls: list = []


def _mat(ptr, dtype, rows, cols, ld):
    """A column-major rows x cols matrix at ptr with leading dimension ld, as float32."""
    isz = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    n = ld * (cols - 1) + rows
    raw = np.frombuffer((ctypes.c_char * (n * isz)).from_address(ptr), dtype=np.uint16 if isz == 2 else dtype,
                        count=n)
    full = np.lib.stride_tricks.as_strided(raw, (rows, cols), (isz, ld * isz))
    if isz == 2:
        return (full.astype(np.uint32) << 16).view(np.float32), full
    return full.astype(np.float32), full


def _scalar(ptr):
    return ctypes.c_float.from_address(ptr).value


def gemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
           algo):
    calls.append(("gemmEx", Atype, computeType))
    a, _ = _mat(A, _TYPES[Atype], *((m, k) if transa == CUBLAS_OP_N else (k, m)), lda)
    b, _ = _mat(B, _TYPES[Btype], *((k, n) if transb == CUBLAS_OP_N else (n, k)), ldb)
    a = a if transa == CUBLAS_OP_N else a.T
    b = b if transb == CUBLAS_OP_N else b.T
    c32, craw = _mat(C, _TYPES[Ctype], m, n, ldc)
    r = _scalar(alpha) * (a @ b) + (_scalar(beta) * c32 if _scalar(beta) else 0)
    if _TYPES[Ctype] == "bfloat16":
        u = r.astype(np.float32).view(np.uint32)
        craw[...] = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    else:
        craw[...] = r


def gemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
                         beta, C, Ctype, ldc, strideC, batchCount, computeType, algo):
    isz = {0: 4, 14: 2}
    for i in range(batchCount):
        gemmEx(handle, transa, transb, m, n, k, alpha, A + i * strideA * isz[Atype], Atype, lda,
               B + i * strideB * isz[Btype], Btype, ldb, beta, C + i * strideC * isz[Ctype], Ctype, ldc, computeType,
               algo)


def setMathMode(handle, mode):
    calls.append(("setMathMode", mode))


def getMathMode(handle):
    return CUBLAS_DEFAULT_MATH
