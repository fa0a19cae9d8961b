"""``shlo.refine``: specialize a shape-polymorphic module to concrete argument types."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ir
from shlo.dtypes import mlir_element_type
from shlo.io import load_module, module_to_bytecode
from shlo.ir_utils import tensor_type_text
from shlo.pipeline import run_pipeline

ArgType = str | np.ndarray | tuple[Sequence[int], Any]


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
    return tensor_type_text(shape, mlir_element_type(dtype))


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
        refined = load_module(module, context)
    types = ",".join(tensor_type_string(arg) for arg in arg_types)
    with refined.context:
        run_pipeline(refined, [f"shlo-remove-dynamism{{types={types}}}"], "<refine>")
    return refined
