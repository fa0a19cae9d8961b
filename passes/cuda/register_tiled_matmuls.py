"""shlo-register-tiled-matmuls: each GPU thread computes a TILE x TILE block of a matmul.

Ours: upstream's ``convert-linalg-to-parallel-loops`` gives one thread per
output element, which loads one element of each operand per multiply-add
(two loads per FMA). Here a ``linalg.matmul`` or ``linalg.batch_matmul`` on
buffers of f32 or f64 becomes an ``scf.parallel`` over (batch,) row tiles and
column tiles whose body keeps TILE x TILE accumulators in registers through
the loop over the contracted dimension: per step it loads TILE elements of a
column of A and TILE of a row of B for TILE x TILE fused multiply-adds (one
rounding each, as XLA's GPU matmuls; linalg's body rounds twice). The
accumulators start from the output (linalg's ``C += A * B``); edge tiles
clamp their loads into the operands and store only their elements inside
the output. Later stages map the loop to blocks and threads as any other.

  linalg.matmul ins(%a, %b : memref<256x512xf32>, memref<512x384xf32>)
      outs(%c : memref<256x384xf32>)
  ==>
  scf.parallel (%ti, %tj) = (%c0, %c0) to (%c64, %c96) step (%c1, %c1) {
    %c00 = memref.load %c[%i0, %j0] ...              // TILE x TILE accumulators
    %acc:16 = scf.for %k = %c0 to %c512 step %c1 iter_args(...) -> (f32, ...) {
      %a0 = memref.load %a[%i0, %k] ... %b0 = memref.load %b[%k, %j0] ...
      %s00 = math.fma %a0, %b0, %acc00 : f32 ...
    }
    memref.store %acc#0, %c[%i0, %j0] ...            // inside the output only
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, memref, scf
from shlo.ir_utils import has_default_matmul_maps, index_constant, ops_named
from shlo.pass_framework import Pass

TILE = 4


def _takes(op: ir.Operation) -> bool:
    if op.name not in ("linalg.matmul", "linalg.batch_matmul") or len(op.results):
        return False
    # Transposed or broadcast operands: left to the one-thread-per-output path.
    if not has_default_matmul_maps(op):
        return False
    types = [v.type for v in op.operands]
    if len(types) != 3 or not all(isinstance(t, ir.MemRefType) for t in types):
        return False
    if not all(t.has_static_shape and "strided" not in str(t) for t in types):
        return False
    element = ir.MemRefType(types[0]).element_type
    return isinstance(element, ir.F32Type | ir.F64Type) and all(
        ir.MemRefType(t).element_type == element for t in types
    )


def _rewrite(op: ir.Operation) -> None:
    a, b, c = op.operands
    batched = op.name == "linalg.batch_matmul"
    shape_a, shape_b = ir.MemRefType(a.type).shape, ir.MemRefType(b.type).shape
    element = ir.MemRefType(a.type).element_type
    rows, depth, columns = shape_a[-2], shape_a[-1], shape_b[-1]
    batch = shape_a[0] if batched else 1
    index = ir.IndexType.get()
    with op.location, ir.InsertionPoint(op):
        zero, one = index_constant(0), index_constant(1)
        upper = [index_constant(-(-rows // TILE)), index_constant(-(-columns // TILE))]
        if batched:
            upper.insert(0, index_constant(batch))
        loop = scf.ParallelOp([], [zero] * len(upper), upper, [one] * len(upper), [])
        body = loop.regions[0].blocks.append(*[index] * len(upper))
        with ir.InsertionPoint(body):
            ivs = list(body.arguments)
            prefix = [ivs[0]] if batched else []
            tile_i, tile_j = ivs[-2], ivs[-1]
            size = index_constant(TILE)
            i0 = arith.MulIOp(tile_i, size).result
            j0 = arith.MulIOp(tile_j, size).result
            last_row, last_column = index_constant(rows - 1), index_constant(columns - 1)
            row_index, column_index, row_inside, column_inside = [], [], [], []
            for offset in range(TILE):
                i = arith.AddIOp(i0, index_constant(offset)).result if offset else i0
                j = arith.AddIOp(j0, index_constant(offset)).result if offset else j0
                # Loads of an edge tile stay inside the operands; its stores are guarded.
                row_index.append(arith.MinUIOp(i, last_row).result)
                column_index.append(arith.MinUIOp(j, last_column).result)
                row_inside.append(
                    arith.CmpIOp(arith.CmpIPredicate.ult, i, index_constant(rows)).result
                )
                column_inside.append(
                    arith.CmpIOp(arith.CmpIPredicate.ult, j, index_constant(columns)).result
                )
            pairs = [(r, s) for r in range(TILE) for s in range(TILE)]
            initial = [
                memref.LoadOp(c, [*prefix, row_index[r], column_index[s]]).result for r, s in pairs
            ]
            steps = scf.ForOp(zero, index_constant(depth), one, initial)
            with ir.InsertionPoint(steps.body):
                k = steps.induction_variable
                column_of_a = [
                    memref.LoadOp(a, [*prefix, row_index[r], k]).result for r in range(TILE)
                ]
                row_of_b = [
                    memref.LoadOp(b, [*prefix, k, column_index[s]]).result for s in range(TILE)
                ]
                sums = []
                for position, (r, s) in enumerate(pairs):
                    # One rounding per step, as XLA's GPU matmuls (fused multiply-add).
                    operands = [column_of_a[r], row_of_b[s], steps.inner_iter_args[position]]
                    fma = ir.Operation.create("math.fma", results=[element], operands=operands)
                    sums.append(fma.result)
                scf.YieldOp(sums)
            for position, (r, s) in enumerate(pairs):
                inside = arith.AndIOp(row_inside[r], column_inside[s]).result
                guard = scf.IfOp(inside)
                with ir.InsertionPoint(guard.then_block):
                    memref.StoreOp(
                        steps.results[position], c, [*prefix, row_index[r], column_index[s]]
                    )
                    scf.YieldOp([])
            scf.ReduceOp([], 0)
    op.erase()


@dataclass(frozen=True)
class RegisterTiledMatmulsPass(Pass):
    """f32/f64 linalg.matmul and batch_matmul on buffers -> TILE x TILE outputs per thread."""

    argument: ClassVar[str] = "shlo-register-tiled-matmuls"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "linalg.matmul") + ops_named(module, "linalg.batch_matmul"):
            if _takes(op):
                _rewrite(op)
