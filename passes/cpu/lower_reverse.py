"""shlo-lower-reverse: a reverse becomes a generic that reads its operand by index, threaded.

Ours because upstream's lowering cannot be threaded: ``stablehlo-legalize-to-linalg``
makes ``stablehlo.reverse`` a ``linalg.generic`` whose input map reverses
the dimensions (``(d0, -d1 + 2047)``), and upstream's tiling slices such an
operand wrongly (a reversed dimension it does not tile became a slice of
one element), so the vector plan leaves it whole: one scalar loop nest on
one thread, 1.8x XLA's time on [2048, 2048]. Here the generic has no input:
its body reads the operand with ``tensor.extract`` at the reversed indices,
its only map is the identity, and the plan splits it over the threads (LLVM
vectorizes the reversed reads).

  %r = stablehlo.reverse %x, dims = [1] : tensor<4x8xf32>
  ==>
  %r = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1)], iterator_types = ["parallel", "parallel"]}
      outs(%empty : tensor<4x8xf32>) {
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %jr = arith.subi %c7, %j : index
    %v = tensor.extract %x[%i, %jr] : tensor<4x8xf32>
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, linalg, tensor
from shlo.ir_utils import ops_named, parallel_generic, static_shape
from shlo.pass_framework import Pass


def lower_reverse(op: ir.Operation) -> None:
    shape = static_shape(op.results[0])
    dims = set(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    result_type = ir.RankedTensorType(op.results[0].type)
    with op.location, ir.InsertionPoint(op):
        empty = tensor.EmptyOp(shape, result_type.element_type).result
        body = parallel_generic([], [empty])
        with ir.InsertionPoint(body):
            index = ir.IndexType.get()
            indices = []
            for d in range(len(shape)):
                position = linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d))
                if d in dims:
                    last = arith.ConstantOp(index, ir.IntegerAttr.get(index, shape[d] - 1))
                    position = arith.SubIOp(last, position)
                indices.append(position.result)
            value = tensor.ExtractOp(op.operands[0], indices).result
            linalg.YieldOp([value])
    op.results[0].replace_all_uses_with(body.owner.results[0])
    op.erase()


@dataclass(frozen=True)
class LowerReversePass(Pass):
    """Lower static stablehlo.reverse to a generic reading its operand at reversed indices."""

    argument: ClassVar[str] = "shlo-lower-reverse"
    # Smaller reverses keep upstream's lowering, which fuses with its neighbours.
    min_elements: int = 1 << 16

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.reverse"):
            shape = static_shape(op.results[0])
            if shape is None or not shape or 0 in shape:
                continue
            if math.prod(shape) >= self.min_elements:
                lower_reverse(op)
