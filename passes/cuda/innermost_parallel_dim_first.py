"""shlo-innermost-parallel-dim-first: reverse each scf.parallel's dimensions, innermost first.

Ours because upstream's GPU mapping takes the dimensions in order:
``scf-parallel-loop-tiling`` tiles the first dimension into blocks of
threads and ``gpu-map-parallel-loops`` maps the tile's first dimension to
thread x. Buffers are row-major, so the loop's last dimension is the one
whose consecutive iterations touch consecutive addresses; put first,
consecutive threads of a warp read and write consecutive addresses
(coalesced), and a small leading dimension (a batch of 1, the 6 rows of a
6x300 array) no longer leaves most of each block idle. The loop body is
unchanged: each induction variable keeps its meaning, only the order of the
dimensions changes. Loops with results (reductions) are left alone.

  scf.parallel (%i, %j) = (%c0, %c0) to (%c6, %c300) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<6x300xf32>
    ...
  }
  ==>
  scf.parallel (%j, %i) = (%c0, %c0) to (%c300, %c6) step (%c1, %c1) {
    %v = memref.load %in[%i, %j] : memref<6x300xf32>
    ...
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import ops_named
from shlo.pass_framework import Pass


def reverse_dimensions(loop: ir.Operation) -> None:
    """Reverse the dimensions of an scf.parallel without results, in place."""
    body = loop.regions[0].blocks[0]
    rank = len(body.arguments)
    # Operands: lower bounds, upper bounds, steps (then no init values).
    bounds = list(loop.operands)
    for group in range(3):
        values = bounds[group * rank : (group + 1) * rank]
        for index, value in enumerate(reversed(values)):
            loop.operands[group * rank + index] = value
    # Induction variable i now walks what was dimension rank-1-i.
    uses = [[(use.owner, use.operand_number) for use in arg.uses] for arg in body.arguments]
    for index, arg_uses in enumerate(uses):
        new_argument = body.arguments[rank - 1 - index]
        for owner, number in arg_uses:
            owner.operands[number] = new_argument


@dataclass(frozen=True)
class InnermostParallelDimFirstPass(Pass):
    """Reverse each scf.parallel's dimensions so the innermost comes first."""

    argument: ClassVar[str] = "shlo-innermost-parallel-dim-first"

    def run(self, module: ir.Operation) -> None:
        for loop in ops_named(module, "scf.parallel"):
            if len(loop.results) == 0 and len(loop.regions[0].blocks[0].arguments) > 1:
                reverse_dimensions(loop)
