"""shlo-legalize-quantized-regions: carry quantized values into and out of regions as storage.

Ours because upstream is missing: ``stablehlo-legalize-quant-to-math`` has no
pattern for ops with regions (``reduce``, ``reduce_window``, ``sort``,
``while``, ``if``, ``case``, ``scatter``, ``select_and_scatter``, ``map``,
``all_reduce``...), so any such op with a quantized operand, result or block
argument fails to legalize. Here the op itself moves storage values (its
quantized operands, results and block arguments take the storage type) and
``stablehlo.bitcast_convert`` reinterprets them as quantized where the op's
operands enter, its results leave, its blocks begin and its regions return.
The ops inside the regions stay quantized, so the usual passes lower them.

  %0 = stablehlo.reduce(%q init: %z) applies stablehlo.maximum across dimensions = [1]
       : (tensor<4x3x!quant.uniform<i8:f32, 5.000000e-01:3>>, tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>>
  ==>
  %0 = stablehlo.bitcast_convert %q : (tensor<4x3x!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<4x3xi8>
  %1 = stablehlo.bitcast_convert %z : (tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<i8>
  %2 = stablehlo.reduce(%0 init: %1) across dimensions = [1] : (tensor<4x3xi8>, tensor<i8>) -> tensor<4xi8>
   reducer(%a: tensor<i8>, %b: tensor<i8>) {
    %4 = stablehlo.bitcast_convert %a : (tensor<i8>) -> tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>
    %5 = stablehlo.bitcast_convert %b : (tensor<i8>) -> tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>
    %6 = stablehlo.maximum %4, %5 : tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>
    %7 = stablehlo.bitcast_convert %6 : (tensor<!quant.uniform<i8:f32, 5.000000e-01:3>>) -> tensor<i8>
    stablehlo.return %7 : tensor<i8>
  }
  %3 = stablehlo.bitcast_convert %2 : (tensor<4xi8>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:3>>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir, quant
from shlo.ir_utils import as_ranked, ops_named
from shlo.pass_framework import Pass

# Ops whose regions are not computations on the op's values.
SKIPPED = ("builtin.module", "func.func")
BITCAST = "stablehlo.bitcast_convert"


def is_quantized(type_: ir.Type) -> bool:
    ranked = as_ranked(type_)
    return ranked is not None and isinstance(
        ranked.element_type.maybe_downcast(), quant.QuantizedType
    )


def storage_type(type_: ir.Type) -> ir.Type:
    return quant.QuantizedType.cast_to_storage_type(type_)


def _bitcast(value: ir.Value, result: ir.Type, loc: ir.Location) -> ir.Operation:
    return ir.Operation.create(BITCAST, results=[result], operands=[value], loc=loc)


def _has_quantized_types(op: ir.Operation) -> bool:
    values = [*op.operands, *op.results]
    values += [a for region in op.regions for block in region.blocks for a in block.arguments]
    return any(is_quantized(value.type) for value in values)


def legalize_region_op(op: ir.Operation) -> None:
    """Make ``op`` move storage values; see the module docstring."""
    loc = op.location
    before = ir.InsertionPoint(op)
    for index, value in enumerate(list(op.operands)):
        if is_quantized(value.type):
            cast = _bitcast(value, storage_type(value.type), loc)
            before.insert(cast)
            op.operands[index] = cast.result
    after = ir.InsertionPoint.after(op)
    for result in op.results:
        if not is_quantized(result.type):
            continue
        quantized = result.type
        result.set_type(storage_type(quantized))
        cast = _bitcast(result, quantized, loc)
        after.insert(cast)
        result.replace_all_uses_except(cast.result, cast)
    for region in op.regions:
        for block in region.blocks:
            entry = ir.InsertionPoint.at_block_begin(block)
            for argument in block.arguments:
                if not is_quantized(argument.type):
                    continue
                quantized = argument.type
                argument.set_type(storage_type(quantized))
                cast = _bitcast(argument, quantized, loc)
                entry.insert(cast)
                argument.replace_all_uses_except(cast.result, cast)
            # The terminator returns to the op: its quantized operands become storage.
            terminator = list(block.operations)[-1].operation
            at_end = ir.InsertionPoint(terminator)
            for index, value in enumerate(list(terminator.operands)):
                if is_quantized(value.type):
                    cast = _bitcast(value, storage_type(value.type), terminator.location)
                    at_end.insert(cast)
                    terminator.operands[index] = cast.result


@dataclass(frozen=True)
class LegalizeQuantizedRegionsPass(Pass):
    """Carry quantized values into and out of regions as storage."""

    argument: ClassVar[str] = "shlo-legalize-quantized-regions"

    def run(self, module: ir.Operation) -> None:
        for op in ops_named(module):
            if op.regions and op.name not in SKIPPED and _has_quantized_types(op):
                legalize_region_op(op)
