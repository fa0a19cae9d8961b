"""shlo-store-booleans-as-bytes: a boolean array passed between kernels is stored as i8.

Ours because upstream is missing it. A memref of i1 holds a byte per element,
but a vector of i1 is packed bits, so a vector read or write of an i1 buffer
would move the wrong bytes, and ``shlo-plan-vector-codegen`` leaves every op
that touches one as scalar loops. Masks made once and read by several
kernels are such buffers: jax's LU (``lu_factor``, ``solve``, ``inv``)
compares row numbers with the step into masks that two panel updates read;
its 256 x 32 panel update ran as scalar loops (now vector code, but no
faster: its compares of i64 row and column numbers dominate, and the LU of
256 takes 2.24 ms either way). A mask broadcast into two ``jnp.where`` over
[4096, 256]: 0.42 -> 0.28 ms (XLA 1.98).

Where every user of an elementwise op's i1 result is a linalg.generic input,
the op now writes ``extui`` of the value into an i8 array, and each user
reads the byte and truncates it back (0 and 1 both ways). Both ops are then
vectorized. An i1 that a function takes or returns keeps its type (the
caller's numpy bools).

  %m = linalg.generic ... outs(%e : tensor<256xi1>) { ... linalg.yield %c : i1 }
  %r = linalg.generic ... ins(%m, %x : tensor<256xi1>, ...) { ^bb0(%b: i1, ...): ... }
  ==>
  %m = linalg.generic ... outs(%e8 : tensor<256xi8>) {
    ... %w = arith.extui %c : i1 to i8  linalg.yield %w : i8 }
  %r = linalg.generic ... ins(%m, %x : tensor<256xi8>, ...) {
    ^bb0(%byte: i8, ...): %b = arith.trunci %byte : i8 to i1 ... }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import arith, ir, tensor
from shlo.ir_utils import linalg_generic_parts, ops_named, rebuild_generic
from shlo.pass_framework import Pass


def _is_bool_tensor(type_: ir.Type) -> bool:
    return isinstance(type_, ir.RankedTensorType) and str(type_.element_type) == "i1"


def _read_by_generics_only(value: ir.Value) -> bool:
    """Whether every use of ``value`` is an input of a linalg.generic."""
    uses = list(value.uses)
    for use in uses:
        user = use.owner
        if user.name != "linalg.generic":
            return False
        inputs = ir.DenseI32ArrayAttr(user.attributes["operandSegmentSizes"])[0]
        if use.operand_number >= inputs:
            return False
    return bool(uses)


def _widen_results(op: ir.Operation, indices: list[int]) -> ir.Operation:
    """Rebuild ``op`` with its results ``indices`` written as i8 into fresh arrays."""
    parts = linalg_generic_parts(op)
    byte = ir.IntegerType.get_signless(8)
    outputs = []
    with op.location, ir.InsertionPoint(op):
        for index, (init, map_) in enumerate(zip(parts.outputs, parts.output_map_attrs)):
            if index in indices:
                shape = list(ir.RankedTensorType(init.type).shape)
                init = tensor.empty(shape, byte)
            outputs.append((init, map_))
    yield_op = list(op.regions[0].blocks[0].operations)[-1]
    with yield_op.location, ir.InsertionPoint(yield_op):
        for index in indices:
            yield_op.operands[index] = arith.extui(byte, yield_op.operands[index])
    return rebuild_generic(
        op,
        list(zip(parts.inputs, parts.input_map_attrs)),
        outputs,
        [[arg] for arg in parts.input_args] + [[arg] for arg in parts.output_args],
    )


def _read_bytes(op: ir.Operation) -> None:
    """Rebuild ``op``, a linalg.generic whose i1 block arguments now take i8 inputs, with
    each such byte truncated back to i1."""
    parts = linalg_generic_parts(op)
    widened = [
        index
        for index, (operand, argument) in enumerate(zip(parts.inputs, parts.input_args))
        if str(argument.type) == "i1" and str(operand.type.element_type) == "i8"
    ]
    new = rebuild_generic(
        op,
        list(zip(parts.inputs, parts.input_map_attrs)),
        list(zip(parts.outputs, parts.output_map_attrs)),
        [[arg] for arg in [*parts.input_args, *parts.output_args]],
    )
    block = new.regions[0].blocks[0]
    bit = ir.IntegerType.get_signless(1)
    for index in widened:
        argument = block.arguments[index]
        with new.location, ir.InsertionPoint.at_block_begin(block):
            truncated = arith.trunci(bit, argument)
        argument.replace_all_uses_with(truncated)
        truncated.owner.operands[0] = argument


def _bool_results(op: ir.Operation) -> list[int]:
    """The i1 results of an all-parallel linalg.generic that only generics read, and that
    its body does not read the init of."""
    if not any(_is_bool_tensor(result.type) for result in op.results):
        return []  # most generics: checked before the parts, which cost more
    parts = linalg_generic_parts(op)
    if not parts.all_parallel:
        return []
    return [
        index
        for index, result in enumerate(op.results)
        if _is_bool_tensor(result.type)
        and not list(parts.output_args[index].uses)
        and _read_by_generics_only(result)
    ]


@dataclass(frozen=True)
class StoreBooleansAsBytesPass(Pass):
    """Pass i1 arrays between linalg.generic ops as i8, so both vectorize."""

    argument: ClassVar[str] = "shlo-store-booleans-as-bytes"

    def run(self, module: ir.Operation) -> None:
        # Producers first, so that every reader sees its input's new type;
        # then each reader once (one may read several such arrays).
        widened: list[ir.Value] = []
        for op in ops_named(module, "linalg.generic"):
            indices = _bool_results(op) if op.results else []
            if indices:
                new = _widen_results(op, indices)
                widened += [new.results[index] for index in indices]
        readers: list[ir.Operation] = []
        for value in widened:
            for use in value.uses:
                if use.owner.operation not in readers:
                    readers.append(use.owner.operation)
        for reader in readers:
            _read_bytes(reader)
