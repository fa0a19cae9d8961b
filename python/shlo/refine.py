"""``shlo.refine``: specialize a shape-polymorphic module to concrete argument types."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from shlo._mlir_compat import ir, new_context
from shlo.dtypes import mlir_element_type
from shlo.frontend import error_at, symbol_name
from shlo.io import load_module, module_to_bytecode
from shlo.ir_utils import is_private, tensor_type_text
from shlo.isolation import shared_worker
from shlo.pipeline import run_pipeline

ArgType = str | np.ndarray | tuple[Sequence[int], Any]


def tensor_type_string(arg: ArgType) -> str:
    """``tensor<...>`` for an MLIR type string, an array, a ``(shape, dtype)`` pair,
    or anything with a static ``shape`` and a ``dtype`` (``jax.ShapeDtypeStruct``).
    """
    if isinstance(arg, str):
        return arg
    if isinstance(arg, np.ndarray):
        shape, dtype = arg.shape, arg.dtype
    elif hasattr(arg, "shape") and hasattr(arg, "dtype"):
        shape, dtype = tuple(arg.shape), arg.dtype
        if not all(isinstance(size, int | np.integer) for size in shape):
            raise TypeError(f"refine needs static shapes; {arg!r} has a symbolic dimension")
    elif isinstance(arg, tuple) and len(arg) == 2:
        shape, dtype = tuple(arg[0]), arg[1]
    else:
        raise TypeError(
            "argument types are MLIR type strings, arrays, ShapeDtypeStructs or "
            f"(shape, dtype) pairs, got {arg!r}"
        )
    return tensor_type_text(shape, mlir_element_type(dtype))


def refine_to_bytecode(
    source: bytes | str | ir.Module, types: Sequence[str], filename: str = "<refine>"
) -> bytes:
    """``source`` refined to ``types``, as bytecode (in the worker: parsing may crash)."""
    module = load_module(source, filename=filename)
    main = next(
        (
            op.operation
            for op in module.body.operations
            if op.operation.name == "func.func" and symbol_name(op) == "main"
        ),
        None,
    )
    if main is not None and is_private(main):
        raise error_at(
            main.location, "@main is private; the entry function must be public", filename
        )
    run_pipeline(module, [f"shlo-remove-dynamism{{types={','.join(types)}}}"], filename)
    return module_to_bytecode(module)


def refine(
    module: ir.Module | str | bytes | os.PathLike[str],
    arg_types: Sequence[ArgType],
    *,
    context: ir.Context | None = None,
    isolate: bool = True,
    timeout: float | None = None,
) -> ir.Module:
    """A fully static copy of ``module`` with @main's arguments refined to ``arg_types``.

    Runs the shlo-remove-dynamism pipeline, in the worker process unless
    ``isolate`` is False, and parses its result in ``context`` (by default the
    input module's context, else a new one). Raises ShloError when a shape
    assertion fails, a value stays dynamic or the worker crashes or takes
    longer than ``timeout`` seconds; the input module is not changed.
    """
    types = [tensor_type_string(arg) for arg in arg_types]
    if isinstance(module, ir.Module):
        context = context or module.context
        source: bytes | str = module_to_bytecode(module)
        filename = "<refine>"
    else:
        context = context or new_context()
        source = os.fspath(module) if isinstance(module, os.PathLike) else module
        is_path = isinstance(source, str) and "\n" not in source and os.path.isfile(source)
        filename = source if is_path else "<refine>"
        if isinstance(source, str) and not is_path:
            source = source.encode()  # text, never a file name, from here on
    request = {"source": source, "types": types, "filename": filename}
    refined = (
        shared_worker().call("refine", timeout=timeout, **request)
        if isolate
        else refine_to_bytecode(**request)
    )
    # Bytes the worker wrote itself; parsing them cannot fail.
    return ir.Module.parse(refined, context)
