"""shlo-canonicalize-dot-general: make every contraction a matmul or batch matmul.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` lowers a
``dot_general`` to a named op (``linalg.matmul``, ``linalg.batch_matmul``)
only when it already has that layout: rank 2 contracting ``[1] x [0]``, or
rank 3 with batch dims ``[0] x [0]`` and contracting ``[2] x [1]``. Any other
one (``x[2,16,512] @ w[512,128]``, attention's ``bqhd,bkhd->bhqk``) becomes a
``linalg.generic`` with a reduction loop, which the matmul codegen recipe
does not handle and into which linalg fuses elementwise producers,
recomputing them for every output column. Like XLA's DotDecomposer, this
pass transposes the lhs to (batch, free, contracting) and the rhs to (batch,
contracting, free), collapses them to ``[B,] M, K`` and ``[B,] K, N``,
contracts those, and reshapes the result back; transposes and reshapes that
change nothing are omitted. No free dims on a side give ``M = 1`` or
``N = 1``. Outer products (no contracting dims) stay as they are: upstream
lowers them to an all-parallel op that fuses with its neighbours. Shapes must
be static; other ops are left alone.

  %0 = stablehlo.dot_general %x, %w, contracting_dims = [2] x [0]
      : (tensor<2x16x512xf32>, tensor<512x128xf32>) -> tensor<2x16x128xf32>
  ==>
  %1 = stablehlo.reshape %x : (tensor<2x16x512xf32>) -> tensor<32x512xf32>
  %2 = stablehlo.dot_general %1, %w, contracting_dims = [1] x [0]
      : (tensor<32x512xf32>, tensor<512x128xf32>) -> tensor<32x128xf32>
  %0 = stablehlo.reshape %2 : (tensor<32x128xf32>) -> tensor<2x16x128xf32>
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import attribute_dict, is_static, ops_named
from shlo.pass_framework import Pass
from shlo.passes.decompose import stablehlo_builders as hlo

_FIELD = re.compile(r"(\w+_dimensions)\s*=\s*\[([^\]]*)\]")


def dot_numbers(op: ir.Operation) -> dict[str, list[int]]:
    """The fields of ``op``'s ``#stablehlo.dot<...>``; absent fields are empty."""
    text = str(op.attributes["dot_dimension_numbers"])
    return {key: [int(v) for v in raw.split(",") if v.strip()] for key, raw in _FIELD.findall(text)}


def _numbers_attr(batched: bool) -> ir.Attribute:
    if batched:
        fields = (
            "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
            "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]"
        )
    else:
        fields = "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]"
    return ir.Attribute.parse(f"#stablehlo.dot<{fields}>")


def canonicalize_dot(op: ir.Operation) -> None:
    if not all(is_static(v.type) for v in [*op.operands, *op.results]):
        return
    numbers = dot_numbers(op)
    lhs_batch = numbers.get("lhs_batching_dimensions", [])
    rhs_batch = numbers.get("rhs_batching_dimensions", [])
    lhs_contract = numbers.get("lhs_contracting_dimensions", [])
    rhs_contract = numbers.get("rhs_contracting_dimensions", [])
    if not lhs_contract:
        return  # an outer product
    lhs, rhs = op.operands
    lhs_shape = list(ir.RankedTensorType(lhs.type).shape)
    rhs_shape = list(ir.RankedTensorType(rhs.type).shape)
    lhs_free = [d for d in range(len(lhs_shape)) if d not in lhs_batch + lhs_contract]
    rhs_free = [d for d in range(len(rhs_shape)) if d not in rhs_batch + rhs_contract]
    batch = math.prod(lhs_shape[d] for d in lhs_batch)
    m = math.prod(lhs_shape[d] for d in lhs_free)
    k = math.prod(lhs_shape[d] for d in lhs_contract)
    n = math.prod(rhs_shape[d] for d in rhs_free)
    lead = [batch] if lhs_batch else []
    lhs_canonical = [*lead, m, k]
    rhs_canonical = [*lead, k, n]
    result = op.results[0]
    result_type = ir.RankedTensorType(result.type)
    if (
        lhs_batch == list(range(len(lhs_batch)))
        and rhs_batch == list(range(len(rhs_batch)))
        and len(lhs_batch) <= 1
        and lhs_contract == [len(lhs_shape) - 1]
        and rhs_contract == [len(rhs_batch)]
        and lhs_shape == lhs_canonical
        and rhs_shape == rhs_canonical
    ):
        return  # already what upstream lowers to linalg.matmul or linalg.batch_matmul
    attributes = attribute_dict(op)
    attributes["dot_dimension_numbers"] = _numbers_attr(bool(lhs_batch))
    with op.location, ir.InsertionPoint(op):
        lhs = hlo.reshape(hlo.transpose(lhs, lhs_batch + lhs_free + lhs_contract), lhs_canonical)
        rhs = hlo.reshape(hlo.transpose(rhs, rhs_batch + rhs_contract + rhs_free), rhs_canonical)
        dot = ir.Operation.create(
            "stablehlo.dot_general",
            results=[ir.RankedTensorType.get([*lead, m, n], result_type.element_type)],
            operands=[lhs, rhs],
            attributes=attributes,
        ).result
        # The result's dims are already (batch, lhs free, rhs free).
        replacement = hlo.reshape(dot, list(result_type.shape))
    result.replace_all_uses_with(replacement)
    op.erase()


@dataclass(frozen=True)
class CanonicalizeDotGeneralPass(Pass):
    """Make every contraction a matmul or batch matmul."""

    argument: ClassVar[str] = "shlo-canonicalize-dot-general"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.dot_general"):
            canonicalize_dot(op)
