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
and tagged ``shlo.fused_transpose``: the recipe computes it one cache-sized
block at a time inside the matmul's loops. Transposed whole before the
matmul, GPT-2's weights were copied through memory on every call, 15% of
its run time.

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

from shlo._mlir_compat import ir
from shlo.backends.cpu.codegen_recipes import FUSED_TRANSPOSE, MATMUL_THREAD_TILE
from shlo.ir_utils import copy_parts, defining_op, ops_named
from shlo.pass_framework import Pass
from shlo.passes.cpu.outline_kernels import init_chain, outline

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


def _block_order(a: ir.Operation, b: ir.Operation) -> int:
    return -1 if a.is_before_in_block(b) else 1


def fused_transposes(op: ir.Operation) -> list[ir.Operation]:
    """The transposes (with their tensor.empty) that only ``op``, a matmul, reads.

    Only where each block is transposed once: a thread's tile of the result
    spans all of its rows (for the rhs) or all of its columns (for the lhs).
    Else every tile along the other side would transpose the block again,
    which made the training step's weight gradients 15% slower.
    """
    if op.name not in _MATMULS:
        return []
    rows, columns = ir.RankedTensorType(op.results[0].type).shape[-2:]
    spans = (columns <= MATMUL_THREAD_TILE[1], rows <= MATMUL_THREAD_TILE[0])
    found = []
    for value, once in zip(list(op.operands)[:2], spans):
        producer = defining_op(value)
        if (
            once
            and producer is not None
            and producer.parent == op.parent
            and len(list(value.uses)) == 1
            and _is_transpose(producer)
        ):
            found += [*init_chain(producer, producer.operands[1]), producer]
    return found


@dataclass(frozen=True)
class OutlineContractionsPass(Pass):
    """Outline matmuls and convolutions, with their fills, one function per distinct one."""

    argument: ClassVar[str] = "shlo-outline-contractions"
    # Outline the transposes of matmul inputs with them (see the module's doc).
    fuse_transposes: bool = True

    def run(self, module: ir.Operation) -> None:
        functions: dict[str, str] = {}
        for op in ops_named(module, *CONTRACTIONS):
            parent = op.parent
            if parent is None or parent.name != "func.func" or len(op.results) != 1:
                continue
            transposes = fused_transposes(op) if self.fuse_transposes else []
            for transpose in transposes:
                if transpose.name == "linalg.generic":
                    transpose.attributes[FUSED_TRANSPOSE] = ir.UnitAttr.get()
            chain = init_chain(op, op.operands[len(op.operands) - 1])
            ops = sorted([*transposes, *chain], key=functools.cmp_to_key(_block_order))
            outline(module, [*ops, op], f"{PREFIX}{len(functions)}", functions)
