"""shlo-min-max-as-select: a float maximum or minimum with a constant as one compare and select.

Ours because upstream's lowering is general: ``arith.maximumf`` becomes
``llvm.maximum``, which x86 computes with three instructions (``vmaxps``,
then a compare and a blend that put NaN back), since ``vmaxps a, b``
returns b when either is NaN. ``select(c > x, c, x)`` is exactly
``vmaxps c, x``: with the constant c first, a NaN x comes out as x, so
one instruction is IEEE's maximum. ReLU (``max(x, 0)``) and clamps are the
common cases.

The one difference is a tie of zeros: for c = +0 and x = -0 the select
gives -0 where the maximum is +0 (the minimum has the same tie for c =
-0). For ``max(x, +0)`` an add of +0.0 turns -0 into +0 and leaves every
other value alone (two instructions), unless every user of the result adds
or subtracts a nonzero constant, which cannot tell the zeros apart.
``min(x, -0)`` keeps its general lowering. Applies to f32 and f64,
scalars and vectors, where the constant is a splat that is not NaN.

  %m = arith.maximumf %x, %zero : vector<16xf32>     // then %m + 1.0
  ==>
  %gt = arith.cmpf ogt, %zero, %x : vector<16xf32>
  %m = arith.select %gt, %zero, %x : vector<16xi1>, vector<16xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import constant_float, create_value, ops_named
from shlo.pass_framework import Pass
from shlo.passes.cpu.approximate_math import OGT, OLT


def _element_type(type_: ir.Type) -> ir.Type:
    return ir.VectorType(type_).element_type if isinstance(type_, ir.VectorType) else type_


def _constant_operand(op: ir.Operation) -> tuple[ir.Value, ir.Value, float] | None:
    """(x, c, value of c) for an op with a constant operand c that is not NaN."""
    for constant, other in ((1, 0), (0, 1)):
        value = constant_float(op.operands[constant])
        if value is not None and not math.isnan(value):
            return op.operands[other], op.operands[constant], value
    return None


def _zero_sign_unobserved(value: ir.Value) -> bool:
    """Whether every user adds or subtracts a nonzero constant (x + c is the same for +-0)."""
    for use in value.uses:
        user = use.owner.operation
        if user.name not in ("arith.addf", "arith.subf"):
            return False
        other = user.operands[1 - use.operand_number]
        constant = constant_float(other)
        if constant is None or constant == 0.0:
            return False
    return True


@dataclass(frozen=True)
class MinMaxAsSelectPass(Pass):
    """Rewrite f32 and f64 maximumf/minimumf with a constant into cmpf and select."""

    argument: ClassVar[str] = "shlo-min-max-as-select"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module, "arith.maximumf", "arith.minimumf"):
            if str(_element_type(op.results[0].type)) not in ("f32", "f64"):
                continue
            parts = _constant_operand(op)
            if parts is None:
                continue
            x, constant, value = parts
            maximum = op.name == "arith.maximumf"
            negative_zero = math.copysign(1.0, value) < 0
            if value == 0.0 and not maximum and negative_zero:
                continue  # min(+0, -0) must be -0; the select gives +0
            result = op.results[0]
            with op.location, ir.InsertionPoint(op):
                i1 = ir.IntegerType.get_signless(1)
                i1_type = (
                    ir.VectorType.get(ir.VectorType(result.type).shape, i1)
                    if isinstance(result.type, ir.VectorType)
                    else i1
                )
                i64 = ir.IntegerType.get_signless(64)
                predicate = ir.IntegerAttr.get(i64, OGT if maximum else OLT)
                beyond = create_value("arith.cmpf", [constant, x], i1_type, predicate=predicate)
                selected = create_value("arith.select", [beyond, constant, x], result.type)
                if (
                    value == 0.0
                    and maximum
                    and not negative_zero
                    and not _zero_sign_unobserved(result)
                ):
                    # -0 + +0 is +0; every other value is unchanged.
                    selected = create_value("arith.addf", [selected, constant], result.type)
            result.replace_all_uses_with(selected)
            op.erase()
