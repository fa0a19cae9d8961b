"""shlo-outline-contractions: move each contraction and convolution into a function.

Ours because upstream is missing it. The codegen recipes (transform dialect)
tile every matmul and convolution in place, so their cost grows with the
program twice over: a 12-layer transformer has twelve copies of each
matmul, and ``fuse_into_containing_op`` prints the op it fuses into a
diagnostic note (later suppressed) whose printer numbers every value of the
enclosing function, which is all of @main. Here each contraction, with the
``linalg.fill`` of its init when nothing else uses it, becomes a private
function; identical ones (same shapes and types) share one. The recipes then
transform each distinct contraction once, in a small function, and
``inline`` puts the transformed code back.

  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m = linalg.matmul ins(%a, %b : ...) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  ==>
  %m = call @shlo_contraction_0(%a, %b) : (...) -> tensor<8x8xf32>
  func.func private @shlo_contraction_0(%a: ..., %b: ...) -> tensor<8x8xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x8xf32>
    %f = linalg.fill ...
    %m = linalg.matmul ...
    return %m : tensor<8x8xf32>
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass
from shlo.passes.cpu.outline_kernels import init_chain, outline

PREFIX = "shlo_contraction_"
# The ops the codegen recipes transform.
CONTRACTIONS = (
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.conv_2d_nhwc_hwcf",
    "linalg.depthwise_conv_2d_nhwc_hwc",
)


@dataclass(frozen=True)
class OutlineContractionsPass(Pass):
    """Outline matmuls and convolutions, with their fills, one function per distinct one."""

    argument: ClassVar[str] = "shlo-outline-contractions"

    def run(self, module: ir.Operation) -> None:
        functions: dict[str, str] = {}
        for op in ops_named(module, *CONTRACTIONS):
            parent = op.parent
            if parent is None or parent.name != "func.func" or len(op.results) != 1:
                continue
            chain = init_chain(op, op.operands[len(op.operands) - 1])
            outline(module, [*chain, op], f"{PREFIX}{len(functions)}", functions)
