"""shlo-split-full-reductions: reduce every dimension but the first, then the first.

Ours because upstream is missing it: a ``stablehlo.reduce`` over all the
dimensions of an array becomes a linalg op with no parallel loop, which the
vector plan cannot split over threads: ``x.sum()`` of [4096, 4096] ran on one
thread, 1.7x XLA's time. Reduced first over every dimension but the first,
the first stage has a parallel loop for the threads and keeps one partial
result per row; a second reduce combines them. StableHLO leaves the order of
a reduction to the implementation (and the vector code already sums in
per-lane partials), so the result is as valid as before.

  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1]
      : (tensor<4096x4096xf32>, tensor<f32>) -> tensor<f32>
  ==>
  %rows = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<4096x4096xf32>, tensor<f32>) -> tensor<4096xf32>
  %s = stablehlo.reduce(%rows init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<4096xf32>, tensor<f32>) -> tensor<f32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named, static_shape
from shlo.pass_framework import Pass


def split_full_reduction(op: ir.Operation) -> None:
    count = len(op.operands) // 2
    inputs = list(op.operands)[:count]
    shape = static_shape(inputs[0])
    rows = [
        ir.RankedTensorType.get([shape[0]], ir.RankedTensorType(value.type).element_type)
        for value in inputs
    ]
    with op.location, ir.InsertionPoint(op):
        body_donor = op.clone()
        first = ir.Operation.create(
            "stablehlo.reduce",
            results=rows,
            operands=list(op.operands),
            attributes={"dimensions": ir.DenseI64ArrayAttr.get(list(range(1, len(shape))))},
            regions=1,
        )
    body_donor.regions[0].blocks[0].append_to(first.regions[0])
    body_donor.erase()
    for index in range(count):
        op.operands[index] = first.results[index]
    op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([0])


@dataclass(frozen=True)
class SplitFullReductionsPass(Pass):
    """Split reductions over every dimension into one over all but the first, then the first."""

    argument: ClassVar[str] = "shlo-split-full-reductions"
    # Smaller reductions are not worth a second thread.
    min_elements: int = 1 << 16

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.reduce"):
            shape = static_shape(op.operands[0])
            if shape is None or len(shape) < 2 or shape[0] < 2:
                continue
            dimensions = sorted(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
            if dimensions == list(range(len(shape))) and math.prod(shape) >= self.min_elements:
                split_full_reduction(op)
