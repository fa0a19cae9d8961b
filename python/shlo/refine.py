"""``shlo.refine``: specialize a shape-polymorphic module to concrete argument types."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ir, new_context
from shlo.io import load_module, module_to_bytecode
from shlo.pipeline import run_pipeline

ArgType = str | np.ndarray | tuple[Sequence[int], Any]

_ELEMENT_TYPES = {
    "bool": "i1",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "ui8",
    "uint16": "ui16",
    "uint32": "ui32",
    "uint64": "ui64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "complex<f32>",
    "complex128": "complex<f64>",
    "int4": "i4",
    "uint4": "ui4",
    "int2": "i2",
    "uint2": "ui2",
    "float8_e4m3fn": "f8E4M3FN",
    "float8_e5m2": "f8E5M2",
    "float8_e4m3fnuz": "f8E4M3FNUZ",
    "float8_e5m2fnuz": "f8E5M2FNUZ",
    "float8_e4m3b11fnuz": "f8E4M3B11FNUZ",
    "float8_e4m3": "f8E4M3",
    "float8_e3m4": "f8E3M4",
    "float8_e8m0fnu": "f8E8M0FNU",
    "float4_e2m1fn": "f4E2M1FN",
}


def element_type_name(dtype: Any) -> str:
    """The MLIR element type spelling of a numpy (or ml_dtypes) dtype."""
    # Names are accepted as-is, so ml_dtypes' types need not be importable.
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    if name not in _ELEMENT_TYPES:
        raise ValueError(f"unsupported dtype {name}")
    return _ELEMENT_TYPES[name]


def tensor_type_string(arg: ArgType) -> str:
    """``tensor<...>`` for an MLIR type string, a numpy array or a ``(shape, dtype)`` pair."""
    if isinstance(arg, str):
        return arg
    if isinstance(arg, np.ndarray):
        shape, dtype = arg.shape, arg.dtype
    elif isinstance(arg, tuple) and len(arg) == 2:
        shape, dtype = tuple(arg[0]), arg[1]
    else:
        raise TypeError(
            "argument types are MLIR type strings, numpy arrays or (shape, dtype) pairs, "
            f"got {arg!r}"
        )
    dims = "".join(f"{int(size)}x" for size in shape)
    return f"tensor<{dims}{element_type_name(dtype)}>"


def refine(
    module: ir.Module | str | bytes | os.PathLike[str],
    arg_types: Sequence[ArgType],
    *,
    context: ir.Context | None = None,
) -> ir.Module:
    """A fully static copy of ``module`` with @main's arguments refined to ``arg_types``.

    Runs the shlo-remove-dynamism pipeline. Raises ShloError when a shape
    assertion fails or a value stays dynamic; the input module is not changed.
    """
    if isinstance(module, ir.Module):
        # Work on a copy: callers keep their polymorphic module.
        refined = ir.Module.parse(module_to_bytecode(module), module.context)
    else:
        refined = load_module(module, context or new_context())
    types = ",".join(tensor_type_string(arg) for arg in arg_types)
    with refined.context:
        run_pipeline(refined, [f"shlo-remove-dynamism{{types={types}}}"], "<refine>")
    return refined
