"""shlo-widen-unsigned-quantized: give unsigned quantized types a wider signed storage type.

Ours because upstream is wrong: ``stablehlo-legalize-quant-to-math`` stores
``!quant.uniform<u8:...>`` values as signless ``i8`` and then sign-extends
them, so storage values above 127 come out negative (and converting a
quantized value above 127 to ``i8`` overflows). A ``uN`` storage type becomes
``i(2N)`` with the same storage range, which that pass handles correctly; the
quantized math is unchanged (``u32``, which has no wider storage type in
StableHLO, is left alone). Constants are rewritten to the wider type.
Function arguments and results keep ``uiN`` storage (what callers pass in and
get back): they are converted to and from the wide type at the boundary.

  func.func @main(%arg0: tensor<4x!quant.uniform<u8:f32, 5.000000e-01:10>>) -> tensor<4xf32> {
    %0 = stablehlo.uniform_dequantize %arg0 : (tensor<4x!quant.uniform<u8:f32, 5.000000e-01:10>>) -> tensor<4xf32>
  ==>
  func.func @main(%arg0: tensor<4xui8>) -> tensor<4xf32> {
    %0 = stablehlo.convert %arg0 : (tensor<4xui8>) -> tensor<4xi16>
    %1 = stablehlo.bitcast_convert %0 : (tensor<4xi16>) -> tensor<4x!quant.uniform<i16<0:255>:f32, 5.000000e-01:10>>
    %2 = stablehlo.uniform_dequantize %1 : (tensor<4x!quant.uniform<i16<0:255>:f32, 5.000000e-01:10>>) -> tensor<4xf32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir, quant
from shlo.ir_utils import as_ranked, functions, ops_named
from shlo.pass_framework import Pass


def _unsigned_quantized(element: ir.Type) -> quant.QuantizedType | None:
    element = element.maybe_downcast()
    if isinstance(element, quant.QuantizedType) and not element.is_signed:
        return element
    return None


def widen_element(element: ir.Type) -> ir.Type | None:
    """The signed, twice as wide quantized type for an unsigned one; None for other types."""
    narrow = _unsigned_quantized(element)
    # StableHLO's quantized types store at most 32 bits: u32 stays as it is.
    if narrow is None or narrow.storage_type_integral_width > 16:
        return None
    storage = ir.IntegerType.get_signless(2 * narrow.storage_type_integral_width)
    signed = quant.QuantizedType.FLAG_SIGNED
    low, high = narrow.storage_type_min, narrow.storage_type_max
    if isinstance(narrow, quant.UniformQuantizedType):
        return quant.UniformQuantizedType.get(
            signed, storage, narrow.expressed_type, narrow.scale, narrow.zero_point, low, high
        )
    if isinstance(narrow, quant.UniformQuantizedPerAxisType):
        return quant.UniformQuantizedPerAxisType.get(
            signed,
            storage,
            narrow.expressed_type,
            narrow.scales,
            narrow.zero_points,
            narrow.quantized_dimension,
            low,
            high,
        )
    return None


def widen_type(type_: ir.Type) -> ir.Type | None:
    """``type_`` with a widened element type, or None when it has no unsigned quantized one."""
    ranked = as_ranked(type_)
    if ranked is None:
        return None
    wide = widen_element(ranked.element_type)
    return None if wide is None else ir.RankedTensorType.get(ranked.shape, wide)


def _boundary_type(type_: ir.Type) -> ir.Type:
    """The type callers see: ``uiN`` storage for unsigned quantized tensors."""
    ranked = as_ranked(type_)
    if ranked is None:
        return type_
    narrow = _unsigned_quantized(ranked.element_type)
    if narrow is None or widen_element(narrow) is None:
        return type_
    unsigned = ir.IntegerType.get_unsigned(narrow.storage_type_integral_width)
    return ir.RankedTensorType.get(ranked.shape, unsigned)


def _storage_type(type_: ir.Type) -> ir.Type:
    return quant.QuantizedType.cast_to_storage_type(type_)


def _create(name: str, operand: ir.Value, result: ir.Type, loc: ir.Location) -> ir.Operation:
    return ir.Operation.create(name, results=[result], operands=[operand], loc=loc)


def _widen_constant(op: ir.Operation, wide: ir.Type) -> None:
    """Rewrite the storage values of a quantized constant for the wide storage type."""
    attr = ir.DenseElementsAttr(op.attributes["value"])
    narrow = ir.RankedTensorType(attr.type)
    width = ir.IntegerType(narrow.element_type).width
    values = np.array(attr).astype(np.int64) & ((1 << width) - 1)  # unsigned storage
    if attr.is_splat:  # the array holds one element
        values = np.full(narrow.shape, values.flat[0])
    storage = ir.RankedTensorType(_storage_type(wide))
    storage_dtype = np.dtype(f"int{ir.IntegerType(storage.element_type).width}")
    data = np.ascontiguousarray(values.reshape(narrow.shape).astype(storage_dtype))
    op.attributes["value"] = ir.DenseElementsAttr.get(
        data, type=storage.element_type, shape=list(narrow.shape)
    )


def _widen_function(function: ir.Operation) -> None:
    """Keep ``uiN`` storage on the signature; convert to and from the wide type inside."""
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    inputs = [_boundary_type(t) for t in function_type.inputs]
    results = [_boundary_type(t) for t in function_type.results]
    function.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
    if not function.regions[0].blocks:
        return
    entry = function.regions[0].blocks[0]
    ip = ir.InsertionPoint.at_block_begin(entry)
    for argument in entry.arguments:
        wide = widen_type(argument.type)
        if wide is None:
            continue
        loc = function.location
        argument.set_type(_boundary_type(argument.type))
        extended = _create("stablehlo.convert", argument, _storage_type(wide), loc)
        ip.insert(extended)
        quantized = _create("stablehlo.bitcast_convert", extended.result, wide, loc)
        ip.insert(quantized)
        argument.replace_all_uses_except(quantized.result, extended)
    for block in function.regions[0].blocks:
        terminator = list(block.operations)[-1].operation
        if terminator.name != "func.return":
            continue
        for index, value in enumerate(list(terminator.operands)):
            narrow = _boundary_type(value.type)
            if narrow == value.type:
                continue
            wide = widen_type(value.type)
            assert wide is not None
            before = ir.InsertionPoint(terminator)
            storage = _create(
                "stablehlo.bitcast_convert", value, _storage_type(wide), terminator.location
            )
            before.insert(storage)
            truncated = _create("stablehlo.convert", storage.result, narrow, terminator.location)
            before.insert(truncated)
            terminator.operands[index] = truncated.result


@dataclass(frozen=True)
class WidenUnsignedQuantizedPass(Pass):
    """Give unsigned quantized types a wider signed storage type."""

    argument: ClassVar[str] = "shlo-widen-unsigned-quantized"

    def run(self, module: ir.Operation) -> None:
        for function in functions(module):
            _widen_function(function)
        # A program has few distinct types: each is looked at once (GPT-2's
        # frontend asked 2,256 times, 9 ms, of a dozen types).
        widened: dict[ir.Type, ir.Type | None] = {}

        def wide_type(type_: ir.Type) -> ir.Type | None:
            if type_ not in widened:
                widened[type_] = widen_type(type_)
            return widened[type_]

        for op in ops_named(module):
            for region in op.regions:
                for block in region.blocks:
                    for argument in block.arguments:
                        wide = wide_type(argument.type)
                        if wide is not None:
                            argument.set_type(wide)
            for result in op.results:
                wide = wide_type(result.type)
                if wide is None:
                    continue
                if op.name == "stablehlo.constant":
                    _widen_constant(op, wide)
                result.set_type(wide)
