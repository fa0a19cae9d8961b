"""shlo-widen-integer-dots: a dot of narrow integers into i32 runs as an exact f32 matmul, or an i32 one.

Ours because upstream is missing it: an int8 matmul accumulating in i32
(``jnp.matmul(a, b, preferred_element_type=jnp.int32)``, quantized models)
becomes a ``linalg`` contraction with mixed element types, which the
``vectorize-matmul`` recipe (32-bit operands and result) does not take: it
ran as scalar loops, 11.6x XLA's time on [512, 512] x [512, 512].

The f32 matmul is the fastest one we have, and it is exact here: every
product of two int8 values and every sum of at most 1024 of them is an
integer below 2^24 in magnitude, which f32 holds exactly, whatever order the
sums are taken in. So when the contracted size K times the largest
magnitudes of the two element types is at most 2^24 (int8 x int8: K <=
1024; uint8 x uint8: K <= 258), the operands are converted to f32, the dot is
an f32 dot, and its result is converted back. A larger K with one contracted
dimension is cut into chunks that fit, each an exact f32 dot converted to
i32, summed in i32 (which wraps as the i32 accumulation does; a ui32 result
takes the i32 value modulo 2^32, as its own accumulation would, not the
saturated conversion of a negative float). [512, 512] x
[512, 512] int8: 1.92 -> 0.87 ms (XLA, with VNNI or AMX: 0.25).

Otherwise (16-bit operands, whose exact chunks would be a few elements
long; several contracted dimensions past the bound)
the operands are converted to i32 (sign- or zero-extended, as the
contraction's own conversion does) and the recipe's i32 register tiles
compute the product. The converted copies cost a pass over the operands,
small beside the matmul's n^3 work.

  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<4x3xi8>, tensor<3x6xi8>) -> tensor<4x6xi32>
  ==>
  %af = stablehlo.convert %a : (tensor<4x3xi8>) -> tensor<4x3xf32>
  %bf = stablehlo.convert %b : (tensor<3x6xi8>) -> tensor<3x6xf32>
  %d = stablehlo.dot_general %af, %bf, contracting_dims = [1] x [0]
      : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %0 = stablehlo.convert %d : (tensor<4x6xf32>) -> tensor<4x6xi32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import attribute_dict, create_value, ops_named, slice_ranges
from shlo.pass_framework import Pass
from shlo.passes.decompose.canonicalize_dot_general import dot_numbers

# f32 holds every integer of at most this magnitude exactly.
EXACT_F32_INTEGER = 1 << 24
# Chunks shorter than this would make many small dots (int16 x int8: 2).
MIN_CHUNK = 256


def _element(value: ir.Value) -> ir.Type:
    return ir.RankedTensorType(value.type).element_type


def _integer_width(value: ir.Value) -> int | None:
    element = _element(value)
    return element.width if isinstance(element, ir.IntegerType) else None


def _largest_magnitude(element: ir.IntegerType) -> int:
    if element.width == 1:
        return 1  # a boolean
    return (1 << element.width) - 1 if element.is_unsigned else 1 << (element.width - 1)


def _convert(value: ir.Value, element: ir.Type) -> ir.Value:
    shape = list(ir.RankedTensorType(value.type).shape)
    return create_value("stablehlo.convert", [value], ir.RankedTensorType.get(shape, element))


def _chunks(op: ir.Operation) -> list[tuple[int, int]] | None:
    """The [start, end) ranges of the contracted dimension whose f32 dots are exact; None
    when none is (or the op contracts several dimensions past the bound)."""
    lhs, rhs = op.operands
    product = _largest_magnitude(_element(lhs)) * _largest_magnitude(_element(rhs))
    chunk = EXACT_F32_INTEGER // product
    numbers = dot_numbers(op)
    contracted = numbers.get("lhs_contracting_dimensions", [])
    shape = ir.RankedTensorType(lhs.type).shape
    size = math.prod(shape[d] for d in contracted)
    if chunk == 0 or not contracted:
        return None
    if size <= chunk:
        return [(0, size)]
    if len(contracted) != 1 or chunk < MIN_CHUNK:
        return None
    return [(start, min(start + chunk, size)) for start in range(0, size, chunk)]


def _exact_f32_dot(op: ir.Operation, chunks: list[tuple[int, int]]) -> ir.Value:
    """The value of ``op`` from f32 dots of ``chunks`` of its contracted dimension."""
    lhs, rhs = op.operands
    result_type = ir.RankedTensorType(op.results[0].type)
    f32 = ir.F32Type.get()
    f32_result = ir.RankedTensorType.get(list(result_type.shape), f32)
    numbers = dot_numbers(op)
    attributes = attribute_dict(op)
    # Whole operands for one chunk, else slices along the contracted dimension.
    lhs_dim, rhs_dim = (
        (numbers["lhs_contracting_dimensions"][0], numbers["rhs_contracting_dimensions"][0])
        if len(chunks) > 1
        else (None, None)
    )

    def piece(value: ir.Value, dimension: int | None, start: int, end: int) -> ir.Value:
        shape = ir.RankedTensorType(value.type).shape
        if dimension is not None:
            ranges = [(0, size, 1) for size in shape]
            ranges[dimension] = (start, end, 1)
            value = slice_ranges(value, ranges)
        return _convert(value, f32)

    total = None
    for start, end in chunks:
        dot = create_value(
            "stablehlo.dot_general",
            [piece(lhs, lhs_dim, start, end), piece(rhs, rhs_dim, start, end)],
            f32_result,
            **attributes,
        )
        partial = _convert(dot, ir.IntegerType.get_signless(32))
        if partial.type != result_type:  # ui32: negative sums wrap, not saturate
            partial = _convert(partial, result_type.element_type)
        total = (
            partial
            if total is None
            else create_value("stablehlo.add", [total, partial], result_type)
        )
    return total


@dataclass(frozen=True)
class WidenIntegerDotsPass(Pass):
    """Compute a dot of narrow integers into i32 as exact f32 dots, else on i32 operands."""

    argument: ClassVar[str] = "shlo-widen-integer-dots"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.dot_general"):
            if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                continue
            result = op.results[0]
            if _integer_width(result) != 32:
                continue
            widths = [_integer_width(v) for v in op.operands]
            if any(w is None or w >= 32 for w in widths):
                self._widen_narrow_operands(op)
                continue
            static = all(ir.RankedTensorType(v.type).has_static_shape for v in op.operands)
            chunks = _chunks(op) if static else None
            if chunks is None:
                self._widen_narrow_operands(op)
                continue
            with op.location, ir.InsertionPoint(op):
                value = _exact_f32_dot(op, chunks)
            result.replace_all_uses_with(value)
            op.erase()

    @staticmethod
    def _widen_narrow_operands(op: ir.Operation) -> None:
        result_element = _element(op.results[0])
        for index, operand in enumerate(list(op.operands)):
            width = _integer_width(operand)
            if width is None or width >= 32:
                continue
            with op.location, ir.InsertionPoint(op):
                op.operands[index] = _convert(operand, result_element)
