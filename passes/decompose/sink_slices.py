"""shlo-sink-slices: slice the operands of a broadcast or elementwise op instead of its result.

Ours because upstream is missing it: neither ``canonicalize`` nor the
linalg lowering shrinks an op whose only reader is a slice, so the whole
result is computed and then sliced. transformers' Flax Gemma builds its
causal mask at the largest position count (8192 x 8192, 67M compares per
layer) and slices the 128 x 128 it needs: a quarter of the model's time, on
one thread (XLA's algebraic simplifier moves such slices up). Here a
``stablehlo.slice`` whose operand is a broadcast_in_dim or an elementwise op
that only the slice reads becomes that op on slices of its operands (a
broadcast's expanded dimensions take their one element), and the new slices
sink further in turn.

  %b = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<8192x1xi32>) -> tensor<8192x8192xi32>
  %c = stablehlo.compare GE, %b, %y : (tensor<8192x8192xi32>, tensor<8192x8192xi32>) -> tensor<8192x8192xi1>
  %s = stablehlo.slice %c [0:128, 0:128] : (tensor<8192x8192xi1>) -> tensor<128x128xi1>
  ==>
  %x1 = stablehlo.slice %x [0:128, 0:1] : (tensor<8192x1xi32>) -> tensor<128x1xi32>
  %b1 = stablehlo.broadcast_in_dim %x1, dims = [0, 1] : (tensor<128x1xi32>) -> tensor<128x128xi32>
  %y1 = stablehlo.slice %y [0:128, 0:128] : (tensor<8192x8192xi32>) -> tensor<128x128xi32>
  %s = stablehlo.compare GE, %b1, %y1 : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi1>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.analysis.indexing import ELEMENTWISE_OPS
from shlo.ir_utils import attribute_dict, defining_op, ops_named, slice_ranges, static_shape
from shlo.pass_framework import Pass

# Elementwise ops rebuilt with sliced operands; map has a region to move.
_ELEMENTWISE = ELEMENTWISE_OPS - {"stablehlo.map"}

# (start, limit, stride) of each dimension of a slice.
Ranges = list[tuple[int, int, int]]


def _ranges(op: ir.Operation) -> Ranges:
    parts = (
        list(ir.DenseI64ArrayAttr(op.attributes[name]))
        for name in ("start_indices", "limit_indices", "strides")
    )
    return list(zip(*parts, strict=True))


def _operand_ranges(producer: ir.Operation, ranges: Ranges) -> list[Ranges | None] | None:
    """The slice of each of ``producer``'s operands that the sliced result reads (None:
    the whole operand, a scalar); None if ``producer`` is not one this pass moves past."""
    if producer.name == "stablehlo.broadcast_in_dim":
        operand = static_shape(producer.operands[0])
        result = static_shape(producer.results[0])
        dims = list(ir.DenseI64ArrayAttr(producer.attributes["broadcast_dimensions"]))
        return [
            [
                ranges[d] if size == result[d] else (0, 1, 1)
                for size, d in zip(operand, dims, strict=True)
            ]
        ]
    if producer.name in _ELEMENTWISE:
        return [ranges if static_shape(v) else None for v in producer.operands]
    return None


def sink(slice_op: ir.Operation) -> list[ir.Operation]:
    """Move ``slice_op`` above its operand's producer if it can; the new slices."""
    value = slice_op.operands[0]
    producer = defining_op(value)
    if (
        producer is None
        or len(producer.results) != 1
        or len(list(value.uses)) != 1
        or static_shape(value) is None
    ):
        return []
    operand_ranges = _operand_ranges(producer, _ranges(slice_op))
    if operand_ranges is None:
        return []
    result = ir.RankedTensorType(slice_op.results[0].type)
    operands, new_slices = [], []
    with producer.location, ir.InsertionPoint(slice_op):
        for operand, ranges in zip(producer.operands, operand_ranges, strict=True):
            sliced = operand if ranges is None else slice_ranges(operand, ranges)
            if sliced != operand:
                new_slices.append(defining_op(sliced))
            operands.append(sliced)
        moved = ir.Operation.create(
            producer.name,
            results=[ir.RankedTensorType.get(result.shape, result.element_type)],
            operands=operands,
            attributes=attribute_dict(producer),
        )
    slice_op.results[0].replace_all_uses_with(moved.results[0])
    slice_op.erase()
    producer.erase()
    return new_slices


@dataclass(frozen=True)
class SinkSlicesPass(Pass):
    """Slice a broadcast's or an elementwise op's operands instead of its result."""

    argument: ClassVar[str] = "shlo-sink-slices"

    def run(self, module: ir.Operation) -> None:
        work = ops_named(module, "stablehlo.slice")
        while work:
            work += sink(work.pop())
