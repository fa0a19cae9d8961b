"""shlo-normalize-dot-general: drop dot algorithms and accumulate narrow floats in f32.

Legacy ``stablehlo.dot`` ops first become the equivalent ``dot_general``, so
they get the same treatment here and in ``shlo-canonicalize-dot-general``.
Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` refuses a
``dot_general`` with an ``algorithm`` attribute (it reaches bufferization as
"op was not bufferized"); on the CPU the element types' own arithmetic is at
least as precise, so the attribute is dropped. And linalg accumulates in the
result type, so an f16 or bf16 dot rounds after every addition, while XLA
(which produced the expected values of the conformance data) accumulates in
f32: dots with float results narrower than 32 bits are computed in f32 and
rounded once.

  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<4x3xf16>, tensor<3x6xf16>) -> tensor<4x6xf16>
  ==>
  %a32 = stablehlo.convert %a : (tensor<4x3xf16>) -> tensor<4x3xf32>
  %b32 = stablehlo.convert %b : (tensor<3x6xf16>) -> tensor<3x6xf32>
  %1 = stablehlo.dot_general %a32, %b32, contracting_dims = [1] x [0]
      : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %0 = stablehlo.convert %1 : (tensor<4x6xf32>) -> tensor<4x6xf16>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import attribute_dict, ops_named
from shlo.pass_framework import Pass
from shlo.passes.decompose.stablehlo_builders import compute_in_f32, is_narrow_float


def dot_to_dot_general(op: ir.Operation) -> ir.Operation:
    """The ``dot_general`` contracting the last dim of the lhs with the first of the rhs."""
    lhs_rank = ir.RankedTensorType(op.operands[0].type).rank
    numbers = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_contracting_dimensions = [{lhs_rank - 1}], "
        "rhs_contracting_dimensions = [0]>"
    )
    attributes = {**attribute_dict(op), "dot_dimension_numbers": numbers}
    with op.location, ir.InsertionPoint(op):
        general = ir.Operation.create(
            "stablehlo.dot_general",
            results=[op.results[0].type],
            operands=list(op.operands),
            attributes=attributes,
        )
    op.results[0].replace_all_uses_with(general.results[0])
    op.erase()
    return general


def normalize_dot(op: ir.Operation) -> None:
    if "algorithm" in op.attributes:
        del op.attributes["algorithm"]
    if is_narrow_float(ir.RankedTensorType(op.results[0].type).element_type):
        compute_in_f32(op)


@dataclass(frozen=True)
class NormalizeDotGeneralPass(Pass):
    """Drop dot algorithms and accumulate narrow floats in f32."""

    argument: ClassVar[str] = "shlo-normalize-dot-general"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.dot_general", "stablehlo.dot"):
            if op.name == "stablehlo.dot":
                if not isinstance(op.operands[0].type, ir.RankedTensorType):
                    continue
                op = dot_to_dot_general(op)
            normalize_dot(op)
