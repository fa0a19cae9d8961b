"""shlo-lower-select-and-scatter: lower stablehlo.select_and_scatter to scf loops.

Ours because upstream is missing: ``stablehlo-legalize-to-linalg`` leaves
``stablehlo.select_and_scatter`` alone. The result starts as ``init_value``
broadcast. One ``scf.for`` per dimension walks the source (one window each,
row-major); inside, a second nest walks the window in row-major order and
skips positions in the padding. The first in-bounds element is selected, and
each later one replaces the selection when ``select(selected, current)`` is
false, as the StableHLO interpreter and XLA do. Then the result at the
selected position becomes ``scatter(source, result)``; a window that lies
entirely in the padding scatters nothing. Both regions are moved inline and
work on 0-d tensors. Unsigned element types are bitcast to signless around
the loops.

  %0 = "stablehlo.select_and_scatter"(%x, %s, %zero) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %sum = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %sum : tensor<f32>
  }) : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  ==>
  %init = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %0 = scf.for %w0 = %c0 to %c2 step %c1 iter_args(%acc = %init) -> (tensor<4xf32>) {
    %sel:2 = scf.for %k0 = %c0 to %c2 step %c1 iter_args(%have = %false, %i0 = %c0) -> (i1, index) {
      ...                                          // %o0 = %w0 * 2 + %k0, in bounds?
      %keep = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      ...                                          // keep %i0 or take %o0
    }
    %new = scf.if %sel#0 -> (tensor<4xf32>) {
      %sum = stablehlo.add %a, %b : tensor<f32>    // source[w0], acc[i0]
      %r = tensor.insert (tensor.extract %sum[]) into %acc[%sel#1] : tensor<4xf32>
      scf.yield %r : tensor<4xf32>
    } else {
      scf.yield %acc : tensor<4xf32>
    }
    scf.yield %new : tensor<4xf32>
  }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from shlo._mlir_compat import ir
from shlo.ir_templates import replace_with_template, signless_element
from shlo.ir_utils import ops_named, tensor_type_text
from shlo.pass_framework import Pass, PassError

SELECT = "select"
SCATTER = "scatter"


def _attribute_array(op: ir.Operation, name: str, default: list[int]) -> list[int]:
    if name not in op.attributes:
        return default
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _padding(op: ir.Operation, rank: int) -> list[list[int]]:
    if "padding" not in op.attributes:
        return [[0, 0] for _ in range(rank)]
    attr = ir.DenseIntElementsAttr(op.attributes["padding"])
    return np.array(attr).reshape(rank, 2).tolist()


def _template(
    operand: ir.RankedTensorType,
    source: ir.RankedTensorType,
    window: list[int],
    strides: list[int],
    low: list[int],
) -> str:
    """The text of ``@template(operand, source, init_value) -> result``."""
    element = operand.element_type
    storage = signless_element(element)
    # A 0-d select_and_scatter is computed as a 1-element 1-d one.
    shape = list(operand.shape) or [1]
    source_shape = list(source.shape) or [1]
    rank = len(shape)
    scalar = f"tensor<{element}>"
    stored_scalar = f"tensor<{storage}>"
    result = tensor_type_text(shape, storage)
    source_type = tensor_type_text(source_shape, storage)
    lines: list[str] = []
    emit = lines.append

    names = ["%arg0", "%arg1", "%arg2"]
    if storage != element:
        for i, (name, type_) in enumerate(zip(names, (str(operand), str(source), scalar))):
            stored = type_.replace(str(element), str(storage))
            emit(f'%b{i} = "stablehlo.bitcast_convert"({name}) : ({type_}) -> {stored}')
            names[i] = f"%b{i}"
    x, src, init = names
    if operand.rank == 0:
        for i, type_ in ((0, result), (1, source_type)):
            emit(f'%v{i} = "stablehlo.reshape"({names[i]}) : ({stored_scalar}) -> {type_}')
            names[i] = f"%v{i}"
        x, src, init = names
    emit(
        f'%init = "stablehlo.broadcast_in_dim"({init}) <{{broadcast_dimensions = array<i64>}}> : '
        f"({stored_scalar}) -> {result}"
    )
    emit("%c0 = arith.constant 0 : index")
    emit("%c1 = arith.constant 1 : index")
    emit("%false = arith.constant false")
    emit("%true = arith.constant true")
    for d in range(rank):
        emit(f"%size{d} = arith.constant {shape[d]} : index")
        emit(f"%windows{d} = arith.constant {source_shape[d]} : index")
        emit(f"%window{d} = arith.constant {window[d]} : index")
        emit(f"%stride{d} = arith.constant {strides[d]} : index")
        emit(f"%low{d} = arith.constant {low[d]} : index")

    def to_region(name: str, scalar_value: str) -> str:
        """A 0-d tensor of the regions' element type holding ``scalar_value``."""
        emit(f"%{name} = tensor.from_elements {scalar_value} : {stored_scalar}")
        if storage == element:
            return f"%{name}"
        emit(f'%{name}_c = "stablehlo.bitcast_convert"(%{name}) : ({stored_scalar}) -> {scalar}')
        return f"%{name}_c"

    # One loop per source dimension, carrying the result.
    for d in range(rank):
        carried = "%init" if d == 0 else f"%acc{d - 1}"
        emit(
            f"%out{d} = scf.for %w{d} = %c0 to %windows{d} step %c1 "
            f"iter_args(%acc{d} = {carried}) -> ({result}) {{"
        )
    acc = f"%acc{rank - 1}"
    index_types = ", ".join(["i1"] + ["index"] * rank)
    # One loop per window dimension, carrying (found one, its index).
    for d in range(rank):
        carried = ", ".join(
            [f"%have{d} = " + ("%false" if d == 0 else f"%have{d - 1}")]
            + [f"%sel{d}_{e} = " + ("%c0" if d == 0 else f"%sel{d - 1}_{e}") for e in range(rank)]
        )
        emit(
            f"%pick{d}:{rank + 1} = scf.for %k{d} = %c0 to %window{d} step %c1 "
            f"iter_args({carried}) -> ({index_types}) {{"
        )
    inner = rank - 1
    have = f"%have{inner}"
    current_selection = [f"%sel{inner}_{e}" for e in range(rank)]
    # The operand index of this window position, and whether it is in bounds.
    valid = "%true"
    for d in range(rank):
        emit(f"%base{d} = arith.muli %w{d}, %stride{d} : index")
        emit(f"%shifted{d} = arith.addi %base{d}, %k{d} : index")
        emit(f"%o{d} = arith.subi %shifted{d}, %low{d} : index")
        emit(f"%ge{d} = arith.cmpi sge, %o{d}, %c0 : index")
        emit(f"%lt{d} = arith.cmpi slt, %o{d}, %size{d} : index")
        emit(f"%in{d} = arith.andi %ge{d}, %lt{d} : i1")
        emit(f"%valid{d} = arith.andi {valid}, %in{d} : i1")
        valid = f"%valid{d}"
    position = ", ".join(f"%o{d}" for d in range(rank))
    emit(f"%step:{rank + 1} = scf.if {valid} -> ({index_types}) {{")
    emit(f"%current = tensor.extract {x}[{position}] : {result}")
    emit(f"%chosen:{rank} = scf.if {have} -> ({', '.join(['index'] * rank)}) {{")
    emit(f"%best = tensor.extract {x}[{', '.join(current_selection)}] : {result}")
    lhs = to_region("select_lhs", "%best")
    rhs = to_region("select_rhs", "%current")
    emit(f"%keep_t = func.call @{SELECT}({lhs}, {rhs}) : ({scalar}, {scalar}) -> tensor<i1>")
    emit("%keep = tensor.extract %keep_t[] : tensor<i1>")
    for d in range(rank):
        emit(f"%n{d} = arith.select %keep, {current_selection[d]}, %o{d} : index")
    emit(f"scf.yield {', '.join(f'%n{d}' for d in range(rank))} : {', '.join(['index'] * rank)}")
    emit("} else {")
    emit(f"scf.yield {position} : {', '.join(['index'] * rank)}")
    emit("}")
    chosen = ", ".join(f"%chosen#{d}" for d in range(rank))
    emit(f"scf.yield %true, {chosen} : {index_types}")
    emit("} else {")
    emit(f"scf.yield {have}, {', '.join(current_selection)} : {index_types}")
    emit("}")
    emit(f"scf.yield {', '.join(f'%step#{e}' for e in range(rank + 1))} : {index_types}")
    emit("}")
    for d in reversed(range(rank - 1)):
        emit(f"scf.yield {', '.join(f'%pick{d + 1}#{e}' for e in range(rank + 1))} : {index_types}")
        emit("}")
    # Scatter the source value onto the selected position.
    selection = ", ".join(f"%pick0#{e + 1}" for e in range(rank))
    sources = ", ".join(f"%w{d}" for d in range(rank))
    emit(f"%scattered = scf.if %pick0#0 -> ({result}) {{")
    emit(f"%source_e = tensor.extract {src}[{sources}] : {source_type}")
    emit(f"%old_e = tensor.extract {acc}[{selection}] : {result}")
    lhs = to_region("scatter_lhs", "%source_e")
    rhs = to_region("scatter_rhs", "%old_e")
    emit(f"%new_t = func.call @{SCATTER}({lhs}, {rhs}) : ({scalar}, {scalar}) -> {scalar}")
    new = "%new_t"
    if storage != element:
        emit(f'%new_s = "stablehlo.bitcast_convert"(%new_t) : ({scalar}) -> {stored_scalar}')
        new = "%new_s"
    emit(f"%new_e = tensor.extract {new}[] : {stored_scalar}")
    emit(f"%updated = tensor.insert %new_e into {acc}[{selection}] : {result}")
    emit(f"scf.yield %updated : {result}")
    emit("} else {")
    emit(f"scf.yield {acc} : {result}")
    emit("}")
    emit(f"scf.yield %scattered : {result}")
    emit("}")
    for d in reversed(range(rank - 1)):
        emit(f"scf.yield %out{d + 1} : {result}")
        emit("}")
    output = "%out0"
    if operand.rank == 0:
        emit(f'%scalar_out = "stablehlo.reshape"(%out0) : ({result}) -> {stored_scalar}')
        output = "%scalar_out"
    if storage != element:
        emit(
            f'%back = "stablehlo.bitcast_convert"({output}) : '
            f"({tensor_type_text(operand.shape, storage)}) -> {operand}"
        )
        output = "%back"
    body = "\n    ".join(lines)
    return (
        f"func.func private @{SELECT}({scalar}, {scalar}) -> tensor<i1>\n"
        f"func.func private @{SCATTER}({scalar}, {scalar}) -> {scalar}\n"
        f"func.func @template(%arg0: {operand}, %arg1: {source}, %arg2: {scalar}) -> {operand} {{\n"
        f"    {body}\n    return {output} : {operand}\n}}\n"
    )


def lower_select_and_scatter(op: ir.Operation) -> None:
    operand, source = (value.type for value in op.operands[:2])
    for type_ in (operand, source):
        if not isinstance(type_, ir.RankedTensorType) or not type_.has_static_shape:
            raise PassError(op.location, "expected statically shaped operand and source")
    rank = operand.rank
    scalar = ir.RankedTensorType.get([], operand.element_type)
    region_types = [
        [argument.type for argument in region.blocks[0].arguments] for region in op.regions
    ]
    if any(t != scalar for types in region_types for t in types) or op.results[0].type != operand:
        raise PassError(op.location, f"expected regions and result of element type {scalar}")
    window = _attribute_array(op, "window_dimensions", [1] * rank)
    strides = _attribute_array(op, "window_strides", [1] * rank)
    padding = _padding(op, rank)
    if rank == 0:
        window, strides, padding = [1], [1], [[0, 0]]
    text = _template(operand, source, window, strides, [low for low, _ in padding])
    replace_with_template(op, text, {SELECT: op.regions[0], SCATTER: op.regions[1]})


@dataclass(frozen=True)
class LowerSelectAndScatterPass(Pass):
    """Lower stablehlo.select_and_scatter to scf loops."""

    argument: ClassVar[str] = "shlo-lower-select-and-scatter"

    def run(self, module: ir.Operation) -> None:
        for op in reversed(ops_named(module, "stablehlo.select_and_scatter")):
            lower_select_and_scatter(op)
