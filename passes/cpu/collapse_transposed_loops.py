"""shlo-collapse-transposed-loops: a transpose's loops that move together become one loop.

Ours because upstream has no pass for it: linalg's elementwise fusion can
collapse dimensions (``collapseOpIterationDims``) but only from C++ with a
control function, and no pass or transform op exposes it for transposes.
XLA normalizes transposes the same way before emitting them.

A transpose of rank 3 or more often permutes blocks of dimensions that
stay together: keys transposed for ``q @ k^T``, [s, h, d] -> [h, d, s], move
the heads and the head dimension as one block. ``shlo-plan-vector-codegen``
tiles a transpose in square tiles of its two contiguous loops, read whole
and transposed in registers (shuffles). With a loop of the other block in
between (here the heads), the tile's read has a unit dimension in the
middle, which the transfer lowering cannot transpose: each vector became
16 scalar loads, which LLVM merged into a gather. Collapsed, the transpose
is 2-D and takes the shuffles. Measured in one process, interleaved,
medians of 30 (``shlo.compile``, 2 threads), three runs: [2048, 16, 64] ->
(1, 2, 0) 1.55-2.43 -> 1.45-1.80 ms, [8, 512, 12, 64] -> (0, 2, 3, 1)
1.89-2.07 -> 1.42-1.63 ms (XLA 2.8-6.5 and 3.5-7.1 ms); NCHW -> NHWC,
[16, 64, 64, 32] -> (0, 2, 3, 1), went the other way, 0.46-0.53 -> 0.50-0.56
ms (XLA 1.5-1.8). The bench's GPT-2, attention and training step ran the
same, with the same bits.

Here every all-parallel ``linalg.generic`` that transposes (an input map's
dimensions out of order) has each run of loops that is adjacent and in the
same order in every operand's map collapsed into one: the operands are
collapsed (``tensor.collapse_shape``), the generic runs on the fewer loops,
and its results are expanded back. Bodies that read their loop indices
(``linalg.index``) and maps with constants (broadcasts of unit dimensions)
are left as they are.

  %t = linalg.generic {indexing_maps = [(d0, d1, d2) -> (d2, d0, d1), (d0, d1, d2) -> (d0, d1, d2)], ...}
      ins(%x : tensor<128x12x64xf32>) outs(%e : tensor<12x64x128xf32>)
  ==>
  %cx = tensor.collapse_shape %x [[0], [1, 2]] : tensor<128x12x64xf32> into tensor<128x768xf32>
  %ce = tensor.collapse_shape %e [[0, 1], [2]] : tensor<12x64x128xf32> into tensor<768x128xf32>
  %c = linalg.generic {indexing_maps = [(d0, d1) -> (d1, d0), (d0, d1) -> (d0, d1)], ...}
      ins(%cx : tensor<128x768xf32>) outs(%ce : tensor<768x128xf32>)
  %t = tensor.expand_shape %c [[0, 1], [2]] output_shape [12, 64, 128] : tensor<768x128xf32> into tensor<12x64x128xf32>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, tensor
from shlo.ir_utils import (
    linalg_generic_parts,
    ops_named,
    rebuild_generic,
    result_dims,
    static_shape,
)
from shlo.pass_framework import Pass


def _dims(map_: ir.AffineMap) -> list[int] | None:
    """The loop each result of ``map_`` reads; None unless each reads a loop of its own."""
    dims = result_dims(map_)
    return dims if dims is not None and len(set(dims)) == len(dims) else None


def loop_groups(maps: Sequence[list[int]], loops: int) -> list[list[int]]:
    """Runs of consecutive loops that every map reads side by side, in order, or not at all.

    Each such run can be one loop: every operand holds it as one block of
    dimensions (or none of it).
    """
    groups = [[0]] if loops else []
    for loop in range(1, loops):
        joined = True
        for dims in maps:
            if (loop - 1 in dims) != (loop in dims):
                joined = False
            elif loop in dims and dims.index(loop) != dims.index(loop - 1) + 1:
                joined = False
        if joined:
            groups[-1].append(loop)
        else:
            groups.append([loop])
    return groups


def _blocks(dims: list[int], group_of: dict[int, int]) -> list[list[int]]:
    """An operand's dimensions in blocks, one for each new loop its map reads, in order."""
    blocks: list[list[int]] = []
    for position, loop in enumerate(dims):
        if blocks and group_of[dims[position - 1]] == group_of[loop]:
            blocks[-1].append(position)
        else:
            blocks.append([position])
    return blocks


def _reassociation(blocks: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in block]) for block in blocks]
    )


def _collapsed(value: ir.Value, blocks: list[list[int]]) -> ir.Value:
    """``value`` with each block of dimensions as one, at the current insertion point."""
    if not isinstance(value.type, ir.RankedTensorType) or all(len(b) == 1 for b in blocks):
        return value
    type_ = ir.RankedTensorType(value.type)
    shape = [math.prod(type_.shape[d] for d in block) for block in blocks]
    collapsed_type = ir.RankedTensorType.get(shape, type_.element_type)
    return tensor.CollapseShapeOp(collapsed_type, value, _reassociation(blocks)).result


def collapse(op: ir.Operation) -> bool:
    """Collapse ``op``'s jointly moving loops; whether it did."""
    parts = linalg_generic_parts(op)
    if not parts.all_parallel or ops_named(op, "linalg.index"):
        return False
    operands = [*parts.inputs, *parts.outputs]
    maps = []
    for operand, attr in zip(operands, [*parts.input_map_attrs, *parts.output_map_attrs]):
        dims = _dims(ir.AffineMapAttr(attr).value)
        if dims is None or (
            isinstance(operand.type, ir.ShapedType) and static_shape(operand) is None
        ):
            return False
        maps.append(dims)
    loops = len(parts.iterator_types)
    groups = loop_groups(maps, loops)
    if not any(dims != sorted(dims) for dims in maps) or len(groups) == loops:
        return False
    group_of = {loop: g for g, group in enumerate(groups) for loop in group}
    blocks = [_blocks(dims, group_of) for dims in maps]
    with op.location, ir.InsertionPoint(op):
        collapsed = [
            (
                _collapsed(operand, operand_blocks),
                ir.AffineMapAttr.get(
                    ir.AffineMap.get(
                        len(groups),
                        0,
                        [ir.AffineDimExpr.get(group_of[dims[b[0]]]) for b in operand_blocks],
                    )
                ),
            )
            for operand, dims, operand_blocks in zip(operands, maps, blocks)
        ]
    inputs = len(parts.inputs)
    old_types = [result.type for result in op.results]
    new = rebuild_generic(
        op,
        collapsed[:inputs],
        collapsed[inputs:],
        [[argument] for argument in [*parts.input_args, *parts.output_args]],
        ir.ArrayAttr.get(list(parts.iterator_types)[: len(groups)]),
    )
    # The results take their shapes back.
    with new.location, ir.InsertionPoint.after(new):
        for result, old_type, result_blocks in zip(new.results, old_types, blocks[inputs:]):
            if result.type != old_type:
                shape = ir.RankedTensorType(old_type).shape
                expanded = tensor.ExpandShapeOp(
                    old_type, result, _reassociation(result_blocks), [], shape
                )
                result.replace_all_uses_except(expanded.result, expanded.operation)
    return True


@dataclass(frozen=True)
class CollapseTransposedLoopsPass(Pass):
    """Collapse the loops of a transposing linalg.generic that move together into one."""

    argument: ClassVar[str] = "shlo-collapse-transposed-loops"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "linalg.generic"):
            if all(isinstance(r.type, ir.RankedTensorType) for r in op.results):
                collapse(op)
