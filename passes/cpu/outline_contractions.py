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

An input that is a transpose only the matmul reads (a weight stored
``[out, in]``, as transformers' Flax GPT-2 keeps them) is outlined with it
and tagged ``shlo.fused_block``: the recipe computes it one cache-sized
block at a time inside the matmul's loops. Transposed whole before the
matmul, GPT-2's weights were copied through memory on every call, 15% of
its run time. An f32 rhs that is no such transpose, of a matmul or a batch
matmul, is copied the same way, a block at a time (a ``linalg.copy`` tagged
``shlo.fused_block``), when each thread tile has at least
``PACKED_RHS_MIN_ROWS`` rows (a block serves the rows of one tile, then is
copied again): the register tiles then read rows of the block 512 bytes
apart instead of rows of the rhs 4 N bytes apart, each on its own page and,
for N a multiple of 1024, all in the same L1 sets. [1024, 1024] x
[1024, 1024]: 8.8 -> 6.6 ms; [128, 768] x [768, 2304] (GPT-2's attention
input): 1.86 -> 1.37 ms. With
16 rows the copy costs more than it saves (0.94 -> 1.00 ms at
[16, 1024] x [1024, 4096]). Batch matmuls: attention's 8 x [512, 64] x
[64, 512] 1.58 -> 1.22 ms, 4 x [256, 256] x [256, 1024] 6.46 -> 2.01 ms.

A matmul of at most 8 rows (a decoding step) whose f32 rhs is a transpose
of a weight ``w[n, k]`` that only it reads becomes instead a
``linalg.generic`` tagged ``shlo.dot_rows`` that reads ``w`` itself: dot
products of x's rows with w's rows, which the recipe streams in memory
order. Through block transposes, GPT-2's tied output layer for decoding
(``x[2, 768] @ wte[50257, 768].T``, 154 MB) read 7 GB/s, 1.8x XLA's time;
as dot products, 20 GB/s and 0.5-0.7x.

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

import functools
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, linalg, tensor
from shlo.backends.cpu.codegen_recipes import (
    DOT_ROWS,
    FUSED_BLOCK,
    NARROW_MATMULS,
    matmul_thread_tile,
)
from shlo.ir_utils import copy_parts, defining_op, ops_named, static_shape
from shlo.pass_framework import Pass
from shlo.passes.cpu.outline_kernels import DistinctFunctions, init_chain, outline

PREFIX = "shlo_contraction_"
# The ops the codegen recipes transform.
CONTRACTIONS = (
    "linalg.matmul",
    "linalg.batch_matmul",
    "linalg.conv_2d_nhwc_hwcf",
    "linalg.depthwise_conv_2d_nhwc_hwc",
)


# The matmuls whose inputs' transposes the recipe computes block by block.
_MATMULS = ("linalg.matmul", "linalg.batch_matmul")


def _is_transpose(op: ir.Operation) -> bool:
    """A linalg.generic that only copies its one input, permuting the dimensions."""
    parts = copy_parts(op)
    if parts is None:
        return False
    (input_map,), (output_map,) = parts.input_maps, parts.output_maps
    return input_map.is_permutation and output_map.is_permutation


# The fewest rows of a matmul whose rhs is copied into blocks (see the module's doc).
PACKED_RHS_MIN_ROWS = 32
# The most rows of a matmul rewritten as dot products of a weight's rows.
DOT_ROWS_MAX_ROWS = max(rows for _, rows, _ in NARROW_MATMULS)

_MATMUL_MAPS = "affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>"
_DOT_ROWS_MAPS = "affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>"


def _maps(operand_maps: str) -> ir.ArrayAttr:
    return ir.ArrayAttr(ir.Attribute.parse(f"[{operand_maps}, affine_map<(m, n, k) -> (m, n)>]"))


def _is_narrow(op: ir.Operation) -> bool:
    """A linalg.matmul of at most ``DOT_ROWS_MAX_ROWS`` rows."""
    rows = ir.RankedTensorType(op.results[0].type).shape[0]
    return op.name == "linalg.matmul" and 0 <= rows <= DOT_ROWS_MAX_ROWS


def _transpose_read_only_by(op: ir.Operation, value: ir.Value) -> ir.Operation | None:
    producer = defining_op(value)
    if (
        producer is not None
        and producer.parent == op.parent
        and len(list(value.uses)) == 1
        and _is_transpose(producer)
    ):
        return producer
    return None


def as_dot_rows(op: ir.Operation) -> ir.Operation | None:
    """A narrow f32 ``linalg.matmul`` whose rhs is a transpose of ``w[n, k]`` that only it
    reads, rebuilt as the ``DOT_ROWS`` generic ``x[m, k] w[n, k]`` (the transpose
    erased); else None."""
    transpose = _transpose_read_only_by(op, op.operands[1])
    shapes = [static_shape(value) for value in op.operands]
    if (
        not _is_narrow(op)
        or transpose is None
        or any(shape is None or 0 in shape for shape in shapes)
        or not all(isinstance(value.type.element_type, ir.F32Type) for value in op.operands)
        or op.attributes["indexing_maps"] != _maps(_MATMUL_MAPS)
    ):
        return None
    parts = copy_parts(transpose)
    if parts.input_maps == parts.output_maps:
        return None
    dead = [*init_chain(transpose, transpose.operands[1]), transpose]
    x, init = op.operands[0], op.operands[2]
    f32 = ir.F32Type.get()
    with op.location, ir.InsertionPoint(op):
        parallel, reduction = (
            ir.Attribute.parse(f"#linalg.iterator_type<{kind}>")
            for kind in ("parallel", "reduction")
        )
        dot = ir.Operation.create(
            "linalg.generic",
            results=[op.results[0].type],
            operands=[x, parts.inputs[0], init],
            attributes={
                "indexing_maps": _maps(_DOT_ROWS_MAPS),
                "iterator_types": ir.ArrayAttr.get([parallel, parallel, reduction]),
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get([2, 1]),
                DOT_ROWS: ir.UnitAttr.get(),
            },
            regions=1,
        )
        lhs, rhs, accumulator = dot.regions[0].blocks.append(f32, f32, f32).arguments
        with ir.InsertionPoint(dot.regions[0].blocks[0]):
            linalg.YieldOp([arith.addf(accumulator, arith.mulf(lhs, rhs))])
    op.results[0].replace_all_uses_with(dot.results[0])
    op.erase()
    # The transpose, then its tensor.empty: only the matmul read them.
    for unused in reversed(dead):
        unused.erase()
    return dot


def _block_order(a: ir.Operation, b: ir.Operation) -> int:
    return -1 if a.is_before_in_block(b) else 1


def fused_transposes(op: ir.Operation, threads: int) -> list[ir.Operation]:
    """The transposes (with their tensor.empty) that only ``op``, a matmul, reads.

    Only where each block is transposed once: a thread's tile of the result
    spans all of its rows (for the rhs) or all of its columns (for the lhs).
    Else every tile along the other side would transpose the block again,
    which made the training step's weight gradients 15% slower. Not the rhs
    of a narrow matmul, whose threads each take a share of all the columns:
    its blocks would outgrow the caches (8x slower on GPT-2's output layer).
    """
    shape = static_shape(op.results[0]) if op.name in _MATMULS else None
    if shape is None:
        return []
    rows, columns = shape[-2:]
    tile_rows, tile_columns = matmul_thread_tile(shape, threads)
    spans = (columns <= tile_columns, rows <= tile_rows and not _is_narrow(op))
    found = []
    for value, once in zip(list(op.operands)[:2], spans):
        producer = _transpose_read_only_by(op, value) if once else None
        if producer is not None:
            found += [*init_chain(producer, producer.operands[1]), producer]
    return found


def packed_rhs(op: ir.Operation, fused: list[ir.Operation], threads: int) -> list[ir.Operation]:
    """A ``linalg.copy`` of ``op``'s rhs (with its tensor.empty), which ``op`` now reads, if
    ``op`` is an f32 (batch) matmul whose thread tiles have at least PACKED_RHS_MIN_ROWS rows and
    whose rhs is not one of the ``fused`` transposes; else nothing. Each thread tile
    copies its blocks, which only its rows read."""
    rhs = op.operands[1]
    shape = static_shape(op.results[0]) if op.name in _MATMULS else None
    if (
        shape is None
        or 0 in shape
        or min(shape[-2], matmul_thread_tile(shape, threads)[0]) < PACKED_RHS_MIN_ROWS
        or any(rhs == transpose.results[0] for transpose in fused)
        or not all(isinstance(value.type.element_type, ir.F32Type) for value in op.operands)
    ):
        return []
    rhs_type = ir.RankedTensorType(rhs.type)
    with op.location, ir.InsertionPoint(op):
        empty = tensor.EmptyOp(rhs_type.shape, rhs_type.element_type)
        copy = linalg.CopyOp([rhs_type], [rhs], [empty.result])
        body = copy.regions[0].blocks.append(rhs_type.element_type, rhs_type.element_type)
        with ir.InsertionPoint(body):
            linalg.YieldOp([body.arguments[0]])
    op.operands[1] = copy.results[0]
    return [empty.operation, copy.operation]


@dataclass(frozen=True)
class OutlineContractionsPass(Pass):
    """Outline matmuls and convolutions, with their fills, one function per distinct one."""

    argument: ClassVar[str] = "shlo-outline-contractions"
    # Outline the transposes of matmul inputs with them (see the module's doc).
    fuse_transposes: bool = True
    # The threads the matmuls' tiles are planned for (shlo-insert-codegen-recipes).
    threads: int = 1

    def run(self, module: ir.Operation) -> None:
        functions = DistinctFunctions()
        for op in ops_named(module, *CONTRACTIONS):
            parent = op.parent
            if parent is None or parent.name != "func.func" or len(op.results) != 1:
                continue
            dot = as_dot_rows(op) if self.fuse_transposes else None
            if dot is not None:
                op = dot
            # The transposes and copies computed a block at a time, with their tensor.empty.
            blocks = []
            if self.fuse_transposes:
                blocks = fused_transposes(op, self.threads)
                blocks += packed_rhs(op, blocks, self.threads)
            for block in blocks:
                if block.name in ("linalg.generic", "linalg.copy"):
                    block.attributes[FUSED_BLOCK] = ir.UnitAttr.get()
            chain = init_chain(op, op.operands[len(op.operands) - 1])
            ops = sorted([*blocks, *chain], key=functools.cmp_to_key(_block_order))
            outline(module, [*ops, op], f"{PREFIX}{len(functions)}", functions)
