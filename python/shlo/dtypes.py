"""Element types: MLIR spellings and the numpy (or ml_dtypes) dtypes that hold them."""

from __future__ import annotations

import re
from typing import Any

import ml_dtypes
import numpy as np

# MLIR element type -> numpy dtype. Sub-byte integers and the small floats live
# in one byte per element, as LLVM stores them in memory.
_NUMPY_OF_MLIR: dict[str, np.dtype[Any]] = {
    "i1": np.dtype(np.bool_),
    "i2": np.dtype(ml_dtypes.int2),
    "i4": np.dtype(ml_dtypes.int4),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "ui2": np.dtype(ml_dtypes.uint2),
    "ui4": np.dtype(ml_dtypes.uint4),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f4E2M1FN": np.dtype(ml_dtypes.float4_e2m1fn),
    "f6E2M3FN": np.dtype(ml_dtypes.float6_e2m3fn),
    "f6E3M2FN": np.dtype(ml_dtypes.float6_e3m2fn),
    "f8E3M4": np.dtype(ml_dtypes.float8_e3m4),
    "f8E4M3": np.dtype(ml_dtypes.float8_e4m3),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8E4M3B11FNUZ": np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "f8E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "f8E8M0FNU": np.dtype(ml_dtypes.float8_e8m0fnu),
    "complex<f32>": np.dtype(np.complex64),
    "complex<f64>": np.dtype(np.complex128),
}
_MLIR_OF_NUMPY = {dtype: name for name, dtype in _NUMPY_OF_MLIR.items()}

# Floats that LLVM cannot compute with on the CPU; they are emulated in f32.
EMULATED_FLOATS = tuple(name for name in _NUMPY_OF_MLIR if name.startswith(("f8E", "f6E", "f4E")))


def numpy_dtype(element_type: str) -> np.dtype[Any]:
    """The numpy dtype holding MLIR ``element_type`` (a spelling such as ``"bf16"``)."""
    try:
        return _NUMPY_OF_MLIR[element_type]
    except KeyError:
        raise ValueError(f"element type {element_type} has no numpy equivalent") from None


def mlir_element_type(dtype: Any) -> str:
    """The MLIR spelling of a numpy dtype, a dtype name such as ``"float32"``, or a spelling."""
    if isinstance(dtype, str) and dtype in _NUMPY_OF_MLIR:
        return dtype
    try:
        resolved = np.dtype(getattr(ml_dtypes, dtype, dtype) if isinstance(dtype, str) else dtype)
    except TypeError:
        raise ValueError(f"unsupported dtype {dtype}") from None
    if resolved not in _MLIR_OF_NUMPY:
        raise ValueError(f"unsupported dtype {resolved.name}")
    return _MLIR_OF_NUMPY[resolved]


# Quantized values travel as their storage integers: i8, u8, i16, ...
# (with an optional storage range, as in u8<0:255>).
_QUANTIZED = re.compile(r"^!quant\.(?:uniform|any|calibrated)<([iu])(\d+)")


def storage_element_type(element: str) -> str | None:
    """The element type numpy arrays pass for MLIR's ``element``; None if none can.

    Quantized values travel as their storage integers.
    """
    quantized = _QUANTIZED.match(element)
    if quantized:
        element = f"{'ui' if quantized.group(1) == 'u' else 'i'}{quantized.group(2)}"
    try:
        storage = mlir_element_type(element)
        numpy_dtype(storage)
    except ValueError:
        return None
    return storage
