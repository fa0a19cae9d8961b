"""shlo-hoist-loop-invariants: compute a while loop's invariant values once, before the loop.

Ours because upstream is missing it: ``stablehlo.while`` is not a
``LoopLikeOpInterface`` op, so ``loop-invariant-code-motion`` leaves it
alone, and the wheel has no ``stablehlo-aggressive-simplification`` (whose
while pattern turns unchanged carries into implicit captures). jax carries
every value a loop body reads as an operand that the body returns
unchanged, so nothing in a body looks invariant. Transformers' generation
loops transpose each weight matrix in every decoding step that way: GPT-2's
``generate`` spent half of its time in those transposes.

First, a carried value that the body returns unchanged is the loop's
initial value in every iteration: its uses in both regions and after the
loop read that initial value, and the carry is dropped. Then each op of the
body whose operands are all defined outside the loop moves before it, in
order, as XLA's while-loop-invariant-code-motion does. Only ops known to be
pure move (a random number must stay in the loop), and only those whose
result is no larger than their operands: a broadcast hoisted out would be
materialized and read in every iteration instead of fused into its users.
Ops with regions stay. Nested loops are done inside out, so an invariant of
an inner loop can leave the outer one too.

  %r:2 = stablehlo.while(%i = %c0, %w2 = %w) : tensor<i32>, tensor<4x8xf32>
  cond { ... %i ... }
  do {
    %t = stablehlo.transpose %w2, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    ...
    stablehlo.return %next, %w2 : tensor<i32>, tensor<4x8xf32>
  }
  ==>
  %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %r = stablehlo.while(%i = %c0) : tensor<i32>
  cond { ... %i ... }
  do {
    ...
    stablehlo.return %next : tensor<i32>
  }
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from shlo._mlir_compat import ir
from shlo.frontend import array_bytes
from shlo.ir_utils import defining_op, ops_named
from shlo.pass_framework import Pass
from shlo.passes.decompose.lower_control_flow import move_body

# Ops without regions or side effects whose result depends only on their
# operands. Not here: rng and custom calls (they may differ per call),
# collectives, tokens, ops with regions, and constants and iotas (below).
PURE_OPS = frozenset(
    "stablehlo." + name
    for name in (
        "abs add and atan2 bitcast_convert broadcast_in_dim cbrt ceil clamp compare complex"
        " concatenate convert convolution cosine count_leading_zeros divide dot"
        " dot_general dynamic_slice dynamic_update_slice exponential exponential_minus_one"
        " floor gather imag is_finite log log_plus_one logistic maximum minimum multiply"
        " negate not or pad popcnt power real reduce_precision remainder reshape reverse"
        " round_nearest_afz round_nearest_even rsqrt select shift_left shift_right_arithmetic"
        " shift_right_logical sign sine slice sqrt subtract tan tanh transpose xor"
    ).split()
)
# Cheap to compute again: copied out of the loop for the ops that move, kept
# in it for the others (a broadcast there fuses into its users).
REPLICABLE = frozenset(("stablehlo.broadcast_in_dim", "stablehlo.constant", "stablehlo.iota"))


def _drop_unchanged_carries(loop: ir.Operation) -> ir.Operation:
    """``loop`` without the carried values its body returns unchanged (a new op if any)."""
    body = loop.regions[1].blocks[0]
    returned = list(body.operations)[-1].operands
    inits = list(loop.operands)
    unchanged = {i for i, argument in enumerate(body.arguments) if returned[i] == argument}
    if not unchanged:
        return loop
    kept = [i for i in range(len(inits)) if i not in unchanged]
    types = [inits[i].type for i in kept]
    new = ir.Operation.create(
        "stablehlo.while",
        results=types,
        operands=[inits[i] for i in kept],
        attributes={named.name: named.attr for named in loop.attributes},
        regions=2,
        loc=loop.location,
        ip=ir.InsertionPoint(loop),
    )
    for old_region, new_region in zip(loop.regions, new.regions):
        block = new_region.blocks.append(*types, arg_locs=[loop.location] * len(types))
        arguments = iter(block.arguments)
        values = [inits[i] if i in unchanged else next(arguments) for i in range(len(inits))]
        terminator = move_body(old_region.blocks[0], block, values)
    # The body's return, moved last, yields only the kept values now.
    ir.Operation.create(
        "stablehlo.return",
        operands=[terminator.operands[i] for i in kept],
        loc=terminator.location,
        ip=ir.InsertionPoint(terminator),
    )
    terminator.erase()
    results = iter(new.results)
    for i, result in enumerate(loop.results):
        result.replace_all_uses_with(inits[i] if i in unchanged else next(results))
    loop.erase()
    return new


class _Hoister:
    """Moves the invariant ops of one loop's body before the loop."""

    def __init__(self, loop: ir.Operation) -> None:
        self.loop = loop
        self.body = loop.regions[1].blocks[0]
        self.copies: dict[ir.Value, ir.Value] = {}  # body value -> its copy before the loop

    def replicable(self, value: ir.Value) -> bool:
        """A body constant, iota or broadcast of invariants: copied out for the ops that move."""
        owner = defining_op(value)
        return (
            owner is not None
            and owner.parent == self.loop
            and owner.name in REPLICABLE
            and all(self.invariant(operand) for operand in owner.operands)
        )

    def invariant(self, value: ir.Value) -> bool:
        owner = defining_op(value)
        if owner is None:
            return ir.BlockArgument(value).owner != self.body
        return owner.parent != self.loop or self.replicable(value)  # or moved already

    def source_bytes(self, value: ir.Value) -> int | None:
        """The bytes a value is made from: through replicable ops, what they read."""
        if not self.replicable(value):
            return array_bytes(value.type)
        owner = defining_op(value)
        if owner.name == "stablehlo.constant":
            data = owner.attributes["value"].maybe_downcast()
            whole = array_bytes(value.type)
            splat = isinstance(data, ir.DenseElementsAttr) and data.is_splat and len(data) > 0
            return whole // len(data) if splat and whole is not None else whole
        return self._sum(self.source_bytes(operand) for operand in owner.operands)

    @staticmethod
    def _sum(sizes: Iterable[int | None]) -> int | None:
        values = list(sizes)
        return None if None in values else sum(values)

    def worth_moving(self, op: ir.Operation) -> bool:
        """Pure, with invariant operands, and no larger than what it reads."""
        if op.name not in PURE_OPS or not all(self.invariant(v) for v in op.operands):
            return False
        results = self._sum(array_bytes(value.type) for value in op.results)
        operands = self._sum(self.source_bytes(value) for value in op.operands)
        return results is not None and operands is not None and results <= operands

    def outside(self, value: ir.Value) -> ir.Value:
        """``value``, or for a replicable body value its copy before the loop."""
        if not self.replicable(value):
            return value
        if value not in self.copies:
            owner = defining_op(value)
            copy = owner.clone(ir.InsertionPoint(self.loop))
            for i, operand in enumerate(owner.operands):
                copy.operands[i] = self.outside(operand)
            self.copies[value] = copy.results[ir.OpResult(value).result_number]
        return self.copies[value]

    def run(self) -> None:
        for op in list(self.body.operations)[:-1]:
            if self.worth_moving(op):
                for i, operand in enumerate(op.operands):
                    op.operands[i] = self.outside(operand)
                op.move_before(self.loop)
        for value in reversed(self.copies):  # originals nothing reads any more, users first
            if not list(value.uses):
                defining_op(value).erase()


@dataclass(frozen=True)
class HoistLoopInvariantsPass(Pass):
    """Compute a while loop's invariant values once, before the loop."""

    argument: ClassVar[str] = "shlo-hoist-loop-invariants"

    def run(self, module: ir.Operation) -> None:
        # Pre-order reversed: a loop's nested loops come before it.
        for loop in reversed(ops_named(module, "stablehlo.while")):
            _Hoister(_drop_unchanged_carries(loop)).run()
