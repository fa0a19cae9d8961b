"""shlo-copy-duplicate-results: give each result of a function its own tensor.

Ours because upstream is wrong: ``buffer-results-to-out-params`` with
``hoist-static-allocs`` crashes (SIGSEGV) when one buffer is returned twice.
A copy makes every returned value distinct before bufferization.

  return %0, %0 : tensor<3xf32>, tensor<3xf32>
  ==>
  %1 = bufferization.alloc_tensor() copy(%0) : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass


def copy_duplicates(terminator: ir.Operation) -> None:
    seen: set[ir.Value] = set()
    for index, value in enumerate(list(terminator.operands)):
        if value in seen:
            copy = ir.Operation.create(
                "bufferization.alloc_tensor",
                results=[value.type],
                operands=[value],
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 1, 0])},
                loc=terminator.location,
            )
            ir.InsertionPoint(terminator).insert(copy)
            terminator.operands[index] = copy.result
        seen.add(value)


@dataclass(frozen=True)
class CopyDuplicateResultsPass(Pass):
    """Copy a tensor returned more than once, so that each result has its own buffer."""

    argument: ClassVar[str] = "shlo-copy-duplicate-results"

    def run(self, module: ir.Operation) -> None:
        for terminator in ops_named(module, "func.return"):
            copy_duplicates(terminator)
