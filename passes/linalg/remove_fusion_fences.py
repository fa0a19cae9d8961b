"""shlo-remove-fusion-fences: remove the fences shlo-fuse-elementwise-trees puts before upstream fusion.

Ours because the fences are: ``shlo-fuse-elementwise-trees`` gives each
value that upstream ``linalg-fuse-elementwise-ops`` must not fuse a second
use, a call to a private ``shlo_fusion_fence_N`` function. Once upstream
fusion has run, this pass erases those calls and declarations.

  func.func private @shlo_fusion_fence_0(tensor<32x512xf32>)
  ...
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<2x16x512xf32> into tensor<32x512xf32>
  func.call @shlo_fusion_fence_0(%c) : (tensor<32x512xf32>) -> ()
  %m = linalg.matmul ins(%c, %w : tensor<32x512xf32>, tensor<512x128xf32>) outs(...)
  ==>
  %c = tensor.collapse_shape %g [[0, 1], [2]] : tensor<2x16x512xf32> into tensor<32x512xf32>
  %m = linalg.matmul ins(%c, %w : tensor<32x512xf32>, tensor<512x128xf32>) outs(...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import callee_name, ops_named, string_value
from shlo.pass_framework import Pass
from shlo.passes.linalg.fuse_elementwise_trees import FENCE_PREFIX


def _is_fence(symbol: str) -> bool:
    return symbol.startswith(FENCE_PREFIX)


@dataclass(frozen=True)
class RemoveFusionFencesPass(Pass):
    """Remove the fences shlo-fuse-elementwise-trees puts before upstream fusion."""

    argument: ClassVar[str] = "shlo-remove-fusion-fences"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "func.call", "func.func"):
            if op.name == "func.call":
                symbol = callee_name(op)
            else:
                symbol = string_value(op.attributes["sym_name"])
            if _is_fence(symbol):
                op.erase()
