"""shlo-check-shape-assertions: evaluate JAX shape assertions as soon as their inputs are static.

Ours because upstream's order is wrong for us: ``stablehlo-check-shape-assertions``
needs constant operands, which only exist after ``stablehlo-refine-shapes``;
but refine-shapes fails first on inputs that break the assertions (a slice
larger than a dimension, say), so the user never sees JAX's message. This pass
runs right after refine-arguments: it folds the dimension arithmetic of the
assertions, reports a false one with JAX's message and the values filled in,
and erases the ones that hold. Assertions that are not yet constant stay.

  // with %arg0 refined to tensor<3x4xf32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%1, %0) {error_message = "Expected value >= 1 for 'b', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  ==>
  (assertion holds: erased; had it failed: error: Expected value >= 1 for 'b', got 3)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.folding import fold_constants
from shlo.ir_utils import constant_array, ops_named
from shlo.pass_framework import Pass, PassError


def is_shape_assertion(op: ir.Operation) -> bool:
    # Bytes, not str: the bindings raise converting a name that is not valid UTF-8.
    return (
        op.name == "stablehlo.custom_call"
        and "call_target_name" in op.attributes
        and ir.StringAttr(op.attributes["call_target_name"]).value_bytes == b"shape_assertion"
    )


def format_assertion_message(op: ir.Operation) -> str:
    """JAX's error_message with ``{i}`` replaced by the value of operand ``i + 1``."""
    attribute = op.attributes["error_message"] if "error_message" in op.attributes else None
    if not isinstance(attribute, ir.StringAttr):
        return "shape assertion failed (it has no error_message string)"
    template = attribute.value_bytes.decode(errors="replace")
    values = [constant_array(operand) for operand in list(op.operands)[1:]]

    def fill(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if index < len(values) and values[index] is not None:
            return str(values[index].tolist())  # type: ignore[union-attr]
        return match.group(0)

    return re.sub(r"\{(\d+)\}", fill, template)


@dataclass(frozen=True)
class CheckShapeAssertionsPass(Pass):
    """Evaluate JAX shape assertions as soon as their inputs are static."""

    argument: ClassVar[str] = "shlo-check-shape-assertions"

    def run(self, module: ir.Operation) -> None:
        assertions = [
            op for op in ops_named(module, "stablehlo.custom_call") if is_shape_assertion(op)
        ]
        if not assertions:
            return
        # Folding rewrites the operands; the side-effecting calls themselves stay.
        fold_constants(module)
        for op in assertions:
            holds = constant_array(op.operands[0])
            if holds is None:
                continue
            if not bool(holds):
                raise PassError(op.location, format_assertion_message(op))
            op.erase()
