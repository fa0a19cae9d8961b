"""shlo-simplify: fold constant broadcasts, static dimension sizes and integer shape arithmetic.

Ours because upstream is missing: the pinned wheel lacks
``stablehlo-aggressive-simplification``, and ``canonicalize`` does not fold
these StableHLO ops. Dead pure ops are erased too.

  %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<16xf32>
  ==>
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<16xf32>
  %0 = stablehlo.add %arg0, %cst : tensor<16xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.folding import fold_constants
from shlo.pass_framework import Pass


@dataclass(frozen=True)
class SimplifyPass(Pass):
    """Fold constant broadcasts, static dimension sizes and integer shape arithmetic."""

    argument: ClassVar[str] = "shlo-simplify"

    def run(self, module: ir.Operation) -> None:
        fold_constants(module)
