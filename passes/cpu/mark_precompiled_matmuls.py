"""shlo-mark-precompiled-matmuls: f32 matmuls become calls of placeholders for the precompiled kernel.

Ours: the first half of ``shlo-call-precompiled-matmuls`` (whose docstring
has the design). Each ``linalg.matmul`` or ``linalg.batch_matmul`` the kernel
computes as the op does (f32, static shapes, an init filled with +0.0)
becomes a call of a bodiless private function on the tensors the kernel
reads, with the kernel's sizes and strides as an attribute: a transpose
that only the matmul reads is read through permuted strides instead. The
codegen recipes and fusion leave the opaque call alone, and
``shlo-call-precompiled-matmuls`` expands it right before bufferization.

  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x8xf32>) outs(%f : ...) -> ...
  ==>
  %m = call @shlo_precompiled_matmul_0(%a, %b)
      {shlo.kernel_arguments = array<i64: 1, 4, 8, 3, 0, 3, 1, 0, 8, 1>}
      : (tensor<4x3xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass
from shlo.passes.cpu.call_precompiled_matmuls import MATMULS, eligible, mark


@dataclass(frozen=True)
class MarkPrecompiledMatmulsPass(Pass):
    """Replace f32 (batch) matmuls of static shapes by calls of opaque placeholders."""

    argument: ClassVar[str] = "shlo-mark-precompiled-matmuls"

    def run(self, module: ir.Operation) -> None:
        for index, op in enumerate(m for m in ops_named(module, *MATMULS) if eligible(m)):
            mark(module, op, index)
