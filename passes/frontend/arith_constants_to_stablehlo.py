"""shlo-arith-constants-to-stablehlo: tensor ``arith.constant`` ops become ``stablehlo.constant``.

Ours: upstream has no such conversion. torch-mlir's StableHLO output mixes in
``arith.constant`` tensors (the alpha of ``aten.add``, for one), which StableHLO's
folders and the reference interpreter do not accept. Scalar constants and
index tensors (shape computations) stay.

  %c = arith.constant dense<1> : tensor<1xi64>
  ==>
  %c = stablehlo.constant dense<1> : tensor<1xi64>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass


@dataclass(frozen=True)
class ArithConstantsToStablehloPass(Pass):
    """Tensor arith.constant ops become stablehlo.constant."""

    argument: ClassVar[str] = "shlo-arith-constants-to-stablehlo"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "arith.constant"):
            result = op.results[0]
            # Index tensors are shape computations, which StableHLO cannot hold.
            if not isinstance(result.type, ir.RankedTensorType) or isinstance(
                result.type.element_type, ir.IndexType
            ):
                continue
            with ir.InsertionPoint(op), op.location:
                constant = ir.Operation.create(
                    "stablehlo.constant",
                    results=[result.type],
                    attributes={"value": op.attributes["value"]},
                )
            result.replace_all_uses_with(constant.results[0])
            op.erase()
