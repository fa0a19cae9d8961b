"""shlo-guard-integer-division: give integer division by zero and overflow XLA's results.

Ours because upstream is missing: StableHLO leaves ``x / 0``, ``x % 0`` and
``MIN / -1`` implementation-defined, and the reference interpreter computes
them with the host's division, which raises SIGFPE and kills the process.
The CPU backend follows XLA (upstream's linalg lowering guards the
division): ``x / 0`` is -1 (all ones), ``x % 0`` is ``x``, ``MIN / -1`` is
``MIN`` and ``MIN % -1`` is 0. This pass writes those results with selects
around a division by a safe divisor, so the interpreter, which runs it
first, agrees with the compiled code instead of crashing.

  %0 = stablehlo.divide %x, %y : tensor<4xi32>
  ==>
  %zero = stablehlo.compare EQ, %y, %c0 : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %overflow = (%x == MIN) and (%y == -1)
  %safe = stablehlo.select (%zero or %overflow), %c1, %y
  %q = stablehlo.divide %x, %safe : tensor<4xi32>
  %0 = select(%zero, -1, select(%overflow, MIN, %q))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_utils import create_constant, create_value, ops_named
from shlo.pass_framework import Pass


def _splat(value: int, type_: ir.RankedTensorType, location: ir.Location) -> ir.Value:
    return create_constant(np.full(type_.shape, value), type_, location).result


def _equal(lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    shape = ir.RankedTensorType(lhs.type).shape
    return create_value(
        "stablehlo.compare",
        [lhs, rhs],
        ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1)),
        comparison_direction=ir.Attribute.parse("#stablehlo<comparison_direction EQ>"),
    )


def guard_division(op: ir.Operation) -> None:
    type_ = ir.RankedTensorType(op.results[0].type)
    element = type_.element_type
    if not isinstance(element, ir.IntegerType) or element.width == 1:
        return
    lhs, rhs = op.operands
    divide = op.name == "stablehlo.divide"
    location = op.location
    signed = element.is_signed or element.is_signless  # StableHLO's i32 is signless
    with location, ir.InsertionPoint(op):
        zero = _equal(rhs, _splat(0, type_, location))
        bad = zero
        if signed:
            minimum = -(1 << (element.width - 1))
            overflow = create_value(
                "stablehlo.and",
                [
                    _equal(lhs, _splat(minimum, type_, location)),
                    _equal(rhs, _splat(-1, type_, location)),
                ],
                zero.type,
            )
            bad = create_value("stablehlo.or", [zero, overflow], zero.type)
        safe = create_value("stablehlo.select", [bad, _splat(1, type_, location), rhs], type_)
        result = create_value(op.name, [lhs, safe], type_)
        if signed:
            # MIN / -1 = MIN, MIN % -1 = 0.
            wrapped = _splat(minimum, type_, location) if divide else _splat(0, type_, location)
            result = create_value("stablehlo.select", [overflow, wrapped, result], type_)
        # x / 0 = -1 (all ones, also for unsigned types), x % 0 = x.
        all_ones = create_value("stablehlo.not", [_splat(0, type_, location)], type_)
        by_zero = all_ones if divide else lhs
        result = create_value("stablehlo.select", [zero, by_zero, result], type_)
    op.results[0].replace_all_uses_with(result)
    op.erase()


@dataclass(frozen=True)
class GuardIntegerDivisionPass(Pass):
    """Give integer division by zero and overflow XLA's results, with selects around a safe divisor."""

    argument: ClassVar[str] = "shlo-guard-integer-division"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "stablehlo.divide", "stablehlo.remainder"):
            guard_division(op)
