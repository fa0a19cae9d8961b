"""shlo-saturate-float-to-int: make float-to-integer converts saturate and send NaN to 0.

Ours because upstream is wrong for us: ``stablehlo-legalize-to-linalg`` lowers
such a ``stablehlo.convert`` to ``arith.fptosi``/``arith.fptoui``, whose
result is poison for NaN and for values out of the integer range. The
reference interpreter converts with ``APFloat::convertToInteger``: it truncates
toward zero, saturates to the integer's minimum or maximum, and gives 0 for
NaN. Quantized programs depend on this: ``uniform_quantize`` of NaN (clamped,
rounded, then converted to the storage type) must give storage value 0. Each
float-to-integer convert (not to ``i1``) becomes the same convert guarded by
selects (a bound beyond the float type's range is only reached by infinities).

  %0 = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xi8>
  ==>
  %0 = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xi8>
  %low = stablehlo.compare LT, %x, %cst_m128 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = stablehlo.select %low, %c_m128, %0 : tensor<4xi1>, tensor<4xi8>
  %high = stablehlo.compare GE, %x, %cst_128 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %2 = stablehlo.select %high, %c_127, %1 : tensor<4xi1>, tensor<4xi8>
  %nan = stablehlo.compare NE, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %3 = stablehlo.select %nan, %c_0, %2 : tensor<4xi1>, tensor<4xi8>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import ml_dtypes
from shlo._mlir_compat import ir
from shlo.dtypes import numpy_dtype
from shlo.ir_utils import ops_named, ranked_type
from shlo.pass_framework import Pass


def _is_float(element: ir.Type) -> bool:
    return isinstance(element, ir.FloatType)


def _integer_range(element: ir.IntegerType) -> tuple[int, int]:
    width = element.width
    if element.is_unsigned:
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def _largest_float(element: ir.Type) -> float | None:
    """The largest finite value of a float type; None for types numpy cannot describe."""
    try:
        dtype = numpy_dtype(str(element))
    except ValueError:
        return None
    return float(ml_dtypes.finfo(dtype).max)


def _splat(type_: ir.RankedTensorType, value: float) -> ir.Attribute:
    element = type_.element_type
    if _is_float(element):
        scalar = ir.FloatAttr.get(element, value)
        return ir.DenseElementsAttr.get_splat(type_, scalar)
    # Parsed, because IntegerAttr.get cannot hold the largest ui64.
    return ir.Attribute.parse(f"dense<{int(value)}> : {type_}")


class _Builder:
    """Creates StableHLO ops right after ``anchor``, in order."""

    def __init__(self, anchor: ir.Operation) -> None:
        self.ip = ir.InsertionPoint.after(anchor)
        self.location = anchor.location

    def _create(
        self,
        name: str,
        result: ir.Type,
        operands: list[ir.Value],
        attributes: dict[str, ir.Attribute],
    ) -> ir.Value:
        op = ir.Operation.create(
            name,
            results=[result],
            operands=operands,
            attributes=attributes,
            loc=self.location,
            ip=self.ip,
        )
        return op.result

    def constant(self, type_: ir.RankedTensorType, value: float) -> ir.Value:
        return self._create("stablehlo.constant", type_, [], {"value": _splat(type_, value)})

    def compare(self, direction: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        shape = ir.RankedTensorType(lhs.type).shape
        predicate = ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1))
        attributes = {
            "comparison_direction": ir.Attribute.parse(
                f"#stablehlo<comparison_direction {direction}>"
            ),
            "compare_type": ir.Attribute.parse("#stablehlo<comparison_type FLOAT>"),
        }
        return self._create("stablehlo.compare", predicate, [lhs, rhs], attributes)

    def select(self, predicate: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
        return self._create("stablehlo.select", on_false.type, [predicate, on_true, on_false], {})


def saturate_convert(op: ir.Operation) -> None:
    """Guard the float-to-integer ``op`` with selects (see the module docstring)."""
    source_type = ranked_type(op.operands[0])
    result_type = ranked_type(op.results[0])
    if source_type is None or result_type is None or not result_type.has_static_shape:
        return
    source, target = source_type.element_type, result_type.element_type
    if not _is_float(source) or not isinstance(target, ir.IntegerType) or target.width == 1:
        return
    largest = _largest_float(source)
    if largest is None:
        return
    x = op.operands[0]
    converted = op.results[0]
    low, high = _integer_range(ir.IntegerType(target))
    float_type = ir.RankedTensorType.get(result_type.shape, source)

    builder = _Builder(op)
    # (predicate, value) pairs, applied in order: a later one wins.
    guards: list[tuple[ir.Value, int]] = []
    # Below the minimum: for signed types, values in (low - 1, low) truncate to
    # low, so comparing with low itself is exact; for unsigned ones, values in
    # (-1, 0) truncate to 0, so "x < 0 gives 0" is right too. A bound the type
    # cannot hold is only reached by an infinity.
    if low == 0 or -float(low) <= largest:
        below = builder.compare("LT", x, builder.constant(float_type, float(low)))
    else:
        below = builder.compare("EQ", x, builder.constant(float_type, -math.inf))
    guards.append((below, low))
    # At or above high + 1, a power of two and so exact where the type reaches it.
    if float(high + 1) <= largest:
        above = builder.compare("GE", x, builder.constant(float_type, float(high + 1)))
    else:
        above = builder.compare("EQ", x, builder.constant(float_type, math.inf))
    guards.append((above, high))
    guards.append((builder.compare("NE", x, x), 0))

    value = converted
    reads_convert = None
    for predicate, replacement in guards:
        value = builder.select(predicate, builder.constant(result_type, replacement), value)
        reads_convert = reads_convert or value.owner.operation
    converted.replace_all_uses_except(value, reads_convert)


@dataclass(frozen=True)
class SaturateFloatToIntPass(Pass):
    """Make float-to-integer converts saturate and send NaN to 0."""

    argument: ClassVar[str] = "shlo-saturate-float-to-int"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.convert"):
            saturate_convert(op)
