"""shlo-scalar-loop-state: carry a while loop's 0-d tensors as scalars.

Ours because upstream is missing it: bufferization gives each 0-d tensor that
an ``scf.while`` carries a heap buffer, allocated in every iteration and
copied into the next one, because a loop may not yield the buffer it reads.
``lax.fori_loop`` and ``lax.while_loop`` carry their counter and their
scalar state that way: a loop of two int32 scalars made four allocations,
four frees and two copies per iteration (49 ns; XLA 1.1 ns). Carried as
scalars, the values cross iterations in registers, and the 0-d tensors
built from them inside the body are one-element buffers of one block, which
``shlo-forward-scalar-buffers`` turns into SSA values after bufferization.

  %r = scf.while (%i = %init) : (tensor<i32>) -> tensor<i32> {
    ...
    scf.condition(%c) %i : tensor<i32>
  } do {
  ^bb0(%i: tensor<i32>):
    %next = linalg.generic ... ins(%i : tensor<i32>) ... -> tensor<i32>
    scf.yield %next : tensor<i32>
  }
  ==>
  %s = tensor.extract %init[] : tensor<i32>
  %w = scf.while (%i_s = %s) : (i32) -> i32 {
    %i = tensor.from_elements %i_s : tensor<i32>
    ...
    %c_i = tensor.extract %i[] : tensor<i32>
    scf.condition(%c) %c_i : i32
  } do {
  ^bb0(%i_s: i32):
    %i = tensor.from_elements %i_s : tensor<i32>
    %next = linalg.generic ... ins(%i : tensor<i32>) ... -> tensor<i32>
    %next_s = tensor.extract %next[] : tensor<i32>
    scf.yield %next_s : i32
  }
  %r = tensor.from_elements %w : tensor<i32>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.ir_utils import create_value, ops_named
from shlo.pass_framework import Pass


def _is_scalar_tensor(type_: ir.Type) -> bool:
    """A 0-d tensor of integers or floats."""
    return (
        isinstance(type_, ir.RankedTensorType)
        and type_.rank == 0
        and isinstance(type_.element_type, ir.IntegerType | ir.FloatType)
    )


def _extract(value: ir.Value) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    return create_value("tensor.extract", [value], element)


def _as_tensor_in(block: ir.Block, argument: ir.BlockArgument) -> None:
    """Make ``argument`` a scalar, rebuilt as the 0-d tensor its users take at the block's start."""
    tensor = argument.type
    argument.set_type(ir.RankedTensorType(tensor).element_type)
    with ir.InsertionPoint.at_block_begin(block), block.owner.location:
        rebuilt = create_value("tensor.from_elements", [argument], tensor)
    argument.replace_all_uses_except(rebuilt, rebuilt.owner.operation)


def _extract_operands(op: ir.Operation, positions: list[int]) -> None:
    """Replace ``op``'s operands at ``positions`` (0-d tensors) by their element."""
    with ir.InsertionPoint(op), op.location:
        for position in positions:
            op.operands[position] = _extract(op.operands[position])


def _scalarize(loop: ir.Operation) -> None:
    before, after = loop.regions[0].blocks[0], loop.regions[1].blocks[0]
    carried = [i for i, arg in enumerate(before.arguments) if _is_scalar_tensor(arg.type)]
    forwarded = [i for i, arg in enumerate(after.arguments) if _is_scalar_tensor(arg.type)]
    if not carried and not forwarded:
        return
    condition = list(before.operations)[-1]
    yield_ = list(after.operations)[-1]
    for i in carried:
        _as_tensor_in(before, before.arguments[i])
    for i in forwarded:
        _as_tensor_in(after, after.arguments[i])
    _extract_operands(loop, carried)
    _extract_operands(yield_, carried)
    # scf.condition's first operand is the condition; the forwarded values follow.
    _extract_operands(condition, [i + 1 for i in forwarded])
    with ir.InsertionPoint.after(loop), loop.location:
        for i in reversed(forwarded):
            result = loop.results[i]
            tensor = result.type
            result.set_type(ir.RankedTensorType(tensor).element_type)
            rebuilt = create_value("tensor.from_elements", [result], tensor)
            result.replace_all_uses_except(rebuilt, rebuilt.owner.operation)


@dataclass(frozen=True)
class ScalarLoopStatePass(Pass):
    """Carry the 0-d tensors of scf.while loops as scalars, before bufferization."""

    argument: ClassVar[str] = "shlo-scalar-loop-state"

    def run(self, module: ir.Operation) -> None:
        for loop in ops_named(module, "scf.while"):
            _scalarize(loop)
