"""StableHLO's reference interpreter, as a test oracle and for ``shlo-run --target interpreter``.

It is never a fallback for compiled execution. It may abort the process on
bad input, so callers outside tests run it through ``shlo.isolation``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shlo._mlir_compat import eval_module, ir
from shlo.diagnostics import ShloError
from shlo.dtypes import mlir_element_type, numpy_dtype
from shlo.io import load_module
from shlo.lowering import error_at, find_function, function_types, keep_only_entry_public
from shlo.pipeline import run_pipeline
from shlo.runtime import ArrayType

# The interpreter runs StableHLO, quantized ops included, but not CHLO or calls.
_FRONTEND = [
    "func.func(stablehlo-legalize-composite-to-call)",
    "inline",
    "symbol-dce",
    # As the compiler: checks broadcast_dimensions, which upstream trusts.
    "shlo-legalize-broadcasts",
    "func.func(chlo-legalize-to-stablehlo)",
]


def _to_attribute(array: np.ndarray, context: ir.Context) -> ir.Attribute:
    with context:
        element = ir.Type.parse(mlir_element_type(array.dtype))
        return ir.DenseElementsAttr.get(
            np.ascontiguousarray(array), type=element, shape=list(array.shape)
        )


def _to_array(attribute: ir.Attribute) -> np.ndarray:
    tensor_type = ir.RankedTensorType(ir.DenseElementsAttr(attribute).type)
    dtype = numpy_dtype(str(tensor_type.element_type))
    # Splats come back as one element.
    return np.broadcast_to(np.array(attribute), tensor_type.shape).astype(dtype)


def interpret(
    source: bytes | str | ir.Module,
    entry: str,
    args: Sequence[np.ndarray],
    filename: str = "<module>",
) -> list[np.ndarray]:
    """Results of ``entry`` on ``args``, computed by the reference interpreter."""
    module = load_module(source)
    context = module.context
    keep_only_entry_public(module, entry, filename)
    run_pipeline(module, _FRONTEND, filename)
    types = ",".join(str(ArrayType(a.shape, mlir_element_type(a.dtype))) for a in args)
    run_pipeline(module, [f"shlo-remove-dynamism{{types={types}}}"], filename)
    _, results = function_types(module, "main", filename)
    for index, type_ in enumerate(results):
        element = (
            ir.RankedTensorType(type_).element_type
            if isinstance(type_, ir.RankedTensorType)
            else None
        )
        if isinstance(element, ir.ComplexType):
            # The bindings abort the process converting a complex result.
            raise error_at(
                find_function(module, "main", filename).location,
                f"result {index} of @{entry} has type {type_}; the reference interpreter "
                "cannot return complex values (compile it for the CPU instead)",
                filename,
            )
    try:
        results = eval_module(module, [_to_attribute(np.asarray(a), context) for a in args])
    except (RuntimeError, ValueError) as error:
        raise ShloError(f"the interpreter failed: {error}") from None
    return [_to_array(r) for r in results]
