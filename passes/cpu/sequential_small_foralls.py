"""shlo-sequential-small-foralls: a contraction with too little work for threads runs on one.

Ours because upstream has no cost model here: ``scf-forall-to-parallel`` and
``convert-scf-to-openmp`` turn every ``scf.forall`` into an OpenMP parallel
region, and the contraction recipes tile every matmul and convolution with
one (marked ``shlo.contraction_tiles``), however small. Entering and
leaving a region costs a few microseconds; a small model's batched matmul
of 4 x [8, 16] x [16, 8] does less work than that, and the zoo's small Flax
BART ran 83 us a call on one thread against 92 to 111 on two.

The work of a marked ``scf.forall`` on buffers with static bounds is the
lanes of its arithmetic on vectors (``vector.fma``; on partial tiles the
multiplies, adds and selects; masked lanes too, since they run) times the
trip counts of the loops around it. Below ``MIN_LANES_PER_THREAD`` per
thread the forall becomes nested ``scf.for`` loops; a loop with an unknown
trip count keeps the threads. Elementwise ops and reductions are threaded
above a size by ``shlo-plan-vector-codegen`` and ``shlo-fuse-rows``, and
left alone here.

  scf.forall (%b) in (4) {shlo.contraction_tiles}
    ... arith.mulf, arith.addf on vector<8x32xf32>, 16 times ...
  }
  ==>
  scf.for %b = %c0 to %c4 step %c1 {
    ...
  }
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, scf
from shlo.backends.cpu.codegen_recipes import CONTRACTION_TILES
from shlo.ir_utils import constant_index, ops_named
from shlo.pass_framework import Pass

# Vector arithmetic lanes a thread must have for a parallel region to pay
# off. Measured with 2 threads on batched f32 matmuls (B x M x K x N, full
# register tiles, one vector.fma lane per multiply-add): 4 x 32 x 32 x 32
# (131K lanes) ran in 6.6 us on one thread and 7.9 on two; 8 x 32 x 64 x 32
# (524K) in 13.6 and 11.6 us.
MIN_LANES_PER_THREAD = 1 << 17


def _iterations(lower: int, upper: int, step: int) -> int:
    return max(0, -(-(upper - lower) // step))


def _trip_count(loop: ir.Operation) -> int | None:
    """An scf.for's number of iterations, when its bounds and step are constants."""
    lower, upper, step = (constant_index(v) for v in list(loop.operands)[:3])
    if lower is None or upper is None or not step:
        return None
    return _iterations(lower, upper, step)


def _is_vector_arithmetic(op: ir.Operation) -> bool:
    if op.name == "vector.fma":
        return True
    dialect = op.name.partition(".")[0]
    return (
        dialect in ("arith", "math")
        and op.name != "arith.constant"
        and len(op.results) == 1
        and isinstance(op.results[0].type, ir.VectorType)
    )


def _lanes(block: ir.Block) -> int | None:
    """Vector arithmetic lanes one run of ``block`` computes; None if a loop's trip count is
    unknown."""
    total = 0
    for op in block.operations:
        op = op.operation
        if _is_vector_arithmetic(op):
            total += math.prod(op.results[0].type.shape)
        elif op.name == "scf.for":
            trips, body = _trip_count(op), _lanes(op.regions[0].blocks[0])
            if trips is None or body is None:
                return None
            total += trips * body
        else:
            # Each branch of an scf.if, say, counted as if it always ran.
            for region in op.regions:
                for nested in region.blocks:
                    lanes = _lanes(nested)
                    if lanes is None:
                        return None
                    total += lanes
    return total


def _static_bounds(forall: ir.Operation) -> list[tuple[int, int, int]] | None:
    """(lower, upper, step) of each of a forall's loops, when all are static."""
    parts = [
        list(ir.DenseI64ArrayAttr(forall.attributes[name]))
        for name in ("staticLowerBound", "staticUpperBound", "staticStep")
    ]
    if any(value == ir.ShapedType.get_dynamic_size() for part in parts for value in part):
        return None
    return list(zip(*parts))


def _to_nested_loops(forall: ir.Operation, bounds: list[tuple[int, int, int]]) -> None:
    body = forall.regions[0].blocks[0]
    index = ir.IndexType.get()
    insertion = ir.InsertionPoint(forall)
    induction_variables = []
    with forall.location:
        for lower, upper, step in bounds:
            with insertion:
                constants = [arith.ConstantOp(index, n).result for n in (lower, upper, step)]
                loop = scf.ForOp(*constants)
            with ir.InsertionPoint(loop.body):
                terminator = scf.YieldOp([])
            insertion = ir.InsertionPoint(terminator)
            induction_variables.append(loop.induction_variable)
    for argument, variable in zip(body.arguments, induction_variables):
        argument.replace_all_uses_with(variable)
    # Every op but the (empty) scf.forall.in_parallel terminator moves in.
    for op in list(body.operations)[:-1]:
        op.operation.move_before(terminator)
    forall.erase()


@dataclass(frozen=True)
class SequentialSmallForallsPass(Pass):
    """Run a contraction's scf.forall over tiles with too little work for ``threads`` as
    scf.for loops."""

    argument: ClassVar[str] = "shlo-sequential-small-foralls"
    threads: int = 1

    def run(self, module: ir.Operation) -> None:
        for forall in ops_named(module, "scf.forall"):
            # Not bufferized yet (results) or not a contraction's tiles.
            if len(forall.results) or CONTRACTION_TILES not in forall.attributes:
                continue
            bounds = _static_bounds(forall)
            lanes = _lanes(forall.regions[0].blocks[0])
            if bounds is None or lanes is None:
                continue
            iterations = math.prod(_iterations(*loop) for loop in bounds)
            if iterations * lanes < self.threads * MIN_LANES_PER_THREAD:
                _to_nested_loops(forall, bounds)
